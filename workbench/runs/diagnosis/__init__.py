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

from pathlib import Path

from workbench.executors.types import RunResult, RunStatus
from workbench.runs.diagnosis.model import (
    Change,
    Diagnosis,
    Evidence,
    Kind,
    RunFacts,
    diagnosis_from_dict,
    show_limit,
)
from workbench.runs.diagnosis.rules import OUTPUT_RULES, RULES, skill_failed

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


def diagnose(result: RunResult, workspace: Path | None = None) -> Diagnosis | None:
    """The diagnosis of `result`, run in `workspace` on this computer (see the module doc)."""
    if result.status in (RunStatus.OK, RunStatus.CANCELLED):
        return None
    facts = RunFacts(result, workspace)
    for rule in RULES:
        found = rule(facts)
        if found is not None:
            return found
    return skill_failed(facts)


def refused_in_passing(result: RunResult, workspace: Path | None = None) -> Diagnosis | None:
    """For a run that ended ok, the first control its output shows refusing something."""
    if result.status is not RunStatus.OK:
        return None
    facts = RunFacts(result, workspace)
    return next((found for rule in OUTPUT_RULES if (found := rule(facts)) is not None), None)
