"""gVisor's process limit (RLIMIT_NPROC, known from the command's report; kept by a seccomp
filter refusing user namespaces), network refusal, and runsc's report of a lost sandbox kept
out of the command's stderr."""

import os
import shutil
import subprocess
import sys
from typing import Any

import pytest

from workbench.executors.docker.gvisor_seccomp import wrapped
from workbench.executors.docker.outcome import (
    ExecEnd,
    classify,
    fork_refused,
    sandbox_notes,
    split_sandbox_report,
)
from workbench.executors.docker.sampler import CgroupCounters
from workbench.executors.docker.spec import network_refusal
from workbench.executors.process.runner import EndedBy
from workbench.executors.types import RunStatus
from workbench.postures.model import MIB, Limits, Network, Posture, PostureId

LIMITS = Limits(timeout_s=5, memory_bytes=256 * MIB, pids=32)
REFUSED = "process limit 32 (RLIMIT_NPROC inside gVisor; the command reported a refused fork)"
# What the sandbox image's shells and Python print when gVisor refuses a fork (measured).
DASH = "sh: 1: Cannot fork\n"
BASH = "bash: fork: retry: Resource temporarily unavailable\nbash: fork: Interrupted system call\n"
PYTHON = (
    'Traceback (most recent call last):\n  File "/s.py", line 2, in <module>\n'
    "    os.fork()\nBlockingIOError: [Errno 11] Resource temporarily unavailable\n"
)
SOCKET = (
    'Traceback (most recent call last):\n  File "/s.py", line 3, in <module>\n'
    "    s.recv(1)\nBlockingIOError: [Errno 11] Resource temporarily unavailable\n"
)


def end(code: int, text: str, stderr: bool = True) -> ExecEnd:
    """An exec that printed `text` (to stderr, or else to stdout) and exited with `code`."""
    counters = CgroupCounters(oom_kills=0, pids_max_hits=0)  # the sandbox's: they never rise
    return ExecEnd(EndedBy.EXIT, code, counters, counters, text, 0, text if stderr else "")


@pytest.mark.parametrize(("code", "text"), [(2, DASH), (254, BASH), (1, PYTHON), (137, DASH)])
def test_a_failed_run_that_reports_a_refused_fork_under_gvisor_is_the_process_limit(
    code: int, text: str
) -> None:
    assert classify(end(code, text), LIMITS, "sh", "runsc") == (RunStatus.LIMIT_EXCEEDED, REFUSED)


@pytest.mark.parametrize("text", [DASH, "log line: sh: 1: Cannot fork\n"])
def test_a_run_that_exited_0_stays_ok_whatever_it_printed(text: str) -> None:
    assert classify(end(0, text), LIMITS, "sh", "runsc") == (
        RunStatus.OK,
        "exited with code 0; its output reports a refused fork "
        "(process limit 32, RLIMIT_NPROC inside gVisor)",
    )


@pytest.mark.parametrize("text", [SOCKET, "all good\n", "a fork in the road\n"])
def test_other_output_is_not_taken_for_a_refused_fork(text: str) -> None:
    assert not fork_refused(text)
    assert classify(end(1, text), LIMITS, "sh", "runsc") == (
        RunStatus.FAILED,
        "exited with code 1",
    )


def test_an_exec_runsc_could_not_start_for_want_of_a_slot_is_the_process_limit() -> None:
    command = " ".join(wrapped(["echo", "alive"]))  # the loader's source, echoed by runsc
    refused = (
        "OCI runtime exec failed: executing processes for container: executing command "
        f'"{command}" in sandbox: try again: unknown\r\n'
    )
    assert classify(end(126, refused), LIMITS, "echo", "runsc") == (
        RunStatus.LIMIT_EXCEEDED,
        "process limit 32 (RLIMIT_NPROC inside gVisor): no free process slot to start the command",
    )
    assert classify(end(1, refused), LIMITS, "echo", "runsc")[0] is RunStatus.FAILED


def test_a_refused_fork_printed_to_stdout_is_not_the_process_limit() -> None:
    assert classify(end(1, DASH, stderr=False), LIMITS, "sh", "runsc") == (
        RunStatus.FAILED,
        "exited with code 1",
    )


def test_under_runc_only_the_pids_counter_decides() -> None:
    assert classify(end(2, DASH), LIMITS, "sh", "runc") == (RunStatus.FAILED, "exited with code 2")


def test_the_timeout_still_wins_over_a_refused_fork() -> None:
    timed_out = ExecEnd(EndedBy.TIMEOUT, 137, None, None, DASH, 0)
    assert classify(timed_out, LIMITS, "sh", "runsc")[0] is RunStatus.TIMED_OUT


class Engine:
    """A client whose `info()` is the engine's answer (only `Runtimes` is read)."""

    def __init__(self, runsc_args: list[str] | None) -> None:
        self.runtimes: dict[str, Any] = {"runc": {"path": "runc"}}
        if runsc_args is not None:
            self.runtimes["runsc"] = {"path": "/usr/bin/runsc", "runtimeArgs": runsc_args}
        self.asked = 0

    def info(self) -> dict[str, Any]:
        self.asked += 1
        return {"Runtimes": self.runtimes}


@pytest.mark.parametrize(
    "args", [["--network=none"], ["--debug", "--network", "none"], ["-network=none"]]
)
def test_a_network_runsc_cannot_give_is_refused(args: list[str]) -> None:
    bridge = Posture(PostureId.GVISOR, network=Network.BRIDGE)
    refusal = network_refusal(bridge, "runsc", Engine(args))  # type: ignore[arg-type]
    assert refusal.startswith("Network cannot be turned on under this engine's gVisor runtime")
    assert "--network=none" in refusal


