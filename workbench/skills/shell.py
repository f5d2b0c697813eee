"""Shell scripts read as a shell reads them: simple commands, their words and redirections.

`parse(text)` splits a script into `Command`s the way a POSIX shell finds them, without running
anything. Quotes group a word and are removed (a word that had quotes is marked `quoted`, so a
quoted string is never taken for a command name); `\\`-newline continues a line; comments and
heredoc bodies are not commands (a heredoc's body is kept as the command's `stdin`, for
`python3 <<EOF`); `;`, `&`, `|`, `&&`, `||`, newlines and parentheses end a command, and one
ended by `&` runs in the `background`; the keywords (`if`, `then`, `do`, `!`, `{`, ...) and
`case` patterns are skipped, `for` and `[[ ]]` lines are not commands, `name() {` defines a
function; `$(...)` and backquotes hold commands of their own, found too. Expansions stay in
the words as written (`$1`, `${name}`), and `expand()` replaces those it knows: positional
parameters from the command line and variables the script set to a known value. Reading is
bounded: at most `MAX_COMMANDS` commands, nested substitutions `MAX_DEPTH` deep.
"""

import re
from dataclasses import dataclass, field

MAX_COMMANDS = 5000
MAX_DEPTH = 8
OPERATORS = ("&&", "||", ";;", "<<-", "<<", ">>", "<&", ">&", "<>", ">|", "|&", ";", "&", "|",
             "(", ")", "<", ">", "\n")  # fmt: skip
REDIRECTIONS = {"<", ">", ">>", "<&", ">&", "<>", ">|"}
KEYWORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"}
CLOSERS = {"fi", "done", "esac", "}"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
_REFERENCE = re.compile(
    r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*|[0-9]+)(?::?[-=]([^}]*))?\}|([0-9])|([A-Za-z_][A-Za-z0-9_]*))"
)


@dataclass(frozen=True, slots=True)
class Word:
    """One word: its text with quotes removed (expansions as written) and whether any part of
    it was quoted."""

    text: str
    quoted: bool = False


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command: its 1-based line, the variables it assigns first, its words, its
    redirections (operator, target), the heredoc fed to it and whether `&` ended it."""

    line: int
    words: tuple[Word, ...]
    assignments: tuple[tuple[str, str], ...] = ()
    redirections: tuple[tuple[str, Word], ...] = ()
    stdin: str | None = None
    background: bool = False

    @property
    def name(self) -> str:
        """The command's first word ("" for a bare assignment or redirection)."""
        return self.words[0].text if self.words else ""


@dataclass(frozen=True, slots=True)
class Script:
    """A parsed script: its commands in order, the functions it defines, and the loops
    (`while`/`until`/`for` bodies) as (first line, last line, head command)."""

    commands: tuple[Command, ...]
    functions: frozenset[str] = frozenset()
    loops: tuple[tuple[int, int, str], ...] = ()


@dataclass
class _Token:
    text: str
    line: int
    operator: bool = False
    quoted: bool = False
    inner: list[tuple[str, int]] = field(default_factory=list)  # $(...) bodies and their lines


def parse(text: str, first_line: int = 1) -> Script:
    """The commands of a script whose first line is `first_line` (see the module doc)."""
    return _parse(text, first_line, 0)


def _parse(text: str, first_line: int, depth: int) -> Script:
    tokens, heredocs = _tokens(text, first_line)
    builder = _Builder(heredocs)
    for token in tokens:
        builder.feed(token)
        if len(builder.commands) >= MAX_COMMANDS:
            break
    builder.end()
    commands = list(builder.commands)
    functions = set(builder.functions)
    if depth < MAX_DEPTH:
        for body, line in (b for token in tokens for b in token.inner):
            inner = _parse(body, line, depth + 1)
            commands += inner.commands
            functions |= inner.functions
    commands.sort(key=lambda command: command.line)
    return Script(tuple(commands[:MAX_COMMANDS]), frozenset(functions), tuple(builder.loops))


def expand(word: str, values: dict[str, str]) -> str | None:
    """`word` with `$1`, `${name}`, `${name:-default}` replaced from `values`; None when it
    holds an expansion not in `values` (and no default), or a command substitution."""
    if "$(" in word or "`" in word:
        return None
    unknown = False

    def replace(match: re.Match[str]) -> str:
        nonlocal unknown
        name = match[1] or match[3] or match[4]
        if name in values:
            return values[name]
        if match[2] is not None:
            return match[2]
        unknown = True
        return ""

    expanded = _REFERENCE.sub(replace, word)
    return None if unknown else expanded


