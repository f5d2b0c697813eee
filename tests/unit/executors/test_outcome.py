"""Status and cause of a run from what happened to its process."""

import signal
from dataclasses import replace

import pytest

from workbench.executors.process.outcome import classify, left_behind_warnings
from workbench.executors.process.reaper import KillReport
from workbench.executors.process.runner import EndedBy, ProcessOutcome
from workbench.executors.types import CapturedOutput, RunStatus
from workbench.monitor.sample import ResourceSample
from workbench.postures.model import MIB, Limits, Severity

LIMITS = Limits(cpu_seconds=10, memory_bytes=256 * MIB, pids=64, file_size_bytes=MIB)
EMPTY = CapturedOutput("", 0, False, None)


def outcome(
    ended_by: EndedBy = EndedBy.EXIT,
    returncode: int | None = 0,
    stderr: str = "",
    cpu: float = 0.0,
    signalled: int = 0,
) -> ProcessOutcome:
    return ProcessOutcome(
        ended_by=ended_by,
        returncode=returncode,
        spawn_error="command not found: x" if ended_by is EndedBy.SPAWN_ERROR else "",
        stdout=EMPTY,
        stderr=EMPTY,
        stderr_text=stderr,
        wall_seconds=1.0,
        cpu_seconds=cpu,
        peak_rss_bytes=0,
        peak_processes=0,
        samples=(),
        kill=KillReport(signalled=signalled, leftover=0),
    )


@pytest.mark.parametrize(
    ("case", "limits", "expected"),
    [
        (outcome(), LIMITS, (RunStatus.OK, "exited with code 0")),
        (outcome(returncode=2), None, (RunStatus.FAILED, "exited with code 2")),
        (outcome(returncode=-15), None, (RunStatus.FAILED, "killed by signal SIGTERM")),
        (outcome(EndedBy.TIMEOUT, -15), None, (RunStatus.TIMED_OUT, "wall-clock timeout of 2 s")),
        (outcome(EndedBy.CANCEL, -15), LIMITS, (RunStatus.CANCELLED, "stopped by the user")),
        (outcome(EndedBy.SPAWN_ERROR, None), None, (RunStatus.ERROR, "command not found: x")),
        (
            outcome(returncode=-signal.SIGXCPU),
            LIMITS,
            (RunStatus.LIMIT_EXCEEDED, "RLIMIT_CPU 10 s"),
        ),
        (outcome(returncode=-9, cpu=10.2), LIMITS, (RunStatus.LIMIT_EXCEEDED, "RLIMIT_CPU 10 s")),
        (outcome(returncode=-9, cpu=1.0), LIMITS, (RunStatus.FAILED, "killed by signal SIGKILL")),
        # `sh -c` reports a child SIGKILL killed (hard = soft CPU limit) as exit code 137
        (outcome(returncode=137, cpu=10.2), LIMITS, (RunStatus.LIMIT_EXCEEDED, "RLIMIT_CPU 10 s")),
        (outcome(returncode=137, cpu=1.0), LIMITS, (RunStatus.FAILED, "exited with code 137")),
        (
            outcome(returncode=-signal.SIGSEGV),
            LIMITS,
            (
                RunStatus.FAILED,
                "killed by signal SIGSEGV; the memory limit 256 MiB (RLIMIT_AS) may have stopped "
                "it (a program that cannot map itself or grow its stack gets SIGSEGV)",
            ),
        ),
        (outcome(returncode=-11), None, (RunStatus.FAILED, "killed by signal SIGSEGV")),
        (
            outcome(returncode=-signal.SIGXFSZ),
            LIMITS,
            (RunStatus.LIMIT_EXCEEDED, "file size limit 1 MiB (RLIMIT_FSIZE)"),
        ),
        (
            outcome(returncode=1, stderr="Traceback...\nMemoryError\n"),
            LIMITS,
            (RunStatus.OOM_KILLED, "memory limit 256 MiB (RLIMIT_AS)"),
        ),
        (
            outcome(returncode=1, stderr="Traceback...\nMemoryError\n"),
            None,  # local: no limit to blame
            (RunStatus.FAILED, "exited with code 1"),
        ),
        (
            outcome(returncode=2, stderr="sh: 0: Cannot fork\n"),
            LIMITS,
            (RunStatus.LIMIT_EXCEEDED, "process limit 64 (RLIMIT_NPROC)"),
        ),
        (
            outcome(returncode=0, stderr="MemoryError"),
            LIMITS,  # it recovered: exit 0 is ok, the limit a note
            (
                RunStatus.OK,
                "exited with code 0; its stderr shows failed allocations: the memory limit "
                "256 MiB (RLIMIT_AS) may have stopped part of its work",
            ),
        ),
    ],
)
def test_classify(
    case: ProcessOutcome, limits: Limits | None, expected: tuple[RunStatus, str]
) -> None:
    assert classify(case, 2, limits) == expected


