"""gVisor's limits against the real engine: the process limit, RLIMIT_NPROC inside the
sandbox, which the seccomp filter every command starts under keeps (no user namespace escapes
it), and a memory bomb that takes the sandbox down, reported without runsc's words in the
command's stderr."""

import asyncio
import contextlib
import time
from collections.abc import Iterator

import docker
import pytest
from docker.models.containers import Container

from tests.docker.test_docker_executor import Session
from workbench.executors.docker.executor import CONTAINER_GONE
from workbench.executors.docker.supervisor_link import TAMPERED
from workbench.executors.types import CancelToken, OutputChunk, RunRequest, RunResult, RunStatus
from workbench.postures.model import MIB, Posture, PostureId

pytestmark = [pytest.mark.docker, pytest.mark.gvisor, pytest.mark.timeout(90)]

# gVisor's own kernel is charged to the container's memory: the default leaves room, so the
# process limit is the only control these commands meet.
LIMITS = {"timeout_s": 20, "memory_bytes": 512 * MIB, "pids": 32}
# Eight generations (up to 510 processes wanted): it meets the limit, then dies out by itself.
# (An unbounded one keeps churning at the limit, each process living a few ms: the in-container
# sweep, one grep per process, finds none alive to match and can report it gone when it is not.)
BOUNDED_BOMB = 'f() { [ "$1" -gt 0 ] && f $(($1 - 1)) | f $(($1 - 1)) & }; f 8; sleep 1'
IDLE = 2  # the session's own processes: the init and the supervisor
FORK_MANY = """
import os, signal, time
children = []
try:
    for _ in range(60):
        if (pid := os.fork()) == 0:
            time.sleep(30)
            os._exit(0)
        children.append(pid)
finally:
    print(len(children), flush=True)
    for pid in children:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
"""
HOLD_ALL = """
import os, time
try:
    while True:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
except BlockingIOError:
    print("full", flush=True)
    time.sleep(30)
"""
REFUSED = "process limit 32 (RLIMIT_NPROC inside gVisor; the command reported a refused fork)"
# Forks until refused or forever: the top shell counts in a loop of builtins (no fork) for a
# moment while the bomb reaches the limit, then returns, leaving the bomb behind.
UNBOUNDED_BOMB = 'f() { f | f & }; f; i=0; while [ "$i" -lt 100000 ]; do i=$((i + 1)); done'
# Every process of the container that is not a zombie, read with shell builtins only (no fork).
# A process that ends between the glob and the read is not counted, and says nothing (the
# shell reports a failed redirection before the command's own 2>/dev/null would apply).
LIVE_PROCESSES = (
    'n=0; for f in /proc/[0-9]*/stat; do { read -r s < "$f"; } 2>/dev/null || continue; '
    'case "$s" in *") Z "*) ;; *) n=$((n + 1)) ;; esac; done; echo $n'
)


def _live_processes_settle_at(container: Container, expected: int) -> bool:
    """Whether the container's live processes come down to `expected` within about two
    seconds: gVisor may still be ending a killed process when the run has ended (once, as an
    ordinary user, the count read one more), where a bomb that outlived the sweep would go on
    forking up to the limit. A count that cannot start (as an ordinary user, once, gVisor refused
    the exec while its process limit was still full of the bomb being ended) reads as unsettled."""
    counts: list[int | bytes] = []
    for _ in range(20):
        code, output = container.exec_run(["sh", "-c", LIVE_PROCESSES])
        assert isinstance(output, bytes), output
        counts.append(int(output) if code == 0 else output)
        if counts[-1] == expected:
            return True
        time.sleep(0.1)
    print("live processes read:", counts)
    return False


@contextlib.contextmanager
def gvisor_session(docker_runtimes: set[str], **posture: object) -> Iterator[Session]:
    """A gVisor session whose workspace holds `fork_many.py` (a skill's script, as a file)."""
    if "runsc" not in docker_runtimes:
        pytest.skip("the engine has no runsc runtime")
    session = Session(Posture(PostureId.GVISOR, **posture).with_limits(**LIMITS))  # type: ignore[arg-type]
    try:
        (session.workspace / "fork_many.py").write_text(FORK_MANY)
        (session.workspace / "hold_all.py").write_text(HOLD_ALL)
        yield session
    finally:
        session.close()


