"""Turning what happened to a process into a `RunStatus` and a cause sentence.

`classify` names the control that ended the run: the wall-clock timeout, the user's Stop, or the
rlimit the kernel enforced, recognised from the signal (CPU, file size; also as a shell's exit
code 128+N) or, when the command failed, from the error it printed (memory, processes); when a
command succeeded with such signs in its stderr it stays `ok` with a cause that says a limit may
have stopped part of the work.
`left_behind_warnings` is the caution, for every posture, that an `ok` run left background processes
that were killed.
"""

import signal

from workbench.executors.process.runner import EndedBy, ProcessOutcome
from workbench.executors.types import RunStatus
from workbench.postures.model import MIB, Limits, PostureWarning, Severity

MEMORY_MARKERS = (
    "MemoryError",
    "Cannot allocate memory",
    "std::bad_alloc",
    "out of memory",
    "failed to map segment from shared object",  # the loader, with no room for a library
)
FORK_MARKERS = ("Resource temporarily unavailable", "fork: retry", "Cannot fork", "can't fork")
CPU_MARKERS = ("CPU time limit exceeded",)
FSIZE_MARKERS = ("File size limit exceeded", "File too large")


def format_bytes(n: int) -> str:
    """`n` bytes in MiB, e.g. "256 MiB" (below 1 MiB in KiB or bytes, e.g. "1 byte")."""
    if n >= MIB:
        return f"{n / MIB:g} MiB"
    return f"{n / 1024:g} KiB" if n >= 1024 else f"{n} byte" + ("s" if n != 1 else "")


def left_behind_warnings(
    killed: int, status: RunStatus, commands: tuple[str, ...] = ()
) -> tuple[PostureWarning, ...]:
    """The caution for an `ok` run that left `killed` background processes (now killed), with
    the command lines of the first few."""
    if not killed or status is not RunStatus.OK:
        return ()
    text = f"The command left {killed} background process(es) running; the workbench killed them"
    shown = [f"'{_shorter(command)}'" for command in commands if command]
    text += f": {', '.join(shown)}." if shown else "."
    return (PostureWarning(Severity.CAUTION, text),)


def _shorter(command: str, chars: int = 80) -> str:
    """`command` on one printable line of at most `chars` characters (it is the skill's)."""
    command = "".join(c if c.isprintable() else "?" for c in command)
    return command if len(command) <= chars else command[: chars - 3] + "..."


def signal_name(sig: int) -> str:
    """`SIGTERM` for 15; the number for signals without a name."""
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


def cpu_limit_reached(outcome: ProcessOutcome, cpu_seconds: float) -> bool:
    """Whether the run may have used its `cpu_seconds` (within half a second), as a SIGKILL
    from RLIMIT_CPU says: what its samples counted, plus the time on one core since the last
    one taken while it ran (one that read none of its processes does not count), which they did
    not see (a busy event loop delays them, and a sample after the end reads nothing)."""
    seen = (s.t for s in outcome.samples if s.t <= outcome.wall_seconds and s.processes)
    last = max(seen, default=0.0)
    return outcome.cpu_seconds + outcome.wall_seconds - last >= cpu_seconds - 0.5


def _any(text: str, markers: tuple[str, ...]) -> bool:
    return any(marker in text for marker in markers)


def _limit_hit(
    outcome: ProcessOutcome, limits: Limits, sig: int | None
) -> tuple[RunStatus, str] | None:
    """The rlimit that ended a failed run, if one clearly did."""
    text = outcome.stderr_text
    cpu_spent = cpu_limit_reached(outcome, limits.cpu_seconds)
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_spent) or _any(text, CPU_MARKERS):
        return RunStatus.LIMIT_EXCEEDED, f"RLIMIT_CPU {limits.cpu_seconds} s"
    if sig == signal.SIGXFSZ or _any(text, FSIZE_MARKERS):
        return RunStatus.LIMIT_EXCEEDED, (
            f"file size limit {format_bytes(limits.file_size_bytes)} (RLIMIT_FSIZE)"
        )
    if _any(text, MEMORY_MARKERS):
        return RunStatus.OOM_KILLED, f"memory limit {format_bytes(limits.memory_bytes)} (RLIMIT_AS)"
    if _any(text, FORK_MARKERS):
        return RunStatus.LIMIT_EXCEEDED, f"process limit {limits.pids} (RLIMIT_NPROC)"
    return None


def _limit_signs(text: str, limits: Limits) -> str:
    """The note for a run that succeeded while its stderr shows a limit refusing something."""
    signs = (
        (FORK_MARKERS, "refused forks", f"the process limit {limits.pids} (RLIMIT_NPROC)"),
        (
            MEMORY_MARKERS,
            "failed allocations",
            f"the memory limit {format_bytes(limits.memory_bytes)} (RLIMIT_AS)",
        ),
        (
            FSIZE_MARKERS,
            "refused writes",
            f"the file size limit {format_bytes(limits.file_size_bytes)} (RLIMIT_FSIZE)",
        ),
        (CPU_MARKERS, "a process over its CPU time", f"RLIMIT_CPU {limits.cpu_seconds} s"),
    )
    return "".join(
        f"; its stderr shows {sign}: {limit} may have stopped part of its work"
        for markers, sign, limit in signs
        if _any(text, markers)
    )


def classify(
    outcome: ProcessOutcome, timeout_s: float, limits: Limits | None
) -> tuple[RunStatus, str]:
    """Status and cause of a run; `limits` are the rlimits applied to it (None: none were)."""
    if outcome.ended_by is EndedBy.SPAWN_ERROR:
        return RunStatus.ERROR, outcome.spawn_error
    if outcome.ended_by is EndedBy.CANCEL:
        return RunStatus.CANCELLED, "stopped by the user"
    if outcome.ended_by is EndedBy.SHUTDOWN:
        return RunStatus.CANCELLED, "stopped because the session was closed"
    if outcome.ended_by is EndedBy.LIMIT:
        return RunStatus.LIMIT_EXCEEDED, outcome.limit_cause
    if outcome.ended_by is EndedBy.TIMEOUT:
        cause = f"wall-clock timeout of {timeout_s:g} s"
        if limits is not None and _any(outcome.stderr_text, FORK_MARKERS):
            cause += f" (forks were failing at the process limit of {limits.pids}, RLIMIT_NPROC)"
        return RunStatus.TIMED_OUT, cause
    rc = outcome.returncode
    sig = -rc if rc is not None and rc < 0 else None
    # A shell (`sh -c`) reports the child a signal killed as 128+N: a limit's kill all the same.
    child_sig = sig or (rc - 128 if rc is not None and 128 < rc < 128 + signal.NSIG else None)
    if rc != 0 and limits is not None and (hit := _limit_hit(outcome, limits, child_sig)):
        return hit
    if rc == 0:
        status, cause = RunStatus.OK, "exited with code 0"
    elif sig is not None:
        status, cause = RunStatus.FAILED, f"killed by signal {signal_name(sig)}"
        if sig == signal.SIGSEGV and limits is not None:
            cause += (
                f"; the memory limit {format_bytes(limits.memory_bytes)} (RLIMIT_AS) may have "
                "stopped it (a program that cannot map itself or grow its stack gets SIGSEGV)"
            )
    else:
        status, cause = RunStatus.FAILED, f"exited with code {rc}"
    if outcome.kill.signalled:
        n = outcome.kill.signalled
        cause += f"; killed {n} background process{'es' if n != 1 else ''} it left behind"
    if status is RunStatus.OK and limits is not None:
        cause += _limit_signs(outcome.stderr_text, limits)
    return status, cause
