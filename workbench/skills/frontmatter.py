"""Splitting SKILL.md into YAML front matter and Markdown body, and parsing the YAML safely.

The YAML is read as a stream of parser events and built here, never by a YAML constructor, so
no tag can ever run code, and every hostile shape is bounded: the front matter is at most
`MAX_FRONT_MATTER_CHARS`, nesting at most `MAX_DEPTH`, and the document at most `MAX_NODES`
values *after* alias expansion (a "billion laughs" bomb is refused after a few thousand).
Like strictyaml, which the reference validator uses, every scalar is kept as its text
(`version: 1.0` stays "1.0", `~` stays "~"); tags and duplicate keys are refused. Flow style and
small aliases are valid YAML, so they are accepted, with a warning that skills-ref rejects them.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from workbench.skills.diagnostics import Code, Diagnostic, diagnostic

MAX_FRONT_MATTER_CHARS = 64 * 1024
MAX_DEPTH = 20
MAX_NODES = 10_000

_CORE_TAG_PREFIX = "tag:yaml.org,2002:"
_DELIMITER = re.compile(r"^---[ \t]*\r?$", re.MULTILINE)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # only its parser is used
# What the scanner or parser was reading when it failed: an opened construct never closed.
_OPENED = ("quoted scalar", "simple key", "flow sequence", "flow mapping")


@dataclass(frozen=True, slots=True)
class SkillDocument:
    """SKILL.md split up: the front matter mapping (None when there is none to use), the 1-based
    line of each top-level key, the Markdown body and its first line, and the problems found."""

    front_matter: dict[str, object] | None = None
    key_lines: dict[str, int] = field(default_factory=dict)
    body: str = ""
    body_start_line: int = 1
    diagnostics: tuple[Diagnostic, ...] = ()


class _YamlProblem(Exception):
    def __init__(self, code: Code, message: str, line: int | None) -> None:
        super().__init__(message)
        self.code, self.message, self.line = code, message, line


def parse_skill_md(text: str, path: Path) -> SkillDocument:
    """Split `text` (the content of SKILL.md at `path`) and parse its front matter."""
    first_line = text.partition("\n")[0]
    if _DELIMITER.fullmatch(first_line) is None:
        message = "SKILL.md must start with a line '---' opening the YAML front matter."
        return SkillDocument(
            body=text, diagnostics=(diagnostic(Code.NO_FRONT_MATTER, message, path, 1),)
        )
    closing = _DELIMITER.search(text, len(first_line) + 1)
    if closing is None:
        message = "The front matter opened on line 1 is never closed by a line '---'."
        return SkillDocument(
            body=text, diagnostics=(diagnostic(Code.UNCLOSED_FRONT_MATTER, message, path, 1),)
        )
    yaml_text = text[len(first_line) + 1 : closing.start()]
    body_start = closing.end() + 1
    body_start_line = text.count("\n", 0, body_start) + 1
    document = SkillDocument(body=text[body_start:], body_start_line=body_start_line)
    if len(yaml_text) > MAX_FRONT_MATTER_CHARS:
        message = (
            f"The front matter is {len(yaml_text):,} characters; the workbench reads at most "
            f"{MAX_FRONT_MATTER_CHARS:,}. Keep it to name, description and a few short fields."
        )
        problem = diagnostic(Code.FRONT_MATTER_TOO_LARGE, message, path, 2)
        return _with(document, problem)
    try:
        builder = _build(yaml_text)
    except yaml.MarkedYAMLError as error:
        line, what = _syntax_error(error)
        message = f"The front matter is not valid YAML: {what}."
        return _with(document, diagnostic(Code.YAML_SYNTAX, message, path, line))
    except yaml.YAMLError as error:
        message = f"The front matter is not valid YAML: {error}."
        return _with(document, diagnostic(Code.YAML_SYNTAX, message, path))
    except _YamlProblem as problem:
        line = problem.line + 2 if problem.line is not None else None
        return _with(document, diagnostic(problem.code, problem.message, path, line))
    if not isinstance(builder.root, dict):
        message = "The front matter must be a YAML mapping: 'name: ...', 'description: ...' lines."
        return _with(document, diagnostic(Code.NOT_A_MAPPING, message, path, 2))
    warnings = [
        diagnostic(code, message, path, line + 2) for code, message, line in builder.warnings
    ]
    if builder.flow_lines:
        warnings.insert(0, _flow_style_warning([line + 2 for line in builder.flow_lines], path))
    return SkillDocument(
        front_matter=builder.root,
        key_lines={key: line + 2 for key, line in builder.key_lines.items()},
        body=document.body,
        body_start_line=body_start_line,
        diagnostics=tuple(warnings),
    )


def _syntax_error(error: yaml.MarkedYAMLError) -> tuple[int | None, str]:
    """The file line where a YAML syntax error starts, and the error in words.

    An unclosed quote, bracket or key is reported where the scanner gave up, often lines
    later; its start (the error's context mark) is where the problem is, so both are said.
    """
    problem, context = error.problem_mark, error.context_mark
    opened = context is not None and any(kind in (error.context or "") for kind in _OPENED)
    if opened and context is not None and problem is not None and problem.line != context.line:
        return (
            context.line + 2,
            f"{error.problem} on line {problem.line + 2} {error.context} that starts here",
        )
    mark = problem or context
    return (mark.line + 2 if mark is not None else None), str(error.problem or error.context)


def _flow_style_warning(lines: list[int], path: Path) -> Diagnostic:
    """One warning for every flow-style collection, at the first of their lines."""
    where = f"Line {lines[0]} uses" if len(lines) == 1 else f"Lines {_and(lines)} use"
    message = (
        f"{where} YAML flow style ([...] or {{...}}). The spec allows it, but the reference "
        "validator skills-ref rejects it; block style ('- item') works everywhere."
    )
    return diagnostic(Code.YAML_FLOW_STYLE, message, path, lines[0])


def _and(numbers: list[int]) -> str:
    """`4 and 7`, `2, 4 and 7`."""
    head, last = numbers[:-1], numbers[-1]
    return f"{', '.join(map(str, head))} and {last}" if head else str(last)


def _with(document: SkillDocument, problem: Diagnostic) -> SkillDocument:
    return SkillDocument(
        body=document.body, body_start_line=document.body_start_line, diagnostics=(problem,)
    )


@dataclass(slots=True)
class _Open:
    """A mapping or sequence being built: its value, expanded size, anchor and pending key."""

    value: dict[str, object] | list[object]
    anchor: str | None
    size: int = 1
    key: str | None = None


class _Builder:
    """Builds plain dicts, lists and strings from parser events, within the bounds above.

    Lines are 0-based within the front matter; `parse_skill_md` shifts them to file lines.
    """

    def __init__(self) -> None:
        self.root: object = None
        self.documents = 0
        self.stack: list[_Open] = []
        self.anchors: dict[str, tuple[object, int]] = {}
        self.key_lines: dict[str, int] = {}
        self.warnings: list[tuple[Code, str, int]] = []
        self.flow_lines: list[int] = []  # the lines with a flow-style collection

    def feed(self, event: yaml.Event) -> None:
        line = event.start_mark.line if event.start_mark is not None else 0
        if isinstance(event, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise _YamlProblem(
                    Code.YAML_SYNTAX, "The front matter holds more than one YAML document.", line
                )
        if isinstance(event, yaml.NodeEvent):
            self._check_node(event, line)
        if isinstance(event, yaml.ScalarEvent):
            self._add(event.value, 1, event.anchor, line)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in self.anchors:
                raise _YamlProblem(
                    Code.YAML_SYNTAX, f"The alias *{event.anchor} names no anchor.", line
                )
            value, size = self.anchors[event.anchor]
            self._add(value, size, None, line)
        elif isinstance(event, yaml.CollectionStartEvent):
            if len(self.stack) >= MAX_DEPTH:
                message = f"The front matter nests deeper than {MAX_DEPTH} levels; it is refused."
                raise _YamlProblem(Code.YAML_TOO_COMPLEX, message, line)
            if event.flow_style and line not in self.flow_lines:
                self.flow_lines.append(line)
            container: dict[str, object] | list[object] = (
                {} if isinstance(event, yaml.MappingStartEvent) else []
            )
            self.stack.append(_Open(container, event.anchor))
        elif isinstance(event, yaml.CollectionEndEvent):
            done = self.stack.pop()
            self._add(done.value, done.size, done.anchor, line)

    def _check_node(self, event: yaml.NodeEvent, line: int) -> None:
        tag = getattr(event, "tag", None)
        if tag is not None:
            tag = tag.replace(_CORE_TAG_PREFIX, "!!", 1)
            message = (
                f"The front matter uses the YAML tag '{tag}'. Tags are not allowed in SKILL.md "
                "(a tag such as !!python/object can run code); the workbench never applies them."
            )
            raise _YamlProblem(Code.YAML_TAG, message, line)
        if isinstance(event, yaml.AliasEvent):
            message = (
                f"The alias *{event.anchor} repeats an anchored value. YAML allows it, but the "
                "reference validator skills-ref rejects anchors and aliases; write the value out."
            )
            self.warnings.append((Code.YAML_ALIAS, message, line))

    def _add(self, value: object, size: int, anchor: str | None, line: int) -> None:
        if anchor is not None:
            self.anchors[anchor] = (value, size)
        if not self.stack:
            self.root = value
            return
        parent = self.stack[-1]
        parent.size += size
        if parent.size > MAX_NODES:
            message = (
                f"The front matter expands to more than {MAX_NODES:,} values (an alias bomb?); "
                "the workbench refuses it."
            )
            raise _YamlProblem(Code.YAML_TOO_COMPLEX, message, line)
        if isinstance(parent.value, list):
            parent.value.append(value)
        elif parent.key is None:
            parent.key = self._key(value, parent.value, line)
        else:
            parent.value[parent.key] = value
            parent.key = None

    def _key(self, value: object, mapping: dict[str, object], line: int) -> str:
        if not isinstance(value, str):
            raise _YamlProblem(
                Code.YAML_SYNTAX, "A key in the front matter is not plain text.", line
            )
        if value in mapping:
            raise _YamlProblem(
                Code.DUPLICATE_KEY, f"The key '{value}' appears twice; keep one.", line
            )
        if len(self.stack) == 1:
            self.key_lines[value] = line
        return value


def _build(yaml_text: str) -> _Builder:
    """The front matter built from libyaml's events; where libyaml refuses the text, from the
    pure-Python parser's, which has no nesting limit of its own (libyaml's stops the scan before
    the builder sees the depth), so the builder's own checks decide whatever the versions."""
    try:
        return _fed(yaml_text, _Loader)
    except yaml.YAMLError:
        if _Loader is yaml.SafeLoader:
            raise
        return _fed(yaml_text, yaml.SafeLoader)


def _fed(yaml_text: str, loader: type[yaml.SafeLoader]) -> _Builder:
    builder = _Builder()
    for event in yaml.parse(yaml_text, Loader=loader):
        builder.feed(event)
    return builder
