"""The hardened exec wrapper: its arguments, its status report, and a real exec."""

import os
import subprocess
import sys
from pathlib import Path

from workbench.executors.hardened import limits_exec
from workbench.executors.hardened.limits_exec import decode_report, spec_args

WRAPPER = limits_exec.__file__


def test_spec_args() -> None:
    args = spec_args({"NOFILE": (64, 64), "CORE": (0, 0)}, 1234, 7, ["PATH", "LANG"])
    assert args == ["NOFILE=64:64", "CORE=0:0", "uid=1234", "fd=7", "env=PATH", "env=LANG", "--"]
    assert "uid=" not in " ".join(spec_args({}, None, 3, []))


def _wrap(*command: str, rlimits: dict[str, tuple[int, int]]) -> tuple[str, dict[str, str]]:
    read_fd, write_fd = os.pipe()
    args = spec_args(rlimits, None, write_fd, ["PATH", "KEEP_ME"])
    env = {"PATH": os.environ["PATH"], "KEEP_ME": "1", "DROP_ME": "1"}
    with subprocess.Popen(
        [sys.executable, "-I", "-S", WRAPPER, *args, *command],
        env=env,
        stdout=subprocess.PIPE,
        pass_fds=(write_fd,),
    ) as proc:
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as status:
            report = decode_report(status.read())
        out, _ = proc.communicate()
    return out.decode(), report


def test_wrapper_applies_limits_filters_env_and_reports() -> None:
    out, report = _wrap(
        "sh", "-c", 'ulimit -n; echo "${KEEP_ME:-}${DROP_ME:-}"', rlimits={"NOFILE": (64, 64)}
    )
    assert out == "64\n1\n"
    assert "error" not in report
    assert "Max open files            64" in report["limits"]
    assert "NoNewPrivs:\t1" in report["status"]


def test_wrapper_reports_a_missing_command() -> None:
    out, report = _wrap("no-such-command-q", rlimits={})
    assert out == ""
    assert report["error"] == "command not found: no-such-command-q"


def test_wrapper_reports_a_limit_it_may_not_set() -> None:
    beyond = int(Path("/proc/sys/fs/nr_open").read_text()) + 1  # above any hard limit, root's too
    out, report = _wrap("echo", "ran", rlimits={"NOFILE": (beyond, beyond)})
    assert out == ""
    assert report["error"] == (
        f"could not apply the hardened limits: RLIMIT_NOFILE {beyond}:{beyond}: "
        "not allowed to raise maximum limit"
    )
