"""The docker warm pool (`ContainerPool`) against the real engine.

A few of the executor's own tests run again here on a warm container (`any_session` and
`docker_session` below hand out one from a pool): Stop, timeouts and OOM must end the same for
warm and cold containers.
"""

import asyncio
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

import tests.docker.test_docker_executor as executor_tests
from tests.docker.test_docker_executor import (
    LIMITS,
    Session,
    test_memory_bomb_is_oom_killed,
    test_stop_cancels_inside,
    test_timeout_kills_inside_and_the_next_command_works,
)
from tests.docker.test_engine_faults import _collect_leaked_sockets
from workbench.errors import ExecutorError
from workbench.executors.docker.executor import DockerExecutor
from workbench.executors.docker.session import remove_leftovers
from workbench.executors.docker.spec import LABEL_SESSION
from workbench.executors.types import CancelToken, RunRequest, RunResult, RunStatus, SessionSpec
from workbench.executors.warm.container_claims import LABEL_POOL, drain, pooled_containers
from workbench.executors.warm.containers import ContainerPool
from workbench.executors.warm.starts import WarmPool
from workbench.postures.model import MIB, Posture, PostureId

__all__ = [  # run again here, on warm containers
    "test_memory_bomb_is_oom_killed",
    "test_stop_cancels_inside",
    "test_timeout_kills_inside_and_the_next_command_works",
]

DOCKER = Posture(PostureId.DOCKER).with_limits(**LIMITS)
FILL_S = 30.0


class PrimedExecutor(DockerExecutor):
    """A docker executor that fills its pool for the session first, then must start warm."""

    async def start(self, session: SessionSpec) -> None:
        assert self._pool is not None
        await self._pool.resize(1)
        await self._pool.prime(self.posture, session)
        await self._pool.settle()
        await super().start(session)
        assert self.warm
        await self._pool.resize(0)  # no refill beside the tests


def warm_session(posture: Posture) -> tuple[Session, ContainerPool]:
    pool = ContainerPool()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(executor_tests, "DockerExecutor", lambda p: PrimedExecutor(p, pool))
        return Session(posture), pool


def close_warm(session: Session, pool: ContainerPool) -> None:
    session.loop.run_until_complete(pool.close())
    session.close()


@pytest.fixture(scope="module")
def docker_session(docker_runtimes: set[str]) -> Iterator[Session]:
    session, pool = warm_session(DOCKER)
    yield session
    close_warm(session, pool)


@pytest.fixture(scope="module", params=["docker", pytest.param("gvisor", marks=pytest.mark.gvisor)])
def any_session(request: pytest.FixtureRequest, docker_runtimes: set[str]) -> Iterator[Session]:
    posture_id = PostureId(request.param)
    if posture_id is PostureId.GVISOR and "runsc" not in docker_runtimes:
        pytest.skip("the engine has no runsc runtime")
    limits = {**LIMITS, "memory_bytes": 256 * MIB} if posture_id is PostureId.GVISOR else LIMITS
    session, pool = warm_session(Posture(posture_id).with_limits(**limits))
    yield session
    close_warm(session, pool)


class Folders:
    """A skill folder, a workspace and a fresh-workspaces folder, for one test."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="wb-pool-"))
        self.base.chmod(0o755)
        self.skill = self.base / "skill"
        self.skill.mkdir()
        (self.skill / "SKILL.md").write_text("---\nname: demo\n---\n")
        self.workspace = self.base / "workspace"
        self.workspace.mkdir()
        self.fresh = self.base / "fresh"

    def spec(self, workspace: Path | None = None) -> SessionSpec:
        return SessionSpec(self.skill, "demo", workspace or self.workspace, self.base / "runs")


@pytest.fixture
def folders() -> Iterator[Folders]:
    made = Folders()
    yield made
    shutil.rmtree(made.base, ignore_errors=True)


@pytest.fixture
def client(docker_runtimes: set[str]) -> Iterator[docker.DockerClient]:
    engine = docker.from_env()
    yield engine
    engine.close()


async def filled(pool: ContainerPool, ready: int) -> None:
    deadline = time.monotonic() + FILL_S
    while (status := pool.status()).ready < ready or status.starting:
        assert not status.problem, status.problem
        assert time.monotonic() < deadline, status
        await asyncio.sleep(0.05)


def pooled_ids(client: docker.DockerClient, pool: ContainerPool, spec: SessionSpec) -> set[str]:
    """The ids of the pooled containers of `spec`'s key in the engine (claimed ones too)."""
    label = f"{LABEL_POOL}={pool.key(DOCKER, spec).digest}"
    return {item["Id"] for item in client.api.containers(all=True, filters={"label": label})}


