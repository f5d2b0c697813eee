"""The budget meter: how much of an agent's context a skill costs, against the spec's advice.

An agent holds every skill's metadata (name and description) all the time, so the spec advises
about `ADVISED_METADATA_TOKENS` tokens of it; it loads the body when the skill activates (advice:
under 500 lines and 5,000 tokens, the same limits `check_body` warns about); and it reads the
skill's other files (`references/`, `assets/`, `scripts/`, a `reference.md` beside SKILL.md:
whatever their names) only when needed, so those are sizes, not costs.
`budget` measures all three and, when the body is over, names its largest sections by heading as
the ones to move into `references/`. Tokens are estimated at about four characters a token.
"""

import re
from dataclasses import dataclass

from workbench.skills.files import FileKind, FileNode
from workbench.skills.model import Skill
from workbench.skills.reading import SKILL_MD_NAMES
from workbench.skills.rules import (
    ADVISED_BODY_LINES,
    ADVISED_BODY_TOKENS,
    count_lines,
    estimate_tokens,
)

ADVISED_METADATA_TOKENS = 100
SECTIONS_TO_NAME = 3
TOP_LEVEL = "files beside SKILL.md"  # the resource entry of the skill's loose files

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


@dataclass(frozen=True, slots=True)
class Section:
    """A part of the body from one heading to the next: its heading, SKILL.md line and size."""

    heading: str
    line: int
    lines: int
    tokens: int


@dataclass(frozen=True, slots=True)
class ResourceSize:
    """The total size in bytes and the file count of a top-level folder of the skill (`name`
    is `references/`, say) or of its other files beside SKILL.md (`TOP_LEVEL`)."""

    name: str
    size: int
    files: int


@dataclass(frozen=True, slots=True)
class Budget:
    """A skill's context cost (see the module docstring); `advice` says what to change."""

    metadata_tokens: int
    body_lines: int
    body_tokens: int
    resources: tuple[ResourceSize, ...]
    largest_sections: tuple[Section, ...]
    advice: tuple[str, ...]
    advised_metadata_tokens: int = ADVISED_METADATA_TOKENS
    advised_body_lines: int = ADVISED_BODY_LINES
    advised_body_tokens: int = ADVISED_BODY_TOKENS

    @property
    def metadata_over(self) -> bool:
        """True when the name and description cost more than the advice."""
        return self.metadata_tokens > self.advised_metadata_tokens

    @property
    def body_over(self) -> bool:
        """True when the body is over the advised lines or tokens."""
        return (
            self.body_lines > self.advised_body_lines or self.body_tokens > self.advised_body_tokens
        )


def budget(skill: Skill) -> Budget:
    """Measure `skill` (see the module docstring)."""
    metadata_tokens = estimate_tokens(f"{skill.name}\n{skill.description}")
    sections = sorted(
        body_sections(skill.body, skill.body_start_line), key=lambda s: (-s.tokens, s.line)
    )
    largest = tuple(sections[:SECTIONS_TO_NAME])
    advice = []
    if metadata_tokens > ADVISED_METADATA_TOKENS:
        advice.append(
            f"The name and description are about {metadata_tokens:,} tokens; agents keep them "
            f"in context all the time, so the spec advises about {ADVISED_METADATA_TOKENS}. "
            "Say what the skill does and when to use it, and move the rest into the body."
        )
    body_over = skill.body_lines > ADVISED_BODY_LINES or skill.body_tokens > ADVISED_BODY_TOKENS
    if body_over and largest:
        named = "; ".join(
            f"'{s.heading}' (line {s.line}, {s.lines:,} lines, about {s.tokens:,} tokens)"
            for s in largest
        )
        advice.append(
            f"The body is {skill.body_lines:,} lines, about {skill.body_tokens:,} tokens "
            f"(advice: under {ADVISED_BODY_LINES} lines and {ADVISED_BODY_TOKENS:,} tokens). "
            f"Move the largest sections into references/ files and link them: {named}."
        )
    elif body_over:
        advice.append(
            f"The body is {skill.body_lines:,} lines, about {skill.body_tokens:,} tokens, with "
            "no headings; split it into sections and move the detail into references/."
        )
    return Budget(
        metadata_tokens,
        skill.body_lines,
        skill.body_tokens,
        resources(skill.files),
        largest,
        tuple(advice),
    )


def body_sections(body: str, first_line: int = 1) -> list[Section]:
    """The body split at its Markdown headings (ignoring `#` lines inside code fences).

    Text before the first heading is a section headed "(before the first heading)"; `line` is
    counted from `first_line`, the body's line in SKILL.md.
    """
    lines = body.splitlines(keepends=True)
    starts: list[tuple[int, str]] = []
    fenced = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (match := _HEADING.match(line.rstrip("\r\n"))):
            starts.append((index, f"{match.group(1)} {match.group(2)}"))
    if not starts or starts[0][0] > 0:
        starts.insert(0, (0, "(before the first heading)"))
    sections = []
    for (start, heading), (end, _) in zip(starts, [*starts[1:], (len(lines), "")], strict=True):
        text = "".join(lines[start:end])
        if text.strip():
            sections.append(
                Section(heading, first_line + start, count_lines(text), estimate_tokens(text))
            )
    return sections


def resources(tree: FileNode) -> tuple[ResourceSize, ...]:
    """Every top-level folder of the skill's file tree, whatever its name, then the files
    beside SKILL.md (if any): what an agent may read when needed."""
    folders = [c for c in tree.children if c.kind is FileKind.DIRECTORY]
    loose = [
        c
        for c in tree.children
        if c.kind is not FileKind.DIRECTORY and c.name not in SKILL_MD_NAMES
    ]
    found = [ResourceSize(f"{c.name}/", c.size, _count_files(c)) for c in folders]
    if loose:
        found.append(ResourceSize(TOP_LEVEL, sum(c.size for c in loose), len(loose)))
    return tuple(found)


def _count_files(node: FileNode) -> int:
    return sum(
        _count_files(child) if child.kind is FileKind.DIRECTORY else 1 for child in node.children
    )