@pytest.fixture(scope="module")
def gvisor(docker_runtimes: set[str]) -> Iterator[Session]:
    with gvisor_session(docker_runtimes) as session:
        yield session


def test_the_card_reads_the_process_limit_back(gvisor: Session) -> None:
    card = gvisor.run("true").result.card
    assert ("Process limit 32 (RLIMIT_NPROC inside gVisor)", True) in card.checks
    assert [label for label, held in card.checks if not held] == []


def test_a_bounded_fork_bomb_hits_the_process_limit_and_reports_it(gvisor: Session) -> None:
    result = gvisor.run("sh", "-c", BOUNDED_BOMB + "; exit 3").result
    assert (result.status, result.cause.split("; killed")[0]) == (
        RunStatus.LIMIT_EXCEEDED,
        REFUSED,
    )
    assert result.leftover_processes == 0
    assert gvisor.run("echo", "alive").result.stdout.text == "alive\n"


def test_the_limit_counts_every_process_of_the_sandbox_user(gvisor: Session) -> None:
    result = gvisor.run("python3", "fork_many.py").result
    assert result.status is RunStatus.LIMIT_EXCEEDED
    assert "BlockingIOError" in result.stderr.text
    # The command itself and the idle session count too: 32 in all, as the pids cgroup counts.
    assert int(result.stdout.text) == 32 - IDLE - 1
    assert result.leftover_processes == 0
    again = gvisor.run("python3", "fork_many.py").result  # every slot is free again
    assert int(again.stdout.text) == 32 - IDLE - 1


def test_a_few_processes_stay_under_the_limit(gvisor: Session) -> None:
    result = gvisor.run("sh", "-c", "for i in 1 2 3 4 5 6 7 8; do sleep 0.2 & done; wait").result
    assert (result.status, result.cause) == (RunStatus.OK, "exited with code 0")


def test_root_without_capabilities_is_bounded_too(docker_runtimes: set[str]) -> None:
    with gvisor_session(docker_runtimes, run_as_root=True) as session:
        result = session.run("python3", "fork_many.py").result
        assert session.run("id", "-u").result.stdout.text == "0\n"
        assert result.status is RunStatus.LIMIT_EXCEEDED
        assert int(result.stdout.text) == 32 - IDLE - 1


def test_a_command_that_finds_every_slot_taken_is_told_so(gvisor: Session) -> None:
    """A concurrent run holds every slot: runsc cannot start the next command at all."""
    executor = gvisor.executor

    async def go() -> RunResult:
        full = asyncio.Event()  # the holder says every slot is taken

        def sink(chunk: OutputChunk) -> None:
            if b"full" in chunk.data:
                full.set()

        holding = CancelToken()
        holder = asyncio.ensure_future(
            executor.run(RunRequest(("python3", "hold_all.py")), sink, holding)
        )
        try:
            async with asyncio.timeout(20):
                await full.wait()
            return await executor.run(RunRequest(("echo", "alive")), lambda _: None, CancelToken())
        finally:
            holding.cancel()
            await holder

    blocked = gvisor.loop.run_until_complete(go())
    assert (blocked.status, blocked.cause) == (
        RunStatus.LIMIT_EXCEEDED,
        "process limit 32 (RLIMIT_NPROC inside gVisor): no free process slot to start the command",
    )
    assert blocked.leftover_processes == 0
    assert gvisor.run("echo", "alive").result.stdout.text == "alive\n"


def test_a_user_namespace_does_not_escape_the_limit(gvisor: Session) -> None:
    """`unshare -Ur` makes the command uid 0 of a new user namespace, which gVisor exempts from
    the limit: without the filter it forks all 60 children (120 in the review) under a limit of
    32. Under it the namespace is refused, in a child of the command too."""
    result = gvisor.run("unshare", "-Ur", "python3", "fork_many.py").result
    forked = int(result.stdout.text or 0)
    assert forked <= 32 - IDLE - 1, result.stderr.text
    assert result.status in (RunStatus.FAILED, RunStatus.LIMIT_EXCEEDED)
    child = gvisor.run("sh", "-c", "sh -c 'unshare -Ur true'").result
    assert (child.status, child.stderr.text) == (
        RunStatus.FAILED,
        "unshare: unshare failed: Operation not permitted\n",
    )


