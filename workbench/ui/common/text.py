"""Small wording helpers shared by the widgets: counts, sizes, plurals, literal tool tips.

Untrusted text (skill names and descriptions, file names, output) goes through
`workbench.ansi.reveal_bidi` before a widget shows it, so bidi controls show as markers
instead of reordering what the user reads; tool tips do that themselves.
"""

import html

from workbench.ansi import reveal_bidi
from workbench.skills import Skill


def plural(count: int, noun: str) -> str:
    """`1 error`, `2 errors`, `0 warnings`."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def diagnostic_counts(skill: Skill) -> tuple[int, int]:
    """The number of errors and warnings among a skill's diagnostics."""
    errors = sum(1 for d in skill.diagnostics if d.is_error)
    return errors, len(skill.diagnostics) - errors


def badge_text(skill: Skill) -> str:
    """A short verdict on a skill, e.g. `valid`, `valid · 1 warning`, `2 errors · 1 warning`."""
    errors, warnings = diagnostic_counts(skill)
    parts = [plural(n, noun) for n, noun in ((errors, "error"), (warnings, "warning")) if n]
    if skill.valid:
        parts.insert(0, "valid")
    return " · ".join(parts)


def format_size(size: int) -> str:
    """A byte count for people: `812 B`, `4.2 KiB`, `1.5 MiB`."""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value:.1f} TiB"


def tooltip(text: str) -> str:
    """`text` as a tool tip that Qt shows literally (tool tips otherwise guess at HTML), bidi
    controls as markers."""
    return f"<p style='white-space:pre-wrap'>{html.escape(reveal_bidi(text))}</p>"
