"""Terminal output made safe to show: SGR colours kept, every other escape sequence dropped.

`AnsiDecoder` turns one stream's bytes, chunk by chunk, into `Piece`s of text with a `Style`.
It keeps only SGR (colours, bold, italic, underline); OSC (titles, clipboard writes through
OSC 52, hyperlinks), DCS/SOS/PM/APC strings, cursor moves and every other CSI or escape are
dropped, and so are C0/C1 control characters other than newline and tab. Unicode bidi
controls, which would reorder what is shown ("evil\\u202etxt.exe"), are shown as visible
markers such as `⟨U+202E⟩` (`reveal_bidi`). Carriage returns not followed by a newline become
a `rewrite` piece (a terminal goes back to the line start; the GUI starts a new line, so no
text is hidden); `\\r\\n` is a plain newline. Text of one style is one piece. Invalid UTF-8
becomes U+FFFD, and sequences split across chunks are completed by the next chunk. Every pattern
reads its input in linear time (a skill's output is hostile). Qt-free: the GUI shows its pieces
with colour, and `workbench run` writes them as plain text to a terminal. `json_safe` makes a
JSON document safe to print: it escapes what `json` leaves raw (C1 controls, DEL, bidi controls).
"""

import codecs
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

MAX_PENDING = 64 * 1024  # an unterminated escape string longer than this is dropped
MAX_CODE_DIGITS = 5  # an SGR code longer than this is no code (int() refuses 4,300 digits)
MAX_CACHED_PARAMS = 64  # longer SGR parameters are parsed each time, never kept

# Bidi controls: embeddings, overrides, isolates and the invisible direction marks.
_BIDI_CHARS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_BIDI = re.compile(f"[{_BIDI_CHARS}]")
# What `json.dumps(..., ensure_ascii=False)` leaves raw but a terminal would act on.
_JSON_RAW = re.compile(f"[\x7f-\x9f{_BIDI_CHARS}]")

