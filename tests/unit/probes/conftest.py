"""Fixtures for the probe lab tests: a run result built to order."""

from pathlib import Path

from workbench.executors.types import CapturedOutput, PostureCard, RunResult, RunStatus
from workbench.postures.model import Posture, PostureId


def make_result(
    status: RunStatus = RunStatus.OK,
    stdout: str = "",
    cause: str = "exited with code 0",
    leftover: int = 0,
) -> RunResult:
    """A finished local run with `status`, `cause` and `stdout` as given."""
    return RunResult(
        run_id="r1",
        status=status,
        cause=cause,
        exit_code=0 if status is RunStatus.OK else None,
        signal=None,
        wall_seconds=0.1,
        cpu_seconds=0.1,
        peak_rss_bytes=1000,
        peak_processes=1,
        stdout=CapturedOutput(stdout, len(stdout), False, Path("/tmp/stdout.log")),
        stderr=CapturedOutput("", 0, False, None),
        card=PostureCard(Posture(PostureId.LOCAL)),
        leftover_processes=leftover,
    )
