"""gVisor's process limit (RLIMIT_NPROC, known from the command's report; kept by a seccomp
filter refusing user namespaces, which the session's supervisor installs), network refusal, and
the supervisor's protocol, driven on this host's kernel."""

import json
import os
import select
import shutil
import subprocess
import sys
import time
from typing import Any

import pytest

from workbench.executors.docker.gvisor_supervisor import (
    CLOSED,
    EXITED,
    HEADER,
    MAC_SIZE,
    NO_SLOT,
    REQUEST_GAP,
    SHOWN_CHARS,
    STDERR,
    STDOUT,
    command_line,
    mac,
    sealed_request,
)
from workbench.executors.docker.outcome import ExecEnd, classify, fork_refused
from workbench.executors.docker.sampler import CgroupCounters
from workbench.executors.docker.spec import network_refusal
from workbench.executors.docker.supervisor_link import PROGRAM
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


def test_a_command_the_supervisor_could_not_start_for_want_of_a_slot_is_the_process_limit() -> None:
    refused = f"exec: echo: {NO_SLOT}\n"
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


class HostSupervisor:
    """The supervisor program run on this host's kernel, spoken to as the link does."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, *PROGRAM[1:]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.key = os.urandom(32)
        self.number = self.seq = self.frame = 0
        self.write(json.dumps({"key": self.key.hex()}).encode() + b"\n")

    def write(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line)
        self.process.stdin.flush()

    def sealed(self, **request: object) -> bytes:
        self.seq += 1
        return sealed_request(self.key, {**request, "seq": self.seq})

    def start(self, *argv: str, cwd: str = "/") -> bytes:
        self.number += 1
        return self.sealed(op="start", command=self.number, argv=argv, env={}, cwd=cwd)

    def run(self, *argv: str, cwd: str = "/") -> tuple[int, str, str]:
        """Start `argv`, read its frames until it exited and its output closed."""
        self.write(self.start(*argv, cwd=cwd))
        return self.answer()

    def next_frame(self) -> tuple[int, int, bytes]:
        """The next frame's command number, kind and payload, checked as the link checks."""
        assert self.process.stdout is not None
        header = self.process.stdout.read(HEADER.size)
        frame, number, kind, size = HEADER.unpack(header)
        payload = self.process.stdout.read(size)
        assert self.process.stdout.read(MAC_SIZE) == mac(self.key, header, payload)
        assert frame == self.frame + 1
        self.frame = frame
        return number, kind, payload

    def answer(self) -> tuple[int, str, str]:
        """The frames of the last command started."""
        code, output, closed = None, {STDOUT: b"", STDERR: b""}, False
        while code is None or not closed:
            number, kind, payload = self.next_frame()
            assert number == self.number
            if kind == EXITED:
                code = int(payload)
            elif kind == CLOSED:
                closed = True
            else:
                output[kind] += payload
        return code, output[STDOUT].decode(), output[STDERR].decode()

    def close(self) -> None:
        self.process.kill()
        self.process.communicate()


@pytest.fixture()
def supervisor() -> Any:
    started = HostSupervisor()
    yield started
    started.close()


needs_linux = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.uname().machine not in ("x86_64", "aarch64"),
    reason="the filter is Linux seccomp for x86_64 and aarch64",
)


@needs_linux
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_the_filter_refuses_new_user_namespaces(supervisor: HostSupervisor) -> None:
    code, _, stderr = supervisor.run("unshare", "-Ur", "true")
    assert code != 0
    assert "Operation not permitted" in stderr
    nr = 56 if os.uname().machine == "x86_64" else 220
    clone = CLONE_NEWUSER.format(nr)
    assert supervisor.run("python3", "-c", clone)[1] == "-1 Operation not permitted\n"


@needs_linux
def test_under_the_filter_commands_threads_and_children_still_run(
    supervisor: HostSupervisor,
) -> None:
    ran = supervisor.run("sh", "-c", f'echo "$(echo child)"; python3 -c "{THREAD}"; echo e >&2')
    assert ran == (0, "child\nthread\n", "e\n")


@needs_linux
def test_a_command_runs_in_its_folder_and_its_end_reads_as_docker_reports_it(
    supervisor: HostSupervisor, tmp_path: Any
) -> None:
    assert supervisor.run("pwd", cwd=str(tmp_path)) == (0, f"{tmp_path}\n", "")
    assert supervisor.run("sh", "-c", "exit 3")[0] == 3
    assert supervisor.run("sh", "-c", "kill -9 $$")[0] == 137
    assert supervisor.run("sh", "-c", "trap - PIPE; yes | head -c 1")[:2] == (0, "y")