def _tokens(text: str, line: int) -> tuple[list[_Token], dict[int, str]]:
    """Words and operators, and the heredoc bodies by the index of the `<<` token."""
    tokens: list[_Token] = []
    heredocs: dict[int, str] = {}
    pending: list[tuple[int, str, bool]] = []  # (token index, delimiter, strip tabs)
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == "\\" and text[i + 1 : i + 2] == "\n":
            i, line = i + 2, line + 1
            continue
        if char in " \t\r":
            i += 1
            continue
        if char == "#" and (not tokens or tokens[-1].operator or text[i - 1] in " \t"):
            while i < n and text[i] != "\n":
                i += 1
            continue
        operator = next((op for op in OPERATORS if text.startswith(op, i)), None)
        if operator is not None:
            tokens.append(_Token(operator, line, operator=True))
            i += len(operator)
            if operator == "\n":
                line += 1
                for index, delimiter, strip in pending:
                    body, i, line = _heredoc(text, i, line, delimiter, strip)
                    heredocs[index] = body
                pending = []
            if operator in ("<<", "<<-"):
                word, i, line = _word(text, i, line)
                while word is None and i < n and text[i] in " \t":
                    i += 1
                    word, i, line = _word(text, i, line)
                if word is not None:
                    pending.append((len(tokens) - 1, word.text, operator == "<<-"))
            continue
        word, i, line = _word(text, i, line)
        if word is not None:
            tokens.append(word)
    return tokens, heredocs


def _word(text: str, i: int, line: int) -> tuple[_Token | None, int, int]:
    """The word starting at `i` (None at a blank or an operator), the index after it, the line."""
    parts: list[str] = []
    quoted = False
    inner: list[tuple[str, int]] = []
    start_line = line
    n = len(text)
    while i < n:
        char = text[i]
        if char in " \t\r" or any(text.startswith(op, i) for op in OPERATORS):
            break
        if char == "\\":
            if text[i + 1 : i + 2] == "\n":
                i, line = i + 2, line + 1
                continue
            parts.append(text[i + 1 : i + 2])
            quoted, i = True, i + 2
        elif char == "'":
            end = text.find("'", i + 1)
            end = n if end < 0 else end
            parts.append(text[i + 1 : end])
            line += text.count("\n", i, end)
            quoted, i = True, end + 1
        elif char == '"':
            end = _closing_quote(text, i + 1)
            body = text[i + 1 : end]
            inner += _substitutions(body, line)
            parts.append(re.sub(r'\\([$`"\\\n])', r"\1", body))
            line += body.count("\n")
            quoted, i = True, end + 1
        elif text.startswith("$(", i) or char == "`":
            end = _closing(text, i)
            body = text[i + 2 : end] if char == "$" else text[i + 1 : end]
            if not body.startswith("("):  # $(( arithmetic )) runs nothing
                inner.append((body, line))
            parts.append(text[i : end + 1])
            line += text.count("\n", i, end)
            i = end + 1
        elif text.startswith("${", i):
            end = text.find("}", i)
            end = n - 1 if end < 0 else end
            parts.append(text[i : end + 1])
            i = end + 1
        else:
            parts.append(char)
            i += 1
    if not parts:
        return None, i, line
    return _Token("".join(parts), start_line, quoted=quoted, inner=inner), i, line


def _closing_quote(text: str, i: int) -> int:
    """The index of the `"` that closes a double-quoted string starting at `i`."""
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i
        elif text.startswith("$(", i) or text[i] == "`":
            i = _closing(text, i) + 1
        else:
            i += 1
    return len(text)


def _closing(text: str, i: int) -> int:
    """The index closing the `$(` or backquote at `i` (quotes and nesting respected)."""
    if text[i] == "`":
        j = i + 1
        while j < len(text) and text[j] != "`":
            j += 2 if text[j] == "\\" else 1
        return min(j, len(text))
    depth, j = 0, i + 1
    while j < len(text):
        char = text[j]
        if char == "\\":
            j += 2
            continue
        if char == "'":
            j = text.find("'", j + 1) if text.find("'", j + 1) >= 0 else len(text)
        elif char == '"':
            j = _closing_quote(text, j + 1)
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return len(text)


def _substitutions(body: str, line: int) -> list[tuple[str, int]]:
    """The `$(...)` and backquoted commands inside a double-quoted string."""
    found = []
    i = 0
    while i < len(body):
        if body[i] == "\\":
            i += 2
            continue
        if body.startswith("$(", i) or body[i] == "`":
            end = _closing(body, i)
            inner = body[i + 2 : end] if body[i] == "$" else body[i + 1 : end]
            if not inner.startswith("("):
                found.append((inner, line + body.count("\n", 0, i)))
            i = end + 1
        else:
            i += 1
    return found