def test_a_sigkill_counts_the_cpu_time_its_samples_missed() -> None:
    limits = replace(LIMITS, cpu_seconds=1)
    # a busy event loop took the last sample 0.2 s in; the command died 1.0 s in, as the
    # kernel's SIGKILL at RLIMIT_CPU 1 s does for a busy loop
    late = replace(outcome(returncode=-9, cpu=0.2), samples=(ResourceSample(0.2, 100.0, 0, 1),))
    assert classify(late, 60, limits) == (RunStatus.LIMIT_EXCEEDED, "RLIMIT_CPU 1 s")
    seen = replace(late, samples=(ResourceSample(0.95, 5.0, 0, 1),))  # idle to the end
    assert classify(seen, 60, limits) == (RunStatus.FAILED, "killed by signal SIGKILL")
    # the loop's first sample came after the end (seen in CI): it read nothing of the run
    starved = replace(outcome(returncode=-9), samples=(ResourceSample(1.5, 0.0, 0, 0),))
    assert classify(starved, 60, limits) == (RunStatus.LIMIT_EXCEEDED, "RLIMIT_CPU 1 s")
    # a loaded lab (CI): the only samples came once the worker was dead, before its end was
    # noticed (3.7 s of 3.8): they read no process, so they say nothing of its CPU time
    dead = (ResourceSample(3.7, 0.0, 0, 0),)
    noticed_late = replace(outcome(returncode=-9), wall_seconds=3.8, samples=dead)
    assert classify(noticed_late, 60, limits) == (RunStatus.LIMIT_EXCEEDED, "RLIMIT_CPU 1 s")


def test_timeout_notes_fork_failures() -> None:
    status, cause = classify(outcome(EndedBy.TIMEOUT, -15, "bash: fork: retry"), 5, LIMITS)
    assert status is RunStatus.TIMED_OUT
    assert cause.startswith("wall-clock timeout of 5 s")
    assert "RLIMIT_NPROC" in cause


def test_background_leftovers_are_named() -> None:
    status, cause = classify(outcome(signalled=2), 5, None)
    assert status is RunStatus.OK
    assert cause == "exited with code 0; killed 2 background processes it left behind"


@pytest.mark.parametrize(
    ("stderr", "note"),
    [
        (
            "bash: fork: retry: Resource temporarily unavailable\n",
            "; its stderr shows refused forks: the process limit 64 (RLIMIT_NPROC) may have "
            "stopped part of its work",
        ),
        (
            "head: error writing 'standard output': File too large\n",
            "; its stderr shows refused writes: the file size limit 1 MiB (RLIMIT_FSIZE) may "
            "have stopped part of its work",
        ),
        (
            "Traceback (most recent call last):\nMemoryError\n",
            "; its stderr shows failed allocations: the memory limit 256 MiB (RLIMIT_AS) may "
            "have stopped part of its work",
        ),
    ],
)
def test_an_ok_run_whose_stderr_shows_a_limit_names_it(stderr: str, note: str) -> None:
    status, cause = classify(outcome(stderr=stderr, signalled=1), 5, LIMITS)
    assert status is RunStatus.OK  # the command succeeded: a note, not a verdict
    assert cause == "exited with code 0; killed 1 background process it left behind" + note
    assert classify(outcome(stderr=stderr), 5, None) == (RunStatus.OK, "exited with code 0")


def test_only_an_ok_run_that_left_processes_behind_carries_the_caution() -> None:
    (warning,) = left_behind_warnings(2, RunStatus.OK)
    assert warning.severity is Severity.CAUTION
    assert warning.text == (
        "The command left 2 background process(es) running; the workbench killed them."
    )
    assert left_behind_warnings(0, RunStatus.OK) == ()
    assert left_behind_warnings(2, RunStatus.FAILED) == ()
