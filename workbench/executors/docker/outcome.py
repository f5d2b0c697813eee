"""How a `docker exec` run ended: a `RunStatus` and a cause sentence naming the control.

`classify` turns an `ExecEnd` (how the run was ended, the exit code, the output, the cgroup's
`oom_kill` and pids counters before and after) into the run's status and cause, the counters
deciding over the exit code; `fork_refused` reads a refused fork from the output under gVisor, where
no counter records it, and `split_exec_refusal` / `exec_refusal_notes` move runc's refusal to start
an exec's command out of its stdout into the run's notes.
"""

import re
import signal
from dataclasses import dataclass

from workbench.executors.docker.gvisor_supervisor import NO_SLOT, NOT_FOUND
from workbench.executors.docker.sampler import CgroupCounters
from workbench.executors.docker.spec import RUNSC_PROCESS_LIMIT
from workbench.executors.process.outcome import format_bytes, signal_name
from workbench.executors.process.runner import EndedBy
from workbench.executors.types import RunStatus
from workbench.postures.model import Limits, PostureWarning, Severity

READ_ONLY_MARK = "Read-only file system"
# Debian 12's runsc (20221219) refuses the AT_NO_AUTOMOUNT flag coreutils passes to statx.
STAT_REFUSED = re.compile(r"cannot (?:access|statx) '[^'\n]*': Invalid argument")
# What runc and runsc print when the exec'd program does not exist.
NOT_FOUND_MARKS = ("executable file not found", "no such file or directory")
# What dash, busybox, bash and Node print when fork() fails with EAGAIN (a process limit).
FORK_REFUSED = re.compile(
    r"Cannot fork|can't fork|fork: (retry: )?Resource temporarily unavailable|spawn EAGAIN"
)
PYTHON_EAGAIN = "BlockingIOError: [Errno 11] Resource temporarily unavailable"
REPORT_CHARS = 300
# What runc writes at the start of an exec's stdout when it cannot start the command.
EXEC_REFUSAL = re.compile(rb"\AOCI runtime exec failed: [^\n]*\n?")


@dataclass(frozen=True, slots=True)
class ExecEnd:
    """What is known once an exec has ended and its leftovers were swept."""

    ended_by: EndedBy
    exit_code: int | None  # as Docker reports it
    before: CgroupCounters | None
    after: CgroupCounters | None
    output_text: str  # stderr (and stdout, where the runtime reports exec failures)
    background_killed: int
    stderr_text: str = ""  # the command's own complaints (a refused fork), never its stdout
    cpu_seconds: float = 0.0  # the container's, during the run
    limit_cause: str = ""  # ended by `EndedBy.LIMIT`: which limit, in words


def split_exit(code: int | None) -> tuple[int | None, int | None]:
    """(exit code, signal) from Docker's exit code, where 128+N means "killed by signal N"."""
    if code is not None and 128 < code < 128 + signal.NSIG:
        return None, code - 128
    return code, None


def classify(end: ExecEnd, limits: Limits, argv0: str, runtime: str) -> tuple[RunStatus, str]:
    """The status and cause of a finished exec on `runtime` ("runc" or "runsc")."""
    if end.ended_by is EndedBy.CANCEL:
        return RunStatus.CANCELLED, "stopped by the user"
    if end.ended_by is EndedBy.LIMIT:
        return RunStatus.LIMIT_EXCEEDED, end.limit_cause
    if end.ended_by is EndedBy.SHUTDOWN:
        return RunStatus.CANCELLED, "stopped because the session was closed"
    if end.ended_by is EndedBy.TIMEOUT:
        return RunStatus.TIMED_OUT, f"wall-clock timeout of {limits.timeout_s:g} s"
    if end.exit_code is None:
        return RunStatus.ERROR, "the engine did not report how the command ended"
    if end.exit_code in (126, 127) and _not_found(end.output_text, argv0, runtime):
        return RunStatus.ERROR, f"command not found: {argv0}"
    status, cause = _ended(end, limits, runtime)
    if end.background_killed:
        n = end.background_killed
        cause += f"; killed {n} background process{'es' if n != 1 else ''} it left behind"
    return status, cause


