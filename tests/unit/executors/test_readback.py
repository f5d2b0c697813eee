"""Reading /proc/PID/limits and status back into the posture card's checks."""

from workbench.executors.process.readback import (
    limit_checks,
    parse_limits,
    parse_status,
    requested_rlimits,
)
from workbench.postures.model import MIB, Limits

LIMITS_TEXT = """\
Limit                     Soft Limit           Hard Limit           Units
Max cpu time              10                   11                   seconds
Max file size             268435456            268435456            bytes
Max data size             unlimited            unlimited            bytes
Max core file size        0                    0                    bytes
Max processes             128                  128                  processes
Max open files            256                  256                  files
Max address space         268435456            268435456            bytes
"""


def test_parse_limits() -> None:
    rows = parse_limits(LIMITS_TEXT)
    assert rows["Max cpu time"] == (10, 11)
    assert rows["Max data size"] == (-1, -1)
    assert rows["Max address space"] == (256 * MIB, 256 * MIB)


def test_parse_status() -> None:
    status = parse_status("Name:\tsleep\nUid:\t1000\t1000\t1000\t1000\nNoNewPrivs:\t1\n")
    assert status["Uid"].split()[0] == "1000"
    assert status["NoNewPrivs"] == "1"


def test_requested_rlimits_cannot_be_raised() -> None:
    requested = requested_rlimits(Limits(cpu_seconds=10, pids=128), extra_processes=5)
    assert all(soft == hard for soft, hard in requested.values())
    assert requested["CPU"] == (10, 10)
    assert requested["NPROC"] == (133, 133)
    assert requested["CORE"] == (0, 0)


def test_checks_compare_what_was_asked_with_what_is_applied() -> None:
    limits = Limits(cpu_seconds=10, memory_bytes=512 * MIB, file_size_bytes=256 * MIB)
    checks = dict(limit_checks(limits, requested_rlimits(limits), LIMITS_TEXT))
    assert checks["RLIMIT_CPU 10 s"] is False  # its hard limit 11 lets the command raise it
    assert checks["RLIMIT_FSIZE 256 MiB"] is True
    assert checks["RLIMIT_AS 512 MiB"] is False  # 256 MiB was applied, not 512
    assert checks["RLIMIT_CORE 0"] is True
    assert checks["RLIMIT_NOFILE 256"] is True
    assert checks["RLIMIT_NPROC 128"] is True
