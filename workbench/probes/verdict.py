"""Verdicts: what one probe run shows about its posture, from the run and the host's evidence.

`judge` gives a cell `contained`, `not contained` or `not applicable`: where the host can see the
outcome itself (a file written with the cell's token, a connection the listener received, a daemon
that survived) its evidence wins over what the probe printed; other probes are judged by their
`PROBE` line and the control that ended the run.
"""

from dataclasses import dataclass
from enum import StrEnum

from workbench.executors.types import RunResult, RunStatus
from workbench.probes.catalogue import ProbeId, ProbeLine, probe_lines
from workbench.runs.record import plain_text

ESC = "\x1b"
CONTROL_ENDINGS = (RunStatus.TIMED_OUT, RunStatus.OOM_KILLED, RunStatus.LIMIT_EXCEEDED)
# `blocked` details that mean the probe could not try at all, not that a control stopped it.
UNTESTABLE = {
    "no-tcp-client": "no TCP client (python3 or nc) to try with",
    "workspace-not-writable": "the workspace is not writable here, so nothing could be tried",
    "bad-arguments": "the probe was given arguments it refuses",
    "no-limit-set": "no CPU, file-size or memory rlimit is set, so there is none to raise",
}


class Verdict(StrEnum):
    """What a probe run shows."""

    CONTAINED = "contained"
    NOT_CONTAINED = "not contained"
    NOT_APPLICABLE = "not applicable"


@dataclass(frozen=True, slots=True)
class HostEvidence:
    """What the lab saw from the host's side after a run.

    `reached` is None for probes the host cannot observe; `not_applicable` is a reason the
    probe cannot tell anything on this machine (empty when it can).
    """

    reached: bool | None = None
    not_applicable: str = ""


@dataclass(frozen=True, slots=True)
class Judgement:
    """A verdict and the evidence behind it, in a few plain words."""

    verdict: Verdict
    detail: str


def judge(probe: ProbeId, result: RunResult, host: HostEvidence) -> Judgement:
    """The verdict of one probe run (see the module doc)."""
    if result.status is RunStatus.ERROR:
        return Judgement(Verdict.NOT_APPLICABLE, f"the workbench could not run it: {result.cause}")
    if host.not_applicable:
        return Judgement(Verdict.NOT_APPLICABLE, host.not_applicable)
    if probe is ProbeId.ESCAPE:
        return _judge_escape(result)
    lines = probe_lines(result.stdout.text, probe)
    reached = _last(lines, "reached")
    blocked = _last(lines, "blocked")
    if host.reached:
        return Judgement(Verdict.NOT_CONTAINED, _host_saw(probe))
    if host.reached is None and reached is not None:
        return Judgement(Verdict.NOT_CONTAINED, f"the probe says {reached.detail}")
    if result.status in CONTROL_ENDINGS:
        return Judgement(Verdict.CONTAINED, result.cause)
    if blocked is not None:
        if blocked.detail in UNTESTABLE:
            return Judgement(Verdict.NOT_APPLICABLE, UNTESTABLE[blocked.detail])
        return Judgement(Verdict.CONTAINED, blocked.detail)
    if reached is not None:  # the probe thought it got there; the host saw nothing
        return Judgement(
            Verdict.CONTAINED, f"{reached.detail} only in its own view; not on the host"
        )
    if probe is ProbeId.DAEMON and _last(lines, "started") is not None:
        return Judgement(Verdict.CONTAINED, f"gone after the run ({result.cause})")
    if _last(lines, "started") is not None and result.status is RunStatus.FAILED:
        return Judgement(Verdict.CONTAINED, f"it died part way: {result.cause}")
    return Judgement(
        Verdict.NOT_APPLICABLE,
        f"the probe gave no verdict ({result.status.value}: {result.cause})",
    )


def _last(lines: list[ProbeLine], outcome: str) -> ProbeLine | None:
    return next((line for line in reversed(lines) if line.outcome == outcome), None)


def _host_saw(probe: ProbeId) -> str:
    if probe is ProbeId.LOOPBACK:
        return "the lab's listener on 127.0.0.1 received the probe's token"
    if probe is ProbeId.DAEMON:
        return "its background process was still running after the run"
    return "the host found the file with the probe's token"


def _judge_escape(result: RunResult) -> Judgement:
    """Escape output is about display: the record keeps it raw; its plain-text form must not."""
    if ESC not in result.stdout.text:
        return Judgement(Verdict.CONTAINED, "the recorded output holds no escape character")
    if ESC in plain_text(result.stdout.text):
        return Judgement(
            Verdict.NOT_CONTAINED, "the workbench's plain-text form still holds escapes"
        )
    return Judgement(
        Verdict.NOT_APPLICABLE,
        "the record keeps the raw output by design; its plain-text form (history, reports) "
        "shows each escape as \\x1b",
    )