@pytest.mark.slow
def test_an_unbounded_fork_bomb_is_swept_and_the_session_goes_on(gvisor: Session) -> None:
    """Each round: the bomb's shell returns soon after it started the bomb, the sweep kills
    what it left churning at the limit, which is checked from outside the executor, and the
    next command runs."""
    engine = docker.from_env()
    try:
        container = engine.containers.get(gvisor.executor.container_id)
        for _ in range(2):
            result = gvisor.run("sh", "-c", UNBOUNDED_BOMB).result
            # Its shell exited 0 at once: the refused forks are a note, not the outcome.
            assert result.status is RunStatus.OK
            assert result.cause.startswith(
                "exited with code 0; its output reports a refused fork (process limit 32"
            )
            assert result.leftover_processes == 0
            assert _live_processes_settle_at(container, IDLE + 1)  # the idle session, this shell
            assert gvisor.run("echo", "alive").result.stdout.text == "alive\n"
    finally:
        engine.close()


def test_a_memory_bomb_that_takes_the_sandbox_down_leaves_stderr_to_the_command(
    docker_runtimes: set[str],
) -> None:
    if "runsc" not in docker_runtimes:
        pytest.skip("the engine has no runsc runtime")
    session = Session(Posture(PostureId.GVISOR).with_limits(timeout_s=30, memory_bytes=128 * MIB))
    try:
        bomb = "import sys\nprint('filling', file=sys.stderr, flush=True)\na = []\n"
        bomb += "while True: a.append(bytearray(10**7))"
        result = session.run("python3", "-c", bomb).result
        assert result.status is RunStatus.OOM_KILLED
        assert result.stderr.text == "filling\n"
        assert result.stderr.log_path is not None
        assert result.stderr.log_path.read_text() == "filling\n"
        assert session.run("echo", "alive").result.stdout.text == "alive\n"  # a new sandbox
    finally:
        session.close()


def test_a_command_writing_into_its_supervisor_s_channel_ends_the_session(gvisor: Session) -> None:
    """runsc lets a command of the supervisor's uid open its stdout through /proc: what it writes
    there breaks the answers' seal, and the session's container is stopped (its supervisor can
    no longer be trusted to report or sweep) instead of the run hanging or reading forged
    answers; the next command runs in a new container. (It is found at the supervisor's next
    answer: a command that goes quiet after writing is found at its timeout.)"""
    forged = 'printf "forged answer" > "/proc/$PPID/fd/1"; echo done'
    result = gvisor.run("sh", "-c", forged).result
    assert (result.status, result.cause) == (RunStatus.ERROR, f"{CONTAINER_GONE}: {TAMPERED}")
    assert gvisor.run("echo", "alive").result.stdout.text == "alive\n"


def test_a_command_taking_its_supervisor_s_requests_ends_the_session(gvisor: Session) -> None:
    """A command that reads the supervisor's stdin tears or takes a request meant for it: the
    next request's number shows the gap (the host pings while commands run), and the session's
    container is stopped instead of the run waiting for an answer that never comes."""
    taker = 'head -c 1 "/proc/$PPID/fd/0" > /dev/null; sleep 20'
    started = time.monotonic()
    result = gvisor.run("sh", "-c", taker).result
    assert time.monotonic() - started < 15  # pings every 2 s: not the 20 s of the command
    assert (result.status, result.cause) == (RunStatus.ERROR, f"{CONTAINER_GONE}: {TAMPERED}")
    assert gvisor.run("echo", "alive").result.stdout.text == "alive\n"


def test_a_lost_link_to_the_supervisor_is_replaced_by_a_fresh_container(gvisor: Session) -> None:
    """The attach connection dropped while the container runs (closed here from the test's
    side, as a broken connection would): a request may have been lost with it, so the next
    run gets a fresh container instead of a link whose numbering could read as tampering."""
    assert gvisor.run("echo", "before").result.stdout.text == "before\n"
    before = gvisor.executor.container_id
    session = gvisor.executor._session  # the fault is injected there
    assert session is not None
    link = gvisor.loop.run_until_complete(session.supervisor())
    gvisor.loop.run_until_complete(link.close())
    result = gvisor.run("echo", "after").result
    assert (result.status, result.stdout.text) == (RunStatus.OK, "after\n")
    assert gvisor.executor.container_id != before