def exists(client: docker.DockerClient, container_id: str) -> bool:
    return any(item["Id"] == container_id for item in client.api.containers(all=True))


async def one_pooled(pool: ContainerPool, spec: SessionSpec, client: docker.DockerClient) -> str:
    """Fill `pool` with one container for `spec`; its id."""
    await pool.resize(1)
    await pool.prime(DOCKER, spec)
    await filled(pool, 1)
    (container,) = pooled_ids(client, pool, spec)
    return container


async def started(pool: ContainerPool, spec: SessionSpec) -> DockerExecutor:
    executor = pool.executor(DOCKER)
    await executor.start(spec)
    return executor


async def ran(executor: DockerExecutor, *argv: str) -> RunResult:
    return await executor.run(RunRequest(argv), lambda chunk: None, CancelToken())


@pytest.mark.docker
def test_a_warm_start_is_clean_says_so_and_the_pool_refills(
    folders: Folders, client: docker.DockerClient
) -> None:
    pool = ContainerPool()
    warm: WarmPool = pool  # the contract, checked by mypy
    del warm
    spec = folders.spec()

    async def go() -> None:
        await pool.resize(2)
        await pool.prime(DOCKER, spec)
        await filled(pool, 2)
        where = folders.workspace.absolute()
        assert pool.status().key == f"demo in {where} (docker, 64 MiB, 1 cpus, network none)"
        before = pooled_ids(client, pool, spec)
        executor = await started(pool, spec)
        assert executor.warm and executor.container_id in before
        result = await ran(executor, "sh", "-c", "ps -o comm= > /tmp/ps; sort /tmp/ps")
        assert result.status is RunStatus.OK
        assert result.stdout.text.split() == ["docker-init", "ps", "sh", "sh", "sleep"]
        assert result.card.started == "Warm container from the pool (never used, checked clean)"
        await filled(pool, 2)
        assert pool.status().ready == 2
        added = pooled_ids(client, pool, spec) - before
        assert len(added) == 1 and executor.container_id not in added
        await executor.stop()
        assert not exists(client, executor.container_id)  # removed, never returned
        await pool.close()
        assert not pooled_ids(client, pool, spec)

    asyncio.run(go())


@pytest.mark.docker
def test_a_used_pooled_container_is_removed_and_the_run_starts_cold(
    folders: Folders, client: docker.DockerClient
) -> None:
    pool = ContainerPool()
    spec = folders.spec()

    async def go() -> None:
        dirty = await one_pooled(pool, spec, client)
        exec_id = client.api.exec_create(dirty, ["sleep", "600"])["Id"]
        client.api.exec_start(exec_id, detach=True)
        executor = pool.executor(DOCKER)
        try:
            await executor.start(spec)
            assert not executor.warm and executor.container_id != dirty
            card = (await ran(executor, "true")).card
            assert card.started == "Container started cold (no warm one ready)"
            assert not exists(client, dirty)
        finally:
            await executor.stop()
            await pool.close()

    asyncio.run(go())


@pytest.mark.docker
@pytest.mark.usefixtures("docker_runtimes")
def test_a_fresh_workspace_takes_the_spare_folder_of_a_warm_container(folders: Folders) -> None:
    pool = ContainerPool(spares_dir=folders.fresh)
    next_run = folders.spec(folders.fresh / "run-1")  # not made yet, as when priming

    async def go() -> None:
        await pool.resize(1)
        await pool.prime(DOCKER, next_run)
        await filled(pool, 1)
        assert "demo in a fresh workspace" in pool.status().key
        (spare,) = folders.fresh.iterdir()
        workspace = folders.fresh / "run-2"
        workspace.mkdir()  # the run service makes it before the executor starts
        (workspace / "kept.txt").write_text("a file")
        cold = await started(pool, folders.spec(workspace))  # not empty: no swap
        assert not cold.warm and spare.is_dir()
        await cold.stop()
        workspace = folders.fresh / "run-3"
        workspace.mkdir()
        executor = await started(pool, folders.spec(workspace))
        try:
            assert executor.warm and not spare.exists()
            result = await ran(executor, "sh", "-c", 'echo hi > "$WORKSPACE/made.txt"')
            assert result.status is RunStatus.OK
            assert (workspace / "made.txt").read_text() == "hi\n"
        finally:
            await executor.stop()
            await pool.close()
        assert not [p for p in folders.fresh.iterdir() if p.name.startswith(".pool-")]

    asyncio.run(go())


