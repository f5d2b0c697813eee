"""Faults against the real engine: the container removed mid-run, the image missing, the engine
gone mid-run (a unix-socket proxy to the real engine, shut down while a command runs)."""

import asyncio
import contextlib
import gc
import socket
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from workbench.errors import ExecutorError
from workbench.executors import Executor, build_executor
from workbench.executors.docker.engine import _api_versions, engine_client, resolve_engine
from workbench.executors.docker.executor import DockerExecutor
from workbench.executors.docker.spec import LABEL_SESSION
from workbench.executors.types import CancelToken, RunStatus
from workbench.postures.model import Posture, PostureId
from workbench.runs.history import RunHistory
from workbench.runs.layout import DataLayout
from workbench.runs.service import CompletedRun, RunPlan, RunService

pytestmark = [pytest.mark.docker, pytest.mark.timeout(90)]

ENGINE_SOCKET = "/var/run/docker.sock"


class Harness:
    """A run service over real executors, keeping a handle on the executor it built."""

    def __init__(self, root: Path) -> None:
        self.root = root
        layout = DataLayout(root / "data")
        self.history = RunHistory(layout.history_path)
        self.service = RunService(layout, self.history, self._build)
        self.executor: DockerExecutor | None = None
        skill = root / "skill"
        skill.mkdir()
        (skill / "SKILL.md").write_text("---\nname: demo\n---\n")
        for folder in (root, skill):
            folder.chmod(0o755)
        self.skill = skill

    def _build(self, posture: Posture) -> Executor:
        executor = build_executor(posture)
        assert isinstance(executor, DockerExecutor)
        self.executor = executor
        return executor

    def plan(self, posture: Posture, *argv: str) -> RunPlan:
        return RunPlan("demo", self.skill, posture, argv, self.root / "workspace")

    async def started_container(self) -> str:
        """The session container's id once the command has had time to start in it."""
        for _ in range(200):
            if self.executor is not None and self.executor.container_id:
                break
            await asyncio.sleep(0.05)
        assert self.executor is not None and self.executor.container_id
        await asyncio.sleep(1.0)  # the exec is under way
        return self.executor.container_id


@pytest.mark.parametrize("fault", ["removed", "killed"])
def test_a_container_removed_or_killed_mid_run_ends_in_error_and_keeps_the_record(
    tmp_path: Path, docker_runtimes: set[str], fault: str
) -> None:
    harness = Harness(tmp_path)
    posture = Posture(PostureId.DOCKER).with_limits(timeout_s=60)

    async def scenario() -> CompletedRun:
        task = asyncio.create_task(
            harness.service.run_once(harness.plan(posture, "sleep", "30"), _ignore, CancelToken())
        )
        container = await harness.started_container()
        client = docker.from_env()
        try:
            if fault == "removed":
                await asyncio.to_thread(client.api.remove_container, container, force=True)
            else:
                await asyncio.to_thread(client.api.kill, container)
        finally:
            client.close()
        return await asyncio.wait_for(task, 30)

    completed = asyncio.run(scenario())
    assert completed.result.status is RunStatus.ERROR
    assert completed.result.cause == (
        "the session container stopped during the run (removed or stopped from outside)"
    )
    record = harness.history.get(completed.record.run_id)
    assert (record.status, record.cause) == (RunStatus.ERROR, completed.result.cause)
    assert not _containers_of(harness)


def test_a_missing_image_fails_at_start_and_says_how_to_build_it(
    tmp_path: Path, docker_runtimes: set[str]
) -> None:
    harness = Harness(tmp_path)
    posture = Posture(PostureId.DOCKER, image="skill-workbench-missing:none")
    plan = harness.plan(posture, "true")
    with pytest.raises(ExecutorError, match="workbench image build --offline"):
        asyncio.run(harness.service.run_once(plan, _ignore, CancelToken()))
    (record,) = harness.history.recent()
    assert record.run_id == plan.run_id
    assert record.status == RunStatus.ERROR
    assert "skill-workbench-missing:none" in (record.cause or "")


class EngineProxy:
    """A unix socket that forwards every connection to the real engine, until `shut()`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(16)
        self.open: list[socket.socket] = [self.listener]
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(ENGINE_SOCKET)
            with self.lock:
                self.open += [client, upstream]
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=_forward, args=(source, target), daemon=True).start()

    def shut(self) -> None:
        """The engine "stops": every connection drops and no new one is accepted."""
        with self.lock:
            for sock in self.open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        self.thread.join(5)


def _forward(source: socket.socket, target: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            target.sendall(data)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)


@pytest.fixture
def proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EngineProxy]:
    engine = EngineProxy(tmp_path / "engine.sock")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{engine.path}")
    yield engine
    engine.shut()


def test_the_engine_gone_mid_run_keeps_the_runs_outcome_and_notes_the_clean_up(
    tmp_path: Path, docker_runtimes: set[str], proxy: EngineProxy
) -> None:
    harness = Harness(tmp_path)
    posture = Posture(PostureId.DOCKER).with_limits(timeout_s=60)
    container = ""

    async def scenario() -> CompletedRun:
        nonlocal container
        plan = harness.plan(posture, "sleep", "30")
        task = asyncio.create_task(harness.service.run_once(plan, _ignore, CancelToken()))
        container = await harness.started_container()
        proxy.shut()
        return await asyncio.wait_for(task, 45)

    try:
        completed = asyncio.run(scenario())
    finally:  # the real engine still holds the session's container: remove it
        client = docker.DockerClient(base_url=f"unix://{ENGINE_SOCKET}")
        with contextlib.suppress(docker.errors.NotFound):
            client.api.remove_container(container, force=True)
        client.close()
        harness.executor = None
        _collect_leaked_sockets()
    result = completed.result
    assert result.status is RunStatus.ERROR
    assert result.cause.startswith("the engine failed during the run: ")
    (record,) = harness.history.recent()
    assert (record.status, record.cause) == (RunStatus.ERROR, result.cause)
    assert any(
        note.startswith(
            f"Cleaning up after the run failed: Could not remove container {container[:12]}"
        )
        for note in record.notes
    ), record.notes


def _containers_of(harness: Harness) -> list[str]:
    """The ids of the containers the engine still holds for the harness's executor."""
    assert harness.executor is not None
    client = docker.from_env()
    try:
        found = client.api.containers(
            all=True, filters={"label": f"{LABEL_SESSION}={harness.executor.session_id}"}
        )
    finally:
        client.close()
    return [str(item["Id"]) for item in found]


def _collect_leaked_sockets() -> None:
    """docker-py leaks the sockets of refused connections (docker/docker-py#3356)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def _ignore(_chunk: object) -> None:
    pass


def test_an_engine_that_no_longer_takes_the_kept_api_version_is_asked_again(
    docker_runtimes: set[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = resolve_engine().url
    first = engine_client()
    agreed = first.api.api_version
    first.close()
    monkeypatch.setitem(_api_versions, url, "1.999")  # as if a newer engine had answered here
    client = engine_client()
    try:
        assert client.api.api_version == agreed
        assert client.ping()  # at the version it takes
    finally:
        client.close()
    assert _api_versions[url] == agreed
