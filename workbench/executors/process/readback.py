"""Reading back what the hardened posture actually applied, from /proc of the running command.

`/proc/PID/limits` gives the rlimits, `/proc/PID/status` the uid and the no_new_privs flag
(`proc_texts()` reads both).
`requested_rlimits()` says what the executor asks the wrapper for; `limit_checks()` compares the
two into the posture card's (control, held) pairs.
"""

import re
from pathlib import Path

from workbench.executors.process.outcome import format_bytes
from workbench.postures.model import MIB, Limits

MIN_MEMORY_BYTES = 4 * MIB  # below this RLIMIT_AS, even `sh` cannot map its libraries

# rlimit name (as in `resource.RLIMIT_<name>`) -> its row in /proc/PID/limits
PROC_LIMIT_ROWS = {
    "CPU": "Max cpu time",
    "AS": "Max address space",
    "NPROC": "Max processes",
    "NOFILE": "Max open files",
    "FSIZE": "Max file size",
    "CORE": "Max core file size",
}
_ROW = re.compile(r"^(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)", re.MULTILINE)


def requested_rlimits(limits: Limits, extra_processes: int = 0) -> dict[str, tuple[int, int]]:
    """(soft, hard) per rlimit, hard equal to soft so the command cannot raise any (at the CPU
    limit the kernel sends SIGKILL). `extra_processes` raises RLIMIT_NPROC by what the uid
    already runs (it counts every process of the uid, not of the run)."""
    nproc = limits.pids + extra_processes
    return {
        "CPU": (limits.cpu_seconds, limits.cpu_seconds),
        "AS": (limits.memory_bytes, limits.memory_bytes),
        "NPROC": (nproc, nproc),
        "NOFILE": (limits.open_files, limits.open_files),
        "FSIZE": (limits.file_size_bytes, limits.file_size_bytes),
        "CORE": (0, 0),
    }


def memory_problem(limits: Limits) -> str:
    """Why `limits` cannot start a program under RLIMIT_AS, or "" when they can."""
    if (memory := limits.memory_bytes) >= MIN_MEMORY_BYTES:
        return ""
    amount = format_bytes(memory) if memory >= MIB else f"{memory} B"
    return (
        f"the memory limit {amount} is too small to start a program (RLIMIT_AS also counts "
        f"its libraries): use at least {format_bytes(MIN_MEMORY_BYTES)}"
    )


def limit_label(name: str, limits: Limits) -> str:
    """The card's name of one rlimit with the value asked for, e.g. "RLIMIT_AS 256 MiB"."""
    value = {
        "CPU": f"{limits.cpu_seconds} s",
        "AS": format_bytes(limits.memory_bytes),
        "NPROC": str(limits.pids),
        "NOFILE": str(limits.open_files),
        "FSIZE": format_bytes(limits.file_size_bytes),
        "CORE": "0",
    }[name]
    return f"RLIMIT_{name} {value}"


def parse_limits(text: str) -> dict[str, tuple[int, int]]:
    """(soft, hard) by row title from /proc/PID/limits; "unlimited" is -1."""

    def number(word: str) -> int:
        return -1 if word == "unlimited" else int(word)

    return {m[1]: (number(m[2]), number(m[3])) for m in _ROW.finditer(text)}


def proc_texts(pid: int) -> tuple[str, str] | None:
    """The text of /proc/PID/limits and /proc/PID/status, or None when they cannot be read."""
    try:
        return (
            Path(f"/proc/{pid}/limits").read_text(encoding="utf-8"),
            Path(f"/proc/{pid}/status").read_text(encoding="utf-8"),
        )
    except OSError:
        return None


def parse_status(text: str) -> dict[str, str]:
    """The fields of /proc/PID/status."""
    return dict(
        (key, value.strip())
        for key, _, value in (line.partition(":") for line in text.splitlines())
    )


def limit_checks(
    limits: Limits, requested: dict[str, tuple[int, int]], limits_text: str
) -> list[tuple[str, bool]]:
    """One (label, held) pair per rlimit: held when the soft and hard limits read back are the
    ones asked."""
    applied = parse_limits(limits_text)
    return [
        (limit_label(name, limits), applied.get(PROC_LIMIT_ROWS[name]) == wanted)
        for name, wanted in requested.items()
    ]
