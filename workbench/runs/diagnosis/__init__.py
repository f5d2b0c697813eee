"""Diagnosis of a finished run: why it failed here, which control did it, and what to change.

`diagnose(result, workspace)` reads the facts of a run that did not end `ok` (its status and
exit, the effective posture on its card, its stdout and stderr, the host calls of its network
log, its CPU use) and returns a `Diagnosis`: the `Kind` of failure, the control of the posture
responsible, one cause sentence, the `Evidence` line that shows it (stream and line number), a
suggestion, and the `Change` a re-run can make (another posture, the network, a bigger limit, a
built environment). Each kind is one small rule in `rules.RULES`, tried in order; the first
that recognises the run wins. A run no rule explains gets `Kind.SKILL_FAILED` with its last
traceback or error line as the evidence: never a guess. Cancelled and `ok` runs get none;
`refused_in_passing` tells, for a run that ended ok, what its output shows a control of the
posture refusing (a network call the skill caught, say), using the rules that read the output.
"""

from typing import TYPE_CHECKING

from workbench.runs.diagnosis.model import (
    Change,
    Diagnosis,
    Evidence,
    Kind,
    diagnosis_from_dict,
    show_limit,
)

if TYPE_CHECKING:
    from workbench.runs.diagnosis.rules import diagnose, refused_in_passing

__all__ = [
    "Change",
    "Diagnosis",
    "Evidence",
    "Kind",
    "diagnose",
    "diagnosis_from_dict",
    "refused_in_passing",
    "show_limit",
]


def __getattr__(name: str) -> object:
    """`diagnose` and `refused_in_passing`, loaded when first used: the rules read the run's
    result types, which every record of the history does not need."""
    if name in ("diagnose", "refused_in_passing"):
        from workbench.runs.diagnosis import rules

        return getattr(rules, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