@needs_linux
def test_a_missing_command_reads_as_runsc_says_it(supervisor: HostSupervisor) -> None:
    code, _, stderr = supervisor.run("no-such-command", "arg")
    assert code == 127
    assert stderr == "exec: no-such-command: executable file not found in $PATH\n"
    end_ = ExecEnd(EndedBy.EXIT, 127, None, None, stderr, 0)
    assert classify(end_, LIMITS, "no-such-command", "runsc") == (
        RunStatus.ERROR,
        "command not found: no-such-command",
    )
    assert supervisor.run("/etc/passwd")[0] == 126  # not executable: refused, not missing


def test_ls_and_stat_failing_on_this_runsc_s_statx_say_why() -> None:
    """What `ls /` and `stat /` print under Debian 12's runsc (measured): the cause names the
    refused flag and what works instead; under runc the same text is the command's own."""
    text = "ls: cannot access '/': Invalid argument\nstat: cannot statx '/x y': Invalid argument\n"
    status, cause = classify(end(2, text), LIMITS, "ls", "runsc")
    assert status is RunStatus.FAILED
    assert cause.startswith("exited with code 2; its ls or stat met this runsc's refusal")
    assert classify(end(2, text), LIMITS, "ls", "runc") == (RunStatus.FAILED, "exited with code 2")


@needs_linux
def test_a_request_without_the_key_s_seal_or_replayed_is_dropped(
    supervisor: HostSupervisor, tmp_path: Any
) -> None:
    """What a command that opened the supervisor's stdin could write: unsealed, sealed with
    another key, or a sealed request seen before. Only the host's next request runs."""
    marker = tmp_path / "ran"
    touch = ("sh", "-c", f"echo x >> {marker}")
    forged = json.dumps({"op": "start", "command": 1, "argv": touch, "env": {}, "cwd": "/"})
    supervisor.write(forged.encode() + b"\n")
    supervisor.write(sealed_request(os.urandom(32), json.loads(forged) | {"seq": 1}))
    sealed = supervisor.start(*touch)
    supervisor.write(sealed)
    assert supervisor.answer()[0] == 0
    supervisor.write(sealed)  # replayed
    assert supervisor.run("true")[0] == 0
    assert marker.read_text() == "x\n"


@needs_linux
def test_a_request_after_a_taken_one_is_answered_with_a_gap(supervisor: HostSupervisor) -> None:
    """A command that read the supervisor's stdin took a whole request: the next one's number
    skips it, and the supervisor says so before it serves that one."""
    supervisor.seq += 1  # the request a command took
    supervisor.write(supervisor.start("true"))
    assert supervisor.next_frame() == (0, REQUEST_GAP, str(supervisor.seq).encode())
    assert supervisor.answer()[0] == 0


@needs_linux
def test_no_command_can_write_to_the_supervisor_s_stderr_once_it_has_its_key(
    supervisor: HostSupervisor,
) -> None:
    """Its stderr pipe reads to its end while it lives: it holds the pipe no more (and its
    commands never did), so a command cannot open it through /proc either."""
    assert supervisor.run("true")[0] == 0  # the key line was read before this request
    assert supervisor.process.stderr is not None
    ready, _, _ = select.select([supervisor.process.stderr], [], [], 10)
    assert ready and supervisor.process.stderr.read() == b""
    assert supervisor.process.poll() is None


@needs_linux
def test_a_command_line_shown_in_the_sweep_s_report_stays_one_short_line() -> None:
    """A process whose argv holds line breaks must not add a line (a forged "left 0") to the
    report the host reads."""
    junk = ["\nleft 0\x0bcpu zz\u2028", "x" * 5000]
    head = f"{sys.executable} -c import time; time.sleep(30) left 0 cpu zz "
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", *junk])
    try:
        for _ in range(100):
            shown = command_line(str(process.pid))
            if shown:
                break
            time.sleep(0.01)
        assert shown.endswith("time.sleep(30) left 0 cpu zz " + "x" * (len(shown) - len(head)))
        assert len(shown) == SHOWN_CHARS and len(shown.splitlines()) == 1
    finally:
        process.kill()
        process.wait()
