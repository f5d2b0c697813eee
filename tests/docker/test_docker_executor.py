"""The docker and gvisor postures against the real engine: one session container per module."""

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import psutil
import pytest

from tests.fds import held_open
from workbench.errors import ExecutorError
from workbench.executors.docker import executor as docker_executor
from workbench.executors.docker.executor import (
    CONTAINER_GONE,
    HALTED_FOR_ESCAPEE,
    DockerExecutor,
)
from workbench.executors.docker.sampler import ContainerSampler
from workbench.executors.docker.session import remove_leftovers
from workbench.executors.docker.spec import LABEL_APP, RUNC_IDLE_TASKS
from workbench.executors.types import (
    CancelToken,
    OutputChunk,
    RunRequest,
    RunResult,
    RunStatus,
    SessionSpec,
    Stream,
)
from workbench.monitor.process import run_tag
from workbench.monitor.sample import ResourceSample
from workbench.postures.model import MIB, Posture, PostureId

pytestmark = [pytest.mark.docker, pytest.mark.timeout(90)]
# Under runc, the wait before a halt for a command that outlived its sweeps, in the tests that
# halt (the product's is `DRAIN_S`): the same path to the same halt, sooner.
IMPATIENT_DRAIN_S = 1.5


@dataclass
class Ran:
    result: RunResult
    chunks: list[OutputChunk] = field(default_factory=list)
    samples: list[ResourceSample] = field(default_factory=list)


class Session:
    """A started executor on a fresh skill folder and workspace, with its own event loop."""

    def __init__(self, posture: Posture) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="wb-docker-"))
        self.skill_dir = self.base / "skill"
        self.workspace = self.base / "workspace"
        self.skill_dir.mkdir()
        self.workspace.mkdir()
        (self.skill_dir / "SKILL.md").write_text("---\nname: demo\n---\n")
        for folder in (self.base, self.skill_dir):
            folder.chmod(0o755)
        spec = SessionSpec(self.skill_dir, "demo", self.workspace, self.base / "runs")
        self.loop = asyncio.new_event_loop()
        self.executor = DockerExecutor(posture)
        started = time.perf_counter()
        self.loop.run_until_complete(self.executor.start(spec))
        self.start_seconds = time.perf_counter() - started

    def run(self, *argv: str, cancel_after: float | None = None, **request: object) -> Ran:
        ran = Ran(result=None)  # type: ignore[arg-type]
        req = RunRequest(tuple(argv), on_sample=ran.samples.append, **request)  # type: ignore[arg-type]
        cancel = CancelToken()

        async def go() -> RunResult:
            if cancel_after is not None:
                self.loop.call_later(cancel_after, cancel.cancel)
            return await self.executor.run(req, ran.chunks.append, cancel)

        ran.result = self.loop.run_until_complete(go())
        return ran

    def close(self) -> None:
        self.loop.run_until_complete(self.executor.stop())
        self.loop.run_until_complete(self.executor.stop())  # idempotent
        self.loop.close()
        shutil.rmtree(self.base, ignore_errors=True)


LIMITS = {"timeout_s": 2, "memory_bytes": 64 * MIB, "pids": 32}


@pytest.fixture(scope="module")
def docker_session(docker_runtimes: set[str]) -> Iterator[Session]:
    session = Session(Posture(PostureId.DOCKER).with_limits(**LIMITS))
    yield session
    session.close()


@pytest.fixture(scope="module", params=["docker", pytest.param("gvisor", marks=pytest.mark.gvisor)])
def any_session(request: pytest.FixtureRequest, docker_runtimes: set[str]) -> Iterator[Session]:
    """A session of each container posture (gVisor only where the engine has runsc)."""
    posture_id = PostureId(request.param)
    if posture_id is PostureId.GVISOR and "runsc" not in docker_runtimes:
        pytest.skip("the engine has no runsc runtime")
    # gVisor's sandbox (its own memory) is charged to the container's cgroup: 64 MiB leaves
    # commands short of memory.
    gvisor = {"memory_bytes": 256 * MIB}
    limits = {**LIMITS, **gvisor} if posture_id is PostureId.GVISOR else LIMITS
    session = Session(Posture(posture_id).with_limits(**limits))
    yield session
    session.close()


