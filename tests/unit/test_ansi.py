"""The ANSI decoder: SGR colours kept, every other escape dropped, carriage returns, UTF-8."""

import json
import random
import re
import time

import pytest

from workbench.ansi import (
    BASIC_COLOURS,
    PLAIN,
    AnsiDecoder,
    Piece,
    Style,
    _cached_sgr,
    apply_sgr,
    json_safe,
    reveal_bidi,
)

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but newline and tab


def _text(pieces: list[Piece]) -> str:
    return "".join("⟲" if p.rewrite else p.text for p in pieces)


def test_sgr_colours_are_kept_on_the_text_they_cover() -> None:
    pieces = AnsiDecoder().feed(b"a\x1b[1;31mred\x1b[0mb")
    assert pieces == [
        Piece("a", PLAIN),
        Piece("red", Style(fg=BASIC_COLOURS[1], bold=True)),
        Piece("b", PLAIN),
    ]


def test_text_of_one_style_is_one_piece_whatever_escapes_it_held() -> None:
    line = b"\x1b[32mflood\x1b[0m \x1b[2Jdone\r\n"  # an SGR, a screen clear, CRLF: one style
    assert AnsiDecoder().feed(line * 3, colour=False) == [Piece("flood done\n" * 3, PLAIN)]
    green = Style(fg=BASIC_COLOURS[2])
    pieces = AnsiDecoder().feed(b"\x1b[32ma\x1b[32mb\x1b[1m\x1b[22mc\x1b[0md")
    assert pieces == [Piece("abc", green), Piece("d", PLAIN)]


def test_256_and_true_colour_and_resets() -> None:
    style = apply_sgr(PLAIN, "38;5;196;48;2;1;2;3;4")
    assert style == Style(fg="#ff0000", bg="#010203", underline=True)
    assert apply_sgr(style, "39;24") == Style(bg="#010203")
    assert apply_sgr(style, "") == PLAIN
    assert apply_sgr(style, "38;5") == style  # incomplete: ignored, no crash


def test_osc_titles_clipboard_and_hyperlinks_are_dropped_with_their_payload() -> None:
    data = (
        b"\x1b]0;evil title\x07"
        b"\x1b]52;c;cm0gLXJmIH4=\x1b\\"
        b"\x1b]8;;https://x.example\x07link\x1b]8;;\x07"
        b"\x1bPdevice control\x1b\\"
        b"\xc2\x9d8;;c1-osc\xc2\x9c"
        b"done"
    )
    assert _text(AnsiDecoder().feed(data)) == "linkdone"


def test_cursor_moves_and_other_controls_are_dropped() -> None:
    data = b"\x1b[2J\x1b[Hhome\x1b[10;5Hx\x1b[?25l\x1b(B\x1b7\x07\x08\tok\n"
    assert _text(AnsiDecoder().feed(data)) == "homex\tok\n"


def test_carriage_return_rewrites_the_line_but_crlf_is_a_newline() -> None:
    decoder = AnsiDecoder()
    assert _text(decoder.feed(b"10%\r20%\r\ndone\r\n")) == "10%⟲20%\ndone\n"


def test_a_carriage_return_at_a_chunk_end_waits_for_a_possible_newline() -> None:
    decoder = AnsiDecoder()
    assert _text(decoder.feed(b"line\r")) == "line"
    assert _text(decoder.feed(b"\nnext\r")) == "\nnext"
    assert _text(decoder.feed(b"over")) == "⟲over"
    assert _text(decoder.feed(b"end\r")) == "end"
    assert _text(decoder.flush()) == "⟲"


def test_escapes_split_across_chunks_are_completed_by_the_next_chunk() -> None:
    decoder = AnsiDecoder()
    first = decoder.feed(b"a\x1b[3")
    second = decoder.feed(b"2mgreen\x1b]0;ti")
    third = decoder.feed(b"tle\x07z")
    assert _text(first) == "a"
    assert second == [Piece("green", Style(fg=BASIC_COLOURS[2]))]
    assert _text(third) == "z"


def test_invalid_and_split_utf8_is_safe() -> None:
    decoder = AnsiDecoder()
    euro = "€".encode()
    assert _text(decoder.feed(b"bad \xff\xfe " + euro[:1])) == "bad \ufffd\ufffd "
    assert _text(decoder.feed(euro[1:] + b"!")) == "€!"
    assert _text(decoder.feed(b"\xe2\x82")) == ""
    assert _text(decoder.flush()) == "\ufffd"