# The 16 basic colours (xterm's defaults, a little softened to read on light and dark).
BASIC_COLOURS = (
    "#3b3b3b", "#cd3131", "#0dbc79", "#b59a00", "#2472c8", "#bc3fbc", "#11a8cd", "#a0a0a0",
    "#767676", "#f14c4c", "#23d18b", "#d7ba3d", "#3b8eea", "#d670d6", "#29b8db", "#e5e5e5",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Style:
    """How a piece of text looks; colours are `#rrggbb` strings, None for the default."""

    fg: str | None = None
    bg: str | None = None
    bold: bool = False
    italic: bool = False
    underline: bool = False


PLAIN = Style()


@dataclass(frozen=True, slots=True)
class Piece:
    """Text to append in `style`, or (`rewrite`) an order to clear the current line first."""

    text: str
    style: Style = PLAIN
    rewrite: bool = False


# What an escape string (OSC, DCS, SOS, PM, APC) holds: it ends at BEL, ST or ESC, and at
# the next C1 string introducer, so a run of introducers without an end is read once, not once
# from each of them.
_STRING_BODY = r"[^\x07\x1b\x9c\x90\x98\x9d\x9e\x9f]*"
# Control characters, dropped (newline and tab are text); every token starts with one.
_CONTROL = r"[\x00-\x08\x0b-\x1f\x7f-\x9f]"
_TOKEN = re.compile(
    r"(?P<csi>(?:\x1b\[|\x9b)(?P<params>[0-?]*)[ -/]*(?P<final>[@-~]))"
    rf"|(?P<string>(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f]){_STRING_BODY}(?:\x07|\x1b\\|\x9c))"
    r"|(?P<esc>\x1b[ -/]*[0-~])"
    r"|(?P<cr>\r+)(?P<crlf>\n)?"  # a run of CRs is one token: read once, not from each
    rf"|(?P<control>{_CONTROL})"  # an ESC that starts nothing above is dropped alone
)
_TOKEN_START = re.compile(_CONTROL)
# An escape that may still be completed by the next chunk: held back until it is.
_INCOMPLETE = re.compile(
    rf"(?:\x1b(?:\[[0-?]*[ -/]*|[\]PX^_]{_STRING_BODY}\x1b?|[ -/]*)?"
    rf"|\x9b[0-?]*[ -/]*|[\x90\x98\x9d\x9e\x9f]{_STRING_BODY}\x1b?|\r)\Z"
)


class AnsiDecoder:
    """Decodes one output stream (keep one per stream: styles do not cross streams)."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._held = ""
        self.style = PLAIN

    def feed(self, data: bytes, *, colour: bool = True) -> list[Piece]:
        """The pieces `data` adds; with `colour` False, SGR is dropped too (plain text)."""
        return self._parse(self._held + self._utf8.decode(data), colour)

    def flush(self) -> list[Piece]:
        """What is still held back at the end of the stream; an incomplete escape is dropped."""
        tail = self._held + self._utf8.decode(b"", final=True)
        self._held = ""
        if tail.startswith("\r"):
            return [Piece("", self.style, rewrite=True)]
        return [] if tail.startswith(_INTRODUCERS) else self._parse(tail, True)

    def _parse(self, text: str, colour: bool) -> list[Piece]:
        held = _INCOMPLETE.search(text)
        if held is not None and held.start() < len(text):
            self._held = text[held.start() :]
            text = text[: held.start()]
            if len(self._held) > MAX_PENDING:  # an escape that never ends: drop what it holds
                self._held = _string_introducer(self._held)
        else:
            self._held = ""
        pieces = _Pieces()
        shown = self.style if colour else PLAIN
        start = 0
        for match in _tokens(text):
            kind = match.lastgroup
            if match.start() > start:
                pieces.add(text[start : match.start()], shown)
            start = match.end()
            if kind == "crlf":
                pieces.add("\n", shown)
            elif kind == "cr":
                pieces.rewrite(shown)
            elif kind == "csi" and match.group("final") == "m":
                self.style = apply_sgr(self.style, match.group("params"))
                shown = self.style if colour else PLAIN
        if start < len(text):
            pieces.add(text[start:], shown)
        return pieces.done()


class _Pieces:
    """Pieces being made: text of one style is joined into one piece (one insert to show)."""

    def __init__(self) -> None:
        self._pieces: list[Piece] = []
        self._run: list[str] = []
        self._style = PLAIN

    def add(self, text: str, style: Style) -> None:
        if style != self._style:
            self._close()
            self._style = style
        self._run.append(text)

    def rewrite(self, style: Style) -> None:
        self._close()
        self._pieces.append(Piece("", style, rewrite=True))

    def done(self) -> list[Piece]:
        self._close()
        return self._pieces

    def _close(self) -> None:
        if self._run:
            self._pieces.append(Piece(reveal_bidi("".join(self._run)), self._style))
            self._run.clear()


def _tokens(text: str) -> Iterator[re.Match[str]]:
    """The escapes, controls and carriage returns in `text`, in order: what `_TOKEN.finditer`
    finds, but past plain text a search for one character class finds where the next token
    starts (`finditer` tries every alternative at every character)."""
    position = 0
    while True:
        match = _TOKEN.match(text, position)
        if match is None:
            found = _TOKEN_START.search(text, position)
            if found is None:
                return
            match = _TOKEN.match(text, found.start())  # every control character is a token
            assert match is not None
        yield match
        position = match.end()


def reveal_bidi(text: str) -> str:
    """`text` with every bidi control shown as a marker (`⟨U+202E⟩`) instead of obeyed."""
    return _BIDI.sub(lambda m: f"⟨U+{ord(m.group()):04X}⟩", text)


def json_safe(document: str) -> str:
    """A JSON document with C1 controls, DEL and bidi controls escaped as `\\uXXXX`: the
    same data, but nothing in it acts on a terminal. (They only occur inside strings.)"""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


_INTRODUCERS = ("\x1b", "\x9b", "\x90", "\x98", "\x9d", "\x9e", "\x9f")


def _string_introducer(held: str) -> str:
    """The introducer of an escape *string* (OSC, DCS, ...) that `held` starts, else ''."""
    if held[:1] == "\x1b" and held[1:2] in ("]", "P", "X", "^", "_"):
        return held[:2]
    return held[:1] if held[:1] in _INTRODUCERS[2:] else ""


def apply_sgr(style: Style, params: str) -> Style:
    """`style` after one SGR sequence's parameters (e.g. `1;31`, `38;5;208`, `0`); a sequence
    with a code of more than `MAX_CODE_DIGITS` digits changes nothing."""
    if len(params) > MAX_CACHED_PARAMS:
        return _apply_sgr(style, params)
    return _cached_sgr(style, params)


def _apply_sgr(style: Style, params: str) -> Style:
    if not params.replace(";", "").isdigit():
        return PLAIN if params.strip(";") == "" else style
    if any(len(code) > MAX_CODE_DIGITS for code in params.split(";")):
        return style
    codes = [int(code) if code else 0 for code in params.split(";")]
    i = 0
    while i < len(codes):
        code = codes[i]
        if code == 0:
            style = PLAIN
        elif code in (1, 22):
            style = replace(style, bold=code == 1)
        elif code in (3, 23):
            style = replace(style, italic=code == 3)
        elif code in (4, 24):
            style = replace(style, underline=code == 4)
        elif 30 <= code <= 37 or 90 <= code <= 97:
            style = replace(style, fg=BASIC_COLOURS[code % 10 + (8 if code >= 90 else 0)])
        elif 40 <= code <= 47 or 100 <= code <= 107:
            style = replace(style, bg=BASIC_COLOURS[code % 10 + (8 if code >= 100 else 0)])
        elif code == 39:
            style = replace(style, fg=None)
        elif code == 49:
            style = replace(style, bg=None)
        elif code in (38, 48):
            colour, used = _extended_colour(codes[i + 1 :])
            i += used
            if colour is not None and code == 38:
                style = replace(style, fg=colour)
            elif colour is not None:
                style = replace(style, bg=colour)
        i += 1
    return style


_cached_sgr = functools.lru_cache(maxsize=1024)(_apply_sgr)  # the same few sequences recur


def _extended_colour(rest: list[int]) -> tuple[str | None, int]:
    """A 256-colour (`5;n`) or true-colour (`2;r;g;b`) argument and how many codes it used."""
    if rest[:1] == [5] and len(rest) >= 2:
        return _colour_256(rest[1]), 2
    if rest[:1] == [2] and len(rest) >= 4:
        r, g, b = (min(max(v, 0), 255) for v in rest[1:4])
        return f"#{r:02x}{g:02x}{b:02x}", 4
    return None, len(rest)


def _colour_256(n: int) -> str | None:
    if not 0 <= n <= 255:
        return None
    if n < 16:
        return BASIC_COLOURS[n]
    if n >= 232:
        level = 8 + (n - 232) * 10
        return f"#{level:02x}{level:02x}{level:02x}"
    n -= 16
    steps = [0 if v == 0 else 55 + v * 40 for v in (n // 36, n // 6 % 6, n % 6)]
    return "#{:02x}{:02x}{:02x}".format(*steps)