def test_output_streams_live_and_apart(any_session: Session) -> None:
    ran = any_session.run("sh", "-c", "echo out; echo err >&2; sleep 0.5; echo late")
    assert ran.result.status is RunStatus.OK
    assert (ran.result.stdout.text, ran.result.stderr.text) == ("out\nlate\n", "err\n")
    first = next(c for c in ran.chunks if c.stream is Stream.STDOUT)
    assert first.data == b"out\n" and first.t < 0.45 < ran.result.wall_seconds
    assert any(c.stream is Stream.STDERR and c.data == b"err\n" for c in ran.chunks)
    assert ran.result.stdout.log_path is not None
    assert ran.result.stdout.log_path.read_bytes() == b"out\nlate\n"


def test_exit_codes_and_signals(any_session: Session) -> None:
    failed = any_session.run("sh", "-c", "exit 3").result
    assert (failed.status, failed.exit_code, failed.signal) == (RunStatus.FAILED, 3, None)
    killed = any_session.run("sh", "-c", "kill -9 $$").result
    assert (killed.status, killed.exit_code, killed.signal) == (RunStatus.FAILED, None, 9)
    assert killed.cause == "killed by signal SIGKILL"
    missing = any_session.run("no-such-command").result
    assert (missing.status, missing.cause) == (
        RunStatus.ERROR,
        "command not found: no-such-command",
    )
    assert missing.stdout.text == ""  # the runtime's own words are a note, not the output
    assert missing.stdout.log_path is not None and missing.stdout.log_path.read_bytes() == b""


@pytest.mark.parametrize(
    ("limits", "said"),
    [
        ({"memory_bytes": 1}, "The memory limit 1 byte is below 6 MiB, the least a container"),
        ({"cpus": 0.001}, "The CPU limit 0.001 is outside what the engine can give: from 0.01"),
        ({"cpus": 4096.0}, "The CPU limit 4096 is outside what the engine can give: from 0.01"),
    ],
)
def test_limits_the_engine_would_refuse_are_refused_in_words(
    docker_runtimes: set[str], tmp_path: Path, limits: dict[str, float], said: str
) -> None:
    executor = DockerExecutor(Posture(PostureId.DOCKER).with_limits(**limits))
    refused = refused_at_start(executor, SessionSpec(tmp_path, "demo", tmp_path, tmp_path / "runs"))
    assert str(refused).startswith(said)
    assert executor.container_id == ""


def refused_at_start(executor: DockerExecutor, spec: SessionSpec) -> ExecutorError:
    """The error `executor` refuses to start with (it is stopped either way)."""

    async def start_and_stop() -> None:
        try:
            await executor.start(spec)
        finally:
            await executor.stop()

    with pytest.raises(ExecutorError) as refused:
        asyncio.run(start_and_stop())
    return refused.value


def test_env_working_folder_and_mounts(any_session: Session) -> None:
    script = 'printf "%s|%s|%s|%s" "$SKILL_DIR" "$WORKSPACE" "$(pwd)" "$EXTRA"; echo hi > out.txt'
    ran = any_session.run("sh", "-c", script, env={"EXTRA": "asked-for"})
    assert ran.result.stdout.text == "/mnt/skills/demo|/workspace|/workspace|asked-for"
    written = any_session.workspace / "out.txt"
    assert written.read_text() == "hi\n"
    assert written.stat().st_uid == os.getuid()  # lent to uid 1000 for the run when root
    skill = any_session.run("sh", "-c", 'cat "$SKILL_DIR/SKILL.md" && touch "$SKILL_DIR/x"').result
    assert skill.status is RunStatus.FAILED
    assert skill.stdout.text.startswith("---")
    assert "/mnt/skills/demo/x" in skill.stderr.text