def _heredoc(text: str, i: int, line: int, delimiter: str, strip: bool) -> tuple[str, int, int]:
    """The body of a heredoc starting at `i` (the line after its `<<`), and where it ends."""
    lines = []
    while i < len(text):
        end = text.find("\n", i)
        end = len(text) if end < 0 else end
        current = text[i:end]
        i, line = end + 1, line + 1
        if (current.lstrip("\t") if strip else current) == delimiter:
            break
        lines.append(current)
    return "\n".join(lines), i, line


class _Builder:
    """Groups tokens into commands, skipping keywords, case patterns, `for` heads and tests."""

    def __init__(self, heredocs: dict[int, str]) -> None:
        self.heredocs = heredocs
        self.commands: list[Command] = []
        self.functions: set[str] = set()
        self.loops: list[tuple[int, int, str]] = []
        self._open_loops: list[tuple[int, str]] = []
        self._tokens: list[_Token] = []
        self._stdin: str | None = None
        self._index = -1
        self._case_depth = 0
        self._pattern = False  # the next words are a case pattern, up to `)`
        self._defining = False  # `name (` seen: the `)` that follows closes a function's head

    def feed(self, token: _Token) -> None:
        self._index += 1
        if token.operator and token.text in ("<<", "<<-") and self._index in self.heredocs:
            self._stdin = self.heredocs[self._index]
        if self._pattern:
            if token.operator and token.text == ")":
                self._pattern = False
            elif not token.operator and token.text == "esac":
                self._pattern = False
                self._case_depth -= 1
            return
        if self._defining:
            self._defining = token.operator and token.text == "("
            if token.operator and token.text == ")":
                return
        if token.operator and token.text == "(" and self._function_head():
            self.functions.add(self._tokens[-1].text)
            self._tokens.pop()
            self._defining = True
            return
        if token.operator and token.text not in REDIRECTIONS and token.text not in ("<<", "<<-"):
            self._end_command(background=token.text == "&")
            if token.text == ";;" and self._case_depth:
                self._pattern = True
            return
        self._tokens.append(token)

    def end(self) -> None:
        self._end_command(background=False)

    def _function_head(self) -> bool:
        """Whether the words so far are `name` (or `function name`) right before a `(`."""
        words = [t for t in self._tokens if not (t.text in KEYWORDS and not t.quoted)]
        names = [t.text for t in words]
        return (len(names) == 1 or names[:1] == ["function"]) and all(
            not t.quoted and not t.operator and _NAME.fullmatch(t.text) for t in words[-1:]
        )

    def _end_command(self, background: bool) -> None:
        words, self._tokens = self._tokens, []
        stdin, self._stdin = self._stdin, None
        while words and not words[0].operator and not words[0].quoted:
            keyword = words[0].text
            if keyword in KEYWORDS:
                if keyword in ("while", "until"):
                    self._open_loops.append((words[0].line, " ".join(w.text for w in words[1:])))
                words = words[1:]
            elif keyword in CLOSERS:
                if keyword == "done" and self._open_loops:
                    start, condition = self._open_loops.pop()
                    self.loops.append((start, words[0].line, condition))
                if keyword == "esac":
                    self._case_depth -= 1
                words = words[1:]
            else:
                break
        if not words:
            return
        head = words[0]
        if not head.quoted and head.text in ("for", "select"):
            self._open_loops.append((head.line, " ".join(w.text for w in words[1:])))
            return
        if not head.quoted and head.text == "case":
            self._case_depth += 1
            self._pattern = True
            return
        if not head.quoted and head.text in ("[[", "function"):
            if head.text == "function" and len(words) > 1:
                self.functions.add(words[1].text)
            return
        self._command(words, stdin, background)

    def _command(self, tokens: list[_Token], stdin: str | None, background: bool) -> None:
        words: list[Word] = []
        assignments: list[tuple[str, str]] = []
        redirections: list[tuple[str, Word]] = []
        index = 0
        while index < len(tokens):
            token = tokens[index]
            if token.operator:
                target = tokens[index + 1] if index + 1 < len(tokens) else None
                if target is not None and not target.operator and token.text in REDIRECTIONS:
                    redirections.append((token.text, Word(target.text, target.quoted)))
                    index += 1
                if words and words[-1].text.isdigit() and not words[-1].quoted:
                    words.pop()  # `2>&1`: the 2 is a descriptor, not a word
                index += 1
                continue
            match = _ASSIGNMENT.fullmatch(token.text)
            if not words and match and not token.text.startswith("="):
                assignments.append((match[1], match[2]))
            else:
                words.append(Word(token.text, token.quoted))
            index += 1
        line = tokens[0].line
        self.commands.append(
            Command(line, tuple(words), tuple(assignments), tuple(redirections), stdin, background)
        )
