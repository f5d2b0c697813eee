"""gVisor's process limit (RLIMIT_NPROC, known from the command's report) and network refusal."""

from typing import Any

import pytest

from workbench.executors.docker_outcome import ExecEnd, classify, fork_refused
from workbench.executors.docker_spec import network_refusal
from workbench.executors.runner import EndedBy
from workbench.executors.types import RunStatus
from workbench.monitor.container import CgroupCounters
from workbench.postures import MIB, Limits, Network, Posture, PostureId

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


def end(code: int, text: str) -> ExecEnd:
    counters = CgroupCounters(oom_kills=0, pids_max_hits=0)  # the sandbox's: they never rise
    return ExecEnd(EndedBy.EXIT, code, counters, counters, text, 0)


@pytest.mark.parametrize(("code", "text"), [(0, DASH), (254, BASH), (1, PYTHON)])
def test_a_refused_fork_under_gvisor_is_the_process_limit(code: int, text: str) -> None:
    assert classify(end(code, text), LIMITS, "sh", "runsc") == (RunStatus.LIMIT_EXCEEDED, REFUSED)


@pytest.mark.parametrize("text", [SOCKET, "all good\n", "a fork in the road\n"])
def test_other_output_is_not_taken_for_a_refused_fork(text: str) -> None:
    assert not fork_refused(text)
    assert classify(end(1, text), LIMITS, "sh", "runsc") == (
        RunStatus.FAILED,
        "exited with code 1",
    )


def test_an_exec_runsc_could_not_start_for_want_of_a_slot_is_the_process_limit() -> None:
    refused = (
        'OCI runtime exec failed: executing processes for container: executing command "echo '
        'alive" in sandbox: try again: unknown\r\n'
    )
    assert classify(end(126, refused), LIMITS, "echo", "runsc") == (
        RunStatus.LIMIT_EXCEEDED,
        "process limit 32 (RLIMIT_NPROC inside gVisor): no free process slot to start the command",
    )
    assert classify(end(1, refused), LIMITS, "echo", "runsc")[0] is RunStatus.FAILED


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