def _runc(session: Session) -> bool:
    """gVisor checks permissions before the read-only mount: EACCES where runc says EROFS."""
    return session.executor.runtime == "runc"


def test_write_to_the_root_names_the_read_only_root(any_session: Session) -> None:
    result = any_session.run("sh", "-c", "echo x > /etc/x").result
    assert result.status is RunStatus.FAILED
    if _runc(any_session):
        assert result.cause.startswith("exited with code ")
        assert result.cause.endswith(" after a write to the read-only root filesystem")
    tmp = any_session.run("sh", "-c", "echo x > /tmp/x && cat /tmp/x").result
    assert tmp.stdout.text == "x\n"  # the size-capped tmpfs is writable


def test_network_is_none(docker_session: Session) -> None:
    ran = docker_session.run("sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
    assert ran.result.stdout.text.split() == ["lo"]


def test_card_checklist_all_held(any_session: Session) -> None:
    card = any_session.run("true").result.card
    failed = [label for label, held in card.checks if not held]
    assert card.checks and failed == []
    runtime = [label for label, _ in card.checks if label.startswith("Runtime ")]
    assert runtime == [f"Runtime {any_session.executor.runtime}"]


def test_timeout_kills_inside_and_the_next_command_works(any_session: Session) -> None:
    started = time.monotonic()
    result = any_session.run("sh", "-c", "sleep 60 & sleep 60").result
    assert time.monotonic() - started < 3.5
    assert (result.status, result.cause) == (RunStatus.TIMED_OUT, "wall-clock timeout of 2 s")
    assert result.leftover_processes == 0
    gvisor = any_session.executor.runtime == "runsc"  # gVisor's count is not known: 0
    assert result.peak_processes >= (0 if gvisor else 2)
    assert _container_processes(any_session) == []
    assert any_session.run("echo", "next").result.stdout.text == "next\n"


def test_stop_cancels_inside(any_session: Session) -> None:
    started = time.monotonic()
    result = any_session.run("sh", "-c", "setsid sleep 60 & sleep 60", cancel_after=0.3).result
    assert time.monotonic() - started < 1.5
    assert (result.status, result.cause) == (RunStatus.CANCELLED, "stopped by the user")
    assert result.leftover_processes == 0
    assert _container_processes(any_session) == []


def test_cancelling_the_run_task_still_kills_inside(docker_session: Session) -> None:
    request = RunRequest(("sh", "-c", "setsid sleep 60 & sleep 60"))

    async def go() -> None:
        run = docker_session.executor.run(request, lambda c: None, CancelToken())
        task = asyncio.ensure_future(run)
        await asyncio.sleep(0.4)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    docker_session.loop.run_until_complete(go())
    assert _container_processes(docker_session) == []


def test_a_run_cancelled_after_its_command_still_closes_its_logs(
    docker_session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled while it asks whether the container still runs, after the command ended,
    the run leaves no log open, and its log holds the whole output."""
    session = docker_session.executor._session
    assert session is not None
    printed, asking = asyncio.Event(), asyncio.Event()
    running = session.running

    async def hangs_once_printed(*args: Any) -> bool:
        if printed.is_set():
            asking.set()
            await asyncio.Event().wait()
        return await running(*args)

    monkeypatch.setattr(session, "running", hangs_once_printed)
    request = RunRequest(("echo", "every byte"))

    def heard(chunk: OutputChunk) -> None:
        printed.set()

    async def go() -> None:
        task = asyncio.ensure_future(docker_session.executor.run(request, heard, CancelToken()))
        await asyncio.wait_for(asking.wait(), 20)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    docker_session.loop.run_until_complete(go())
    log = docker_session.base / "runs" / request.run_id / "stdout.log"
    deadline = time.monotonic() + 5
    while held_open(log) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not held_open(log)
    assert log.read_text() == "every byte\n"


def test_background_leftovers_are_killed_and_reported(any_session: Session) -> None:
    result = any_session.run("sh", "-c", "setsid sleep 60 & echo done").result
    assert (result.status, result.stdout.text) == (RunStatus.OK, "done\n")
    assert result.cause == "exited with code 0; killed 1 background process it left behind"
    assert result.wall_seconds < 1.5  # not the engine's 2 s wait for the stream to close
    assert _container_processes(any_session) == []


LIST_COMMANDS = 'for f in /proc/[0-9]*/cmdline; do tr "\\0" " " < "$f"; echo; done'


@pytest.mark.parametrize(
    "escape",
    [
        "(env -i sh -c 'sleep 77 & exit' </dev/null >/dev/null 2>&1 &)",
        "(env -i setsid sleep 77 </dev/null >/dev/null 2>&1 &)",
    ],
)
def test_an_untagged_escapee_is_killed_and_named(any_session: Session, escape: str) -> None:
    result = any_session.run("sh", "-c", f"{escape}; sleep 0.5; echo done").result
    assert (result.status, result.stdout.text) == (RunStatus.OK, "done\n")
    assert result.leftover_processes == 0
    assert "killed 1 background process it left behind" in result.cause
    assert any("'sleep 77'" in w.text for w in result.warnings), result.warnings
    listed = any_session.run("sh", "-c", LIST_COMMANDS).result.stdout.text.splitlines()
    assert "sleep 77 " not in listed


@pytest.mark.parametrize("made_up", ["made-up", "session"])  # the second is the session's own
def test_an_orphan_with_a_made_up_run_tag_is_killed(any_session: Session, made_up: str) -> None:
    escape = f"(env WORKBENCH_RUN_ID={made_up} setsid sleep 78 </dev/null >/dev/null 2>&1 &)"
    result = any_session.run("sh", "-c", f"{escape}; sleep 0.5; echo done").result
    assert (result.status, result.stdout.text) == (RunStatus.OK, "done\n")
    assert "killed 1 background process it left behind" in result.cause
    assert _container_processes(any_session) == []
    assert any_session.run("echo", "alive").result.stdout.text == "alive\n"


def test_an_escapee_whose_name_fakes_a_parent_is_killed(docker_session: Session) -> None:
    """A process name may hold a line break: the first line of its stat then shows a parent
    of the name's choosing (55 here), which must not make an untagged orphan look adopted."""
    rename = "open('/proc/self/comm', 'w').write('a) S 55\\n'); import time; time.sleep(82)"
    escape = f'(env -i python3 -c "{rename}" </dev/null >/dev/null 2>&1 &)'
    result = docker_session.run("sh", "-c", f"{escape}; sleep 0.5; echo done").result
    assert (result.status, result.stdout.text) == (RunStatus.OK, "done\n")
    assert "killed 1 background process it left behind" in result.cause
    assert _container_processes(docker_session) == []


def test_a_run_ended_by_the_halt_for_another_run_s_escapee_says_so(
    docker_runtimes: set[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(docker_executor, "DRAIN_S", IMPATIENT_DRAIN_S)
    session = Session(Posture(PostureId.DOCKER).with_limits(**{**LIMITS, "timeout_s": 30}))
    shed = RunRequest(("sh", "-c", "exec env -i sleep 80"))
    bystander = RunRequest(("sleep", "60"))
    stop = CancelToken()

    async def both() -> tuple[RunResult, RunResult]:
        session.loop.call_later(0.5, stop.cancel)
        run = session.executor.run
        return await asyncio.gather(
            run(shed, lambda c: None, stop), run(bystander, lambda c: None, CancelToken())
        )

    try:
        shed_result, other = session.loop.run_until_complete(both())
        assert shed_result.status is RunStatus.CANCELLED
        assert any("outlived every sweep" in w.text for w in shed_result.warnings)
        assert other.status is RunStatus.ERROR
        assert other.cause == f"{CONTAINER_GONE}: {HALTED_FOR_ESCAPEE}"
        assert session.run("echo", "alive").result.stdout.text == "alive\n"
    finally:
        session.close()


def test_a_command_that_sheds_its_own_tag_still_ends(
    any_session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    if any_session.executor.runtime == "runc":  # gVisor's supervisor never waits it out
        monkeypatch.setattr(docker_executor, "DRAIN_S", IMPATIENT_DRAIN_S)
    shed = "exec env -i sh -c 'sleep 79 & exec sleep 80'"
    started = time.monotonic()
    result = any_session.run("sh", "-c", shed, cancel_after=0.5).result
    assert time.monotonic() - started < 15  # not the 80 s the command would take
    assert (result.status, result.leftover_processes) == (RunStatus.CANCELLED, 0)
    escaped = any("outlived every sweep" in w.text for w in result.warnings)
    # The gVisor supervisor knows the command it started; runc's killer cannot tell it from
    # another run's exec, and the container is stopped instead.
    assert escaped is (any_session.executor.runtime == "runc")
    assert any_session.run("echo", "alive").result.stdout.text == "alive\n"
    assert _container_processes(any_session) == []


def test_memory_bomb_is_oom_killed(docker_session: Session) -> None:
    result = docker_session.run("tail", "/dev/zero").result
    assert result.status is RunStatus.OOM_KILLED
    assert result.cause == "memory limit 64 MiB (cgroup OOM)"
    assert docker_session.run("true").result.status is RunStatus.OK


def test_fork_bomb_hits_the_pids_limit_and_is_contained(docker_session: Session) -> None:
    result = docker_session.run("sh", "-c", "f() { f | f & }; f; sleep 1").result
    assert result.status is RunStatus.LIMIT_EXCEEDED
    assert result.cause.startswith("process limit 32 (pids cgroup)")
    assert result.leftover_processes == 0
    assert docker_session.run("echo", "alive").result.stdout.text == "alive\n"


def test_samples_come_from_the_cgroup_at_about_10_hz(docker_session: Session) -> None:
    ran = docker_session.run("sh", "-c", "i=0; while [ $i -lt 150000 ]; do i=$((i + 1)); done")
    result = ran.result
    assert result.status is RunStatus.OK
    assert tuple(ran.samples) == result.samples
    rate = len(ran.samples) / result.wall_seconds
    assert rate > 6, f"{len(ran.samples)} samples in {result.wall_seconds:.2f} s"
    assert max(s.cpu_percent for s in ran.samples) > 30
    assert result.cpu_seconds > 0.1
    assert result.peak_rss_bytes > 0 and result.peak_processes >= 1


@pytest.mark.slow
def test_engine_stats_fallback_reads_real_documents(docker_session: Session) -> None:
    client = docker.from_env()
    container_id = docker_session.executor.container_id

    def stats() -> dict[str, Any]:
        document: dict[str, Any] = client.api.stats(container_id, stream=False, one_shot=True)
        return document

    async def go() -> ContainerSampler:
        sampler = ContainerSampler(None, stats, 0, None, time.monotonic())
        task = asyncio.create_task(sampler.run())
        await asyncio.sleep(2.5)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return sampler

    try:
        sampler = docker_session.loop.run_until_complete(go())
    finally:
        client.close()
    assert sampler.source == "engine stats"
    assert 2 <= len(sampler.samples) <= 4  # about one a second
    assert all(s.rss_bytes > 0 and s.processes >= 2 for s in sampler.samples)


def test_stop_removes_the_container(docker_runtimes: set[str]) -> None:
    session = Session(Posture(PostureId.DOCKER))
    container_id = session.executor.container_id
    client = docker.from_env()
    try:
        assert _labelled(client, container_id)
        session.close()
        assert not _labelled(client, container_id)
    finally:
        client.close()


def test_leftover_containers_are_found_by_label_and_removed(docker_runtimes: set[str]) -> None:
    session = Session(Posture(PostureId.DOCKER))
    client = docker.from_env()
    try:
        assert remove_leftovers(client, session.executor.session_id) == 1
        assert not _labelled(client, session.executor.container_id)
        session.close()  # the container is already gone: still fine
    finally:
        client.close()


def test_a_container_removed_between_runs_is_replaced(docker_runtimes: set[str]) -> None:
    session = Session(Posture(PostureId.DOCKER))
    client = docker.from_env()
    try:
        old = session.executor.container_id
        client.api.remove_container(old, force=True)
        result = session.run("echo", "again").result
        assert (result.status, result.stdout.text) == (RunStatus.OK, "again\n")
        assert session.executor.container_id not in ("", old)
    finally:
        client.close()
        session.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the host reads the run's environ only as root")
def test_a_local_runc_engine_kills_from_the_host_one_exec_per_run(
    docker_runtimes: set[str],
) -> None:
    """No sweep exec where the host sees the cgroup; a process without the tag falls back."""
    session = Session(Posture(PostureId.DOCKER).with_limits(**LIMITS))
    client = docker.from_env()
    try:
        stop = CancelToken()  # Stop once the command runs: one pressed while its exec still
        started = RunRequest(("sh", "-c", "setsid sleep 60 & echo started; sleep 60"))
        runs = [  # starts leaves an untagged process to the exec fallback (a slow machine)
            session.run("true").result,
            session.run("sh", "-c", "setsid sleep 60 & echo done").result,
            session.loop.run_until_complete(
                session.executor.run(started, lambda chunk: stop.cancel(), stop)
            ),
        ]
        assert [r.status for r in runs] == [RunStatus.OK, RunStatus.OK, RunStatus.CANCELLED]
        assert runs[1].cause == "exited with code 0; killed 1 background process it left behind"
        assert [r.leftover_processes for r in runs] == [0, 0, 0]
        assert _container_processes(session) == []
        assert _execs(client, session) == 4  # one per run and the listing: no sweep exec
        escape = "env -i sh -c 'touch /tmp/up; exec sleep 60' >/dev/null 2>&1 &"
        untagged = session.run("sh", "-c", f"{escape} until [ -e /tmp/up ]; do :; done").result
        assert (untagged.status, untagged.leftover_processes) == (RunStatus.OK, 0)
        # Its exec, then the killer's: how many depends on how fast the escapee is reaped.
        assert _execs(client, session) >= 6
    finally:
        client.close()
        session.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="moving a process into a cgroup needs root")
def test_a_host_sweep_waits_for_a_zombie_but_not_for_a_live_stranger(
    docker_runtimes: set[str],
) -> None:
    """The cgroup's task count holds a zombie until it is reaped, its process list does not: a
    host sweep waits for the reap and pays no exec, while a live process it did not kill sends
    it to the exec sweep at once. Both are host processes put into the container's cgroup."""
    session = Session(Posture(PostureId.DOCKER).with_limits(**LIMITS))
    docker_session = session.executor._session
    assert docker_session is not None and docker_session.cgroup is not None
    members = docker_session.cgroup.pids.parent / "cgroup.procs"
    client = docker.from_env()
    dying = subprocess.Popen(["sleep", "0.2"])
    stranger: subprocess.Popen[bytes] | None = None
    try:
        members.write_text(str(dying.pid))
        until_dead = time.monotonic() + 5
        while psutil.Process(dying.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < until_dead
            time.sleep(0.01)
        assert docker_session.cgroup.tasks() == RUNC_IDLE_TASKS + 1  # the zombie counts
        execs = _execs(client, session)
        session.loop.call_later(0.1, dying.wait)
        session.loop.run_until_complete(docker_session.sweep(run_tag("none").decode()))
        assert _execs(client, session) == execs
        stranger = subprocess.Popen(["sleep", "30"])
        members.write_text(str(stranger.pid))
        session.loop.run_until_complete(docker_session.sweep(run_tag("none").decode()))
        assert _execs(client, session) == execs + 1
    finally:
        for process in (dying, stranger):
            if process is not None:
                process.kill()
                process.wait()
        client.close()
        session.close()


def test_an_idle_runc_container_holds_what_host_sweeps_count_on(docker_runtimes: set[str]) -> None:
    """`RUNC_IDLE_TASKS` (the init, the supervisor's shell and its sleep): a host sweep is
    verified when the container's cgroup is back to it."""
    session = Session(Posture(PostureId.DOCKER).with_limits(**LIMITS))
    try:
        idle = _listed_processes(session)
        assert len(idle) == RUNC_IDLE_TASKS, idle
    finally:
        session.close()


def _execs(client: docker.DockerClient, session: Session) -> int:
    """How many execs the engine created in the session's container so far."""
    filters = {"container": session.executor.container_id, "event": "exec_create"}
    events = client.api.events(since=0, until=int(time.time()) + 1, filters=filters)
    return sum(1 for _ in events)


def _labelled(client: docker.DockerClient, container_id: str) -> bool:
    found = client.api.containers(all=True, filters={"label": LABEL_APP})
    return any(item["Id"] == container_id for item in found)


def _listed_processes(session: Session) -> list[str]:
    """The command lines of the container's processes, besides this listing."""
    listing = subprocess.run(
        ["docker", "exec", session.executor.container_id, "ps", "-o", "args"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [args for args in listing.splitlines()[1:] if not args.startswith("ps ")]


def _container_processes(session: Session) -> list[str]:
    """The container's processes besides the init, the supervisor (under runc a shell and its
    sleep, under gVisor python3) and this listing."""
    session_own = ("docker-init", "trap", "sleep 3600", "python3 -I -S -c")
    rows = _listed_processes(session)
    return [r for r in rows if not any(own in r for own in session_own)]


CONCURRENT_RUNS = 20


@pytest.mark.parametrize(
    "posture_id", [PostureId.DOCKER, pytest.param(PostureId.GVISOR, marks=pytest.mark.gvisor)]
)
def test_concurrent_runs_in_one_session_each_end_clean(
    docker_runtimes: set[str], posture_id: PostureId
) -> None:
    if posture_id is PostureId.GVISOR and "runsc" not in docker_runtimes:
        pytest.skip("the engine has no runsc runtime")
    session = Session(Posture(posture_id).with_limits(pids=256, memory_bytes=512 * MIB))
    script = (
        "setsid sleep 60 & (env -i sleep 61 </dev/null >/dev/null 2>&1 &); sleep 0.5; echo run $0"
    )

    async def go() -> list[RunResult]:
        requests = [RunRequest(("sh", "-c", script, str(n))) for n in range(CONCURRENT_RUNS)]
        return await asyncio.gather(
            *(session.executor.run(r, lambda c: None, CancelToken()) for r in requests)
        )

    try:
        results = session.loop.run_until_complete(go())
        assert [(r.status, r.stdout.text) for r in results] == [
            (RunStatus.OK, f"run {n}\n") for n in range(CONCURRENT_RUNS)
        ], [r.cause for r in results]
        assert all(r.leftover_processes == 0 for r in results)
        # Each run kills its own tagged sleep; an untagged escapee is killed by whichever sweep
        # meets it (two that meet it at once both count it).
        killed = [int(r.cause.split("killed ")[1].split()[0]) for r in results]
        assert all(n >= 1 for n in killed) and sum(killed) >= 2 * CONCURRENT_RUNS
        assert _container_processes(session) == []
    finally:
        session.close()