def _ended(end: ExecEnd, limits: Limits, runtime: str) -> tuple[RunStatus, str]:
    """How a command that exited ended. A limit the kernel enforced during the run (the cgroup's
    counters rose) decides even when the command then exited 0, as a fork bomb's parent does.
    Under gVisor no host counter records a refused fork, and printed text alone cannot end a run
    as stopped by a control: a run that failed and reported a refused fork is `limit_exceeded`,
    its cause naming the command's own report as the evidence; one that exited 0 stays `ok`."""
    rose = _risen(end.before, end.after)
    if "oom" in rose:
        return (
            RunStatus.OOM_KILLED,
            f"memory limit {format_bytes(limits.memory_bytes)} (cgroup OOM)",
        )
    if "pids" in rose:
        return RunStatus.LIMIT_EXCEEDED, f"process limit {limits.pids} (pids cgroup)"
    if runtime == "runsc" and end.exit_code == 126 and f": {NO_SLOT}" in end.output_text:
        return (
            RunStatus.LIMIT_EXCEEDED,
            f"process limit {limits.pids} ({RUNSC_PROCESS_LIMIT}): no free process slot to "
            "start the command",
        )
    refused = runtime == "runsc" and fork_refused(end.stderr_text)
    if end.exit_code == 0:
        limit = f"process limit {limits.pids}, {RUNSC_PROCESS_LIMIT}"
        note = f"; its output reports a refused fork ({limit})" if refused else ""
        return RunStatus.OK, f"exited with code 0{note}"
    if refused:
        return (
            RunStatus.LIMIT_EXCEEDED,
            f"process limit {limits.pids} ({RUNSC_PROCESS_LIMIT}; the command reported a "
            "refused fork)",
        )
    code, sig = split_exit(end.exit_code)
    if (hit := _rlimit_hit(sig, end.cpu_seconds, limits)) is not None:
        return RunStatus.LIMIT_EXCEEDED, hit
    cause = f"killed by signal {signal_name(sig)}" if sig else f"exited with code {code}"
    if READ_ONLY_MARK in end.output_text:
        cause += " after a write to the read-only root filesystem"
    if runtime == "runsc" and STAT_REFUSED.search(end.stderr_text):
        cause += (
            "; its ls or stat met this runsc's refusal of statx's AT_NO_AUTOMOUNT flag "
            "('Invalid argument' on every path): use find, Python or Node, or the docker posture"
        )
    return RunStatus.FAILED, cause


def _rlimit_hit(sig: int | None, cpu_seconds: float, limits: Limits) -> str | None:
    """The container's rlimit that a death by `sig` names: SIGXFSZ the file size limit,
    SIGXCPU or a SIGKILL once the CPU time is spent (hard equals soft) the CPU limit."""
    if sig == signal.SIGXFSZ:
        return f"file size limit {format_bytes(limits.file_size_bytes)} (RLIMIT_FSIZE)"
    cpu_spent = cpu_seconds >= limits.cpu_seconds - 0.5
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_spent):
        return f"RLIMIT_CPU {limits.cpu_seconds} s"
    return None


def _not_found(text: str, argv0: str, runtime: str) -> bool:
    """Under gVisor the supervisor says so in its own line (`gvisor_supervisor`)."""
    if runtime == "runsc":
        return f"exec: {argv0}: {NOT_FOUND}" in text
    return any(m in text for m in NOT_FOUND_MARKS)


def _risen(before: CgroupCounters | None, after: CgroupCounters | None) -> set[str]:
    if before is None or after is None:
        return set()
    rose = set()
    if after.oom_kills > before.oom_kills:
        rose.add("oom")
    if after.pids_max_hits > before.pids_max_hits:
        rose.add("pids")
    return rose


def fork_refused(text: str) -> bool:
    """True when `text` holds a shell's or Python's report of a fork refused with EAGAIN."""
    return bool(FORK_REFUSED.search(text)) or (PYTHON_EAGAIN in text and "fork" in text)


def split_exec_refusal(data: bytes) -> tuple[bytes, str]:
    """The first chunk of an exec's stdout without the runtime's refusal to start the command
    that opens it, and that refusal ("" if none)."""
    match = EXEC_REFUSAL.match(data)
    if match is None:
        return data, ""
    return data[match.end() :], match.group().decode(errors="replace").strip()


def exec_refusal_notes(refusals: list[str]) -> tuple[PostureWarning, ...]:
    """The run's note of what the runtime said when it could not start the command."""
    said = "; ".join(refusals)[:REPORT_CHARS]
    text = f"The container runtime could not start the command: {said}"
    return (PostureWarning(Severity.INFO, text),) if said else ()