@pytest.mark.parametrize(
    ("posture", "runtime", "args"),
    [
        (Posture(PostureId.GVISOR, network=Network.BRIDGE), "runsc", []),
        (Posture(PostureId.GVISOR, network=Network.BRIDGE), "runsc", ["--network=sandbox"]),
        (Posture(PostureId.DOCKER, network=Network.BRIDGE), "runc", ["--network=none"]),
    ],
)
def test_a_network_the_runtime_can_give_is_not_refused(
    posture: Posture, runtime: str, args: list[str]
) -> None:
    assert network_refusal(posture, runtime, Engine(args)) == ""  # type: ignore[arg-type]


def test_no_network_asked_needs_no_engine_call() -> None:
    engine = Engine(["--network=none"])
    assert network_refusal(Posture(PostureId.GVISOR), "runsc", engine) == ""  # type: ignore[arg-type]
    assert engine.asked == 0


# clone(CLONE_NEWUSER | SIGCHLD) by syscall number: the child exits, the parent prints the result.
CLONE_NEWUSER = (
    "import ctypes, os; r = ctypes.CDLL(None, use_errno=True).syscall({}, 0x10000011, 0, 0, 0, 0)"
    "; r == 0 and os._exit(0); print(r, os.strerror(ctypes.get_errno()))"
)
THREAD = (
    "import threading; t = threading.Thread(target=print, args=('thread',)); t.start(); t.join()"
)


def under_filter(*argv: str) -> subprocess.CompletedProcess[str]:
    """`argv` run on this host's kernel through the loader gVisor commands start under."""
    loader = wrapped(list(argv))
    assert loader[0] == "python3"
    return subprocess.run([sys.executable, *loader[1:]], capture_output=True, text=True, timeout=30)


needs_linux = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.uname().machine not in ("x86_64", "aarch64"),
    reason="the filter is Linux seccomp for x86_64 and aarch64",
)


@needs_linux
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_the_filter_refuses_new_user_namespaces() -> None:
    refused = under_filter("unshare", "-Ur", "true")
    assert refused.returncode != 0
    assert "Operation not permitted" in refused.stderr
    nr = 56 if os.uname().machine == "x86_64" else 220
    clone = CLONE_NEWUSER.format(nr)
    assert under_filter("python3", "-c", clone).stdout == "-1 Operation not permitted\n"


@needs_linux
def test_under_the_filter_commands_threads_and_children_still_run() -> None:
    ran = under_filter("sh", "-c", f'echo "$(echo child)"; python3 -c "{THREAD}"')
    assert (ran.returncode, ran.stdout) == (0, "child\nthread\n")


@needs_linux
def test_a_missing_command_reads_as_runsc_says_it() -> None:
    missing = under_filter("no-such-command", "arg")
    assert missing.returncode == 127
    assert missing.stderr == "exec: no-such-command: executable file not found in $PATH\n"
    end_ = ExecEnd(EndedBy.EXIT, 127, None, None, missing.stderr, 0)
    assert classify(end_, LIMITS, "no-such-command", "runsc") == (
        RunStatus.ERROR,
        "command not found: no-such-command",
    )


def test_an_image_without_the_loader_says_so() -> None:
    command = " ".join(wrapped(["echo", "hi"]))
    missing = (  # what runsc answered for an image without python3 (measured)
        "OCI runtime exec failed: executing processes for container: executing command "
        f'"{command}" in sandbox: error finding executable "python3" in PATH [/usr/bin /bin]: '
        "no such file or directory: unknown\r\n"
    )
    assert classify(end(126, missing), LIMITS, "echo", "runsc") == (
        RunStatus.ERROR,
        "the image has no python3, which every gVisor command starts under (it installs the "
        "seccomp filter that keeps the process limit)",
    )
    assert classify(end(126, missing), LIMITS, "echo", "runc")[1] == "command not found: echo"


def test_only_runsc_s_report_on_this_sandbox_ending_the_chunk_leaves_stderr() -> None:
    sandbox = "ab" * 32
    report = (
        f'waiting on pid 4: waiting on PID 4 in sandbox "{sandbox}": '
        'urpc method "containerManager.WaitPID" failed: EOF\n'
    )
    assert split_sandbox_report(b"out\n" + report.encode(), sandbox) == (b"out\n", report.strip())
    forged = report.replace(sandbox, "cd" * 32).encode()  # a command printing it for another
    assert split_sandbox_report(forged, sandbox) == (forged, "")
    followed = report.encode() + b"more\n"  # the command went on: it printed the line itself
    assert split_sandbox_report(followed, sandbox) == (followed, "")
    (note,) = sandbox_notes([report.strip()])
    assert note.text.endswith(report.strip()) and sandbox_notes([]) == ()


def test_ls_and_stat_failing_on_this_runsc_s_statx_say_why() -> None:
    """What `ls /` and `stat /` print under Debian 12's runsc (measured): the cause names the
    refused flag and what works instead; under runc the same text is the command's own."""
    text = "ls: cannot access '/': Invalid argument\nstat: cannot statx '/x y': Invalid argument\n"
    status, cause = classify(end(2, text), LIMITS, "ls", "runsc")
    assert status is RunStatus.FAILED
    assert cause.startswith("exited with code 2; its ls or stat met this runsc's refusal")
    assert classify(end(2, text), LIMITS, "ls", "runc") == (RunStatus.FAILED, "exited with code 2")