@pytest.mark.docker
def test_priming_another_key_drains_and_only_drain_removes_pooled_containers(
    folders: Folders, client: docker.DockerClient
) -> None:
    pool, other = ContainerPool(), ContainerPool()
    first, second = folders.spec(), folders.spec(folders.base)

    async def go() -> None:
        await pool.resize(1)
        await pool.prime(DOCKER, first)
        await filled(pool, 1)
        (old,) = pooled_ids(client, pool, first)
        await pool.prime(DOCKER, second)
        await filled(pool, 1)
        assert not exists(client, old) and len(pooled_ids(client, pool, second)) == 1
        await other.resize(1)
        await other.prime(DOCKER, first)
        await filled(other, 1)
        (others,) = pooled_ids(client, other, first)
        session = client.api.inspect_container(others)["Config"]["Labels"][LABEL_SESSION]
        assert remove_leftovers(client, session) == 0  # pooled: not a leftover
        assert exists(client, others) and pooled_ids(client, pool, second)
        listed = {item.name: item for item in pooled_containers(client)}
        assert {item.key for item in listed.values()} >= {pool.status().key, other.status().key}
        for each, spec in ((pool, second), (other, first)):  # not the pools of other tests
            assert drain(client, each.key(DOCKER, spec).digest) == 1
        assert not pooled_ids(client, pool, second) and not exists(client, others)
        await pool.resize(0)
        assert pool.status().ready == 0
        for each in (pool, other):
            await each.close()

    asyncio.run(go())


def test_an_engine_that_is_down_shows_as_the_problem(
    folders: Folders, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    pool = ContainerPool()

    async def go() -> None:
        await pool.resize(2)
        await pool.prime(DOCKER, folders.spec())
        await pool.settle()
        status = pool.status()
        assert (status.ready, status.starting) == (0, 0)
        assert "/nonexistent/docker.sock (DOCKER_HOST) does not answer" in status.problem
        with pytest.raises(ExecutorError, match=r"^The container engine docker at unix:///"):
            await pool.executor(DOCKER).start(folders.spec())
        await pool.close()

    asyncio.run(go())
    _collect_leaked_sockets()


@pytest.mark.docker
def test_a_workspace_made_again_under_its_name_gets_a_cold_container(
    folders: Folders, client: docker.DockerClient
) -> None:
    pool = ContainerPool()
    spec = folders.spec()

    async def go() -> None:
        stale = await one_pooled(pool, spec, client)
        folders.workspace.rmdir()  # the pooled container still mounts the deleted folder
        folders.workspace.mkdir()
        executor = await started(pool, spec)
        try:
            assert not executor.warm and not exists(client, stale)
            await ran(executor, "sh", "-c", "echo hi > made.txt")
            assert (folders.workspace / "made.txt").read_text() == "hi\n"
        finally:
            await executor.stop()
            await pool.close()

    asyncio.run(go())


@pytest.mark.docker
def test_a_pooled_container_that_stopped_is_removed_as_stale(
    folders: Folders, client: docker.DockerClient
) -> None:
    pool = ContainerPool()
    spec = folders.spec()

    async def go() -> None:
        stopped = await one_pooled(pool, spec, client)
        client.api.kill(stopped)  # as an engine restart leaves it
        client.api.wait(stopped, timeout=10)
        executor = await started(pool, spec)
        try:
            assert not executor.warm and not exists(client, stopped)
            await filled(pool, 1)
            assert len(pooled_ids(client, pool, spec)) == 1
            await pool.resize(0)  # off: drains
            assert not pooled_ids(client, pool, spec) and pool.status().ready == 0
        finally:
            await executor.stop()
            await pool.close()

    asyncio.run(go())