def test_an_escape_string_that_never_ends_does_not_grow_without_bound() -> None:
    decoder = AnsiDecoder()
    decoder.feed(b"\x1b]52;c;")
    for _ in range(40):
        assert _text(decoder.feed(b"A" * 10_000)) == ""
    assert _text(decoder.feed(b"\x07visible")) == "visible"


def test_plain_mode_drops_colours_but_remembers_them() -> None:
    decoder = AnsiDecoder()
    assert decoder.feed(b"\x1b[31mred", colour=False) == [Piece("red", PLAIN)]
    assert decoder.feed(b"still") == [Piece("still", Style(fg=BASIC_COLOURS[1]))]


def test_html_looking_text_is_just_text() -> None:
    assert _text(AnsiDecoder().feed(b"<b>bold</b> &amp;")) == "<b>bold</b> &amp;"


def test_bidi_controls_are_shown_as_markers_not_obeyed() -> None:
    data = "RTL override: evil\u202etxt.exe \u2066isolate\u2069 \u200fmark".encode()
    assert _text(AnsiDecoder().feed(data)) == (
        "RTL override: evil⟨U+202E⟩txt.exe ⟨U+2066⟩isolate⟨U+2069⟩ ⟨U+200F⟩mark"
    )
    assert reveal_bidi("plain עברית text") == "plain עברית text"  # RTL script itself is fine


def test_json_safe_escapes_what_json_leaves_raw_and_keeps_the_data() -> None:
    value = {"text": "a\x1b[2J \x9b31m \x7f \u202e ok é"}
    document = json_safe(json.dumps(value, ensure_ascii=False))
    assert not any(c in document for c in "\x1b\x9b\x7f\u202e")
    assert "é" in document
    assert json.loads(document) == value


def test_no_control_character_ever_reaches_the_text() -> None:
    # an ESC that starts no sequence used to stay, so the ones after it reached a terminal
    for hostile in (b"\x1b\x1b[0m]0;pwned title\x1b\x1b[0m\\after\n", b"\x1b\x1b[m[2J"):
        assert not CONTROL.search(_text(AnsiDecoder().feed(hostile)))
    fragments = [
        *(b"\x1b", b"[", b"]", b"P", b"\\", b"\x07", b"\r", b"\n", b"\t", b";", b"m", b"2", b"a"),
        *(b"\xc2\x9b", b"\xc2\x90", b"\xc2\x9c", b"\x00", b"\x7f", b"\xff"),
    ]
    rnd = random.Random(7)
    for _ in range(2000):
        decoder, shown = AnsiDecoder(), ""
        for _ in range(rnd.randint(1, 4)):
            chunk = b"".join(rnd.choice(fragments) for _ in range(rnd.randint(0, 40)))
            shown += _text(decoder.feed(chunk, colour=rnd.random() < 0.5))
        shown += _text(decoder.flush())
        assert not CONTROL.search(shown), shown


def test_an_sgr_code_of_thousands_of_digits_changes_nothing() -> None:
    red = Style(fg=BASIC_COLOURS[1])
    assert apply_sgr(red, "9" * 4301) == red  # int() refuses it: the decoder used to raise
    assert AnsiDecoder().feed(b"a\x1b[" + b"9" * 4301 + b"mb") == [Piece("ab", PLAIN)]


def test_long_sgr_parameters_are_never_kept_in_the_cache() -> None:
    kept = _cached_sgr.cache_info().currsize
    for n in range(50):
        apply_sgr(PLAIN, ";".join(["1"] * 40 + [str(n)]))
    assert _cached_sgr.cache_info().currsize == kept


@pytest.mark.timing
@pytest.mark.parametrize(
    "hostile",
    [b"\r" * 65536 + b"x", "\x90".encode() * 32768 + b"\x1bx", b"\x1b]" * 32768 + b"\x1bx"],
    ids=["carriage returns", "C1 string introducers", "unended OSC strings"],
)
def test_a_hostile_run_of_64_kib_is_read_in_under_a_second(hostile: bytes) -> None:
    started = time.monotonic()
    AnsiDecoder().feed(hostile)  # at once, as `workbench run` and the log viewer may
    assert time.monotonic() - started < 1.0  # milliseconds; quadratic, it took seconds
