"""What a claim of the warm pool refuses, against the real engine: a container used under
gVisor, a spare folder its labels misname, a claim lock held or planted, and the containers
of an app that is gone; and two processes claiming one container."""

import asyncio
import contextlib
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest

import workbench.executors.warm.container_checks as docker_clean
import workbench.executors.warm.containers as containers_module
from tests.docker.test_pool import (
    DOCKER,
    Folders,
    client,
    exists,
    filled,
    folders,
    one_pooled,
    pooled_ids,
    ran,
    started,
)
from workbench.executors.docker.owner import owner
from workbench.executors.docker.session import DockerSession, remove_container
from workbench.executors.warm.container_claims import (
    CLAIM_LOCK_NAME,
    LABEL_POOL_MOUNTS,
    LABEL_POOL_SPARE,
    mount_ids,
    pooled_containers,
    rename_locked,
)
from workbench.executors.warm.containers import ContainerPool
from workbench.platform.paths import data_dir
from workbench.postures.model import MIB, Posture, PostureId

__all__ = ["client", "folders"]  # fixtures

GVISOR = Posture(PostureId.GVISOR).with_limits(memory_bytes=256 * MIB, cpus=1.0, pids=64)
CLAIMERS = 3
ROOT = Path(__file__).parents[2]
COLD = "Container started cold (no warm one ready)"


def gvisor_pooled(
    pool: ContainerPool, folders: Folders, client: docker.DockerClient, runtimes: set[str]
) -> str:
    """Fill `pool` with one gVisor container for the folders' session; its id."""
    if "runsc" not in runtimes:
        pytest.skip("the engine has no runsc runtime")
    spec = folders.spec()

    async def fill() -> None:
        await pool.resize(1)
        await pool.prime(GVISOR, spec)
        await filled(pool, 1)

    asyncio.run(fill())
    label = f"org.skill-workbench.pool={pool.key(GVISOR, spec).digest}"
    (container,) = [str(item["Id"]) for item in client.api.containers(filters={"label": label})]
    return container


def claim_after_exec(pool: ContainerPool, folders: Folders, container: str) -> None:
    """The reviewer's repro: an exec started in the pooled container just before the claim;
    the claim refuses it (removed, the run starts cold and says so)."""
    engine = docker.from_env()
    try:
        exec_id = engine.api.exec_create(container, ["sleep", "3601"])["Id"]
        engine.api.exec_start(exec_id, detach=True)

        async def go() -> None:
            executor = pool.executor(GVISOR)
            try:
                await executor.start(folders.spec())
                assert not executor.warm and executor.container_id != container
                assert (await ran(executor, "true")).card.started == COLD
            finally:
                await executor.stop()
                await pool.close()

        asyncio.run(go())
        assert not exists(engine, container)
    finally:
        engine.close()


@pytest.mark.docker
@pytest.mark.gvisor
def test_a_gvisor_container_exec_d_into_just_before_the_claim_is_refused(
    folders: Folders, client: docker.DockerClient, docker_runtimes: set[str]
) -> None:
    pool = ContainerPool()
    claim_after_exec(pool, folders, gvisor_pooled(pool, folders, client, docker_runtimes))


@pytest.mark.docker
@pytest.mark.gvisor
def test_under_gvisor_the_check_from_inside_refuses_an_exec_the_events_lost(
    folders: Folders,
    client: docker.DockerClient,
    docker_runtimes: set[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(docker_clean, "execs_since_created", lambda client, attrs: 0)
    pool = ContainerPool()  # the engine's event log forgot the exec (it keeps recent ones)
    claim_after_exec(pool, folders, gvisor_pooled(pool, folders, client, docker_runtimes))


@pytest.mark.docker
def test_the_event_check_sees_an_exec_made_the_moment_before_it(
    folders: Folders, client: docker.DockerClient
) -> None:
    pool = ContainerPool()

    async def go() -> None:
        container = await one_pooled(pool, folders.spec(), client)
        attrs = client.api.inspect_container(container)
        assert docker_clean.execs_since_created(client, attrs) == 0
        client.api.exec_create(container, ["true"])  # in the same second, mostly
        assert docker_clean.execs_since_created(client, attrs) == 1
        await pool.close()

    asyncio.run(go())


@pytest.mark.docker
@pytest.mark.usefixtures("docker_runtimes")
@pytest.mark.parametrize("where", ["outside", "not-mounted"])
def test_a_spare_folder_the_labels_misname_is_not_moved(
    folders: Folders, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    victim = (folders.base if where == "outside" else folders.fresh) / ".pool-victim"
    victim.mkdir(parents=True)
    (victim / "kept.txt").write_text("not the pool's")

    def forged(client: docker.DockerClient, options: dict[str, object]) -> DockerSession:
        labels = dict(options["labels"])  # type: ignore[call-overload]
        labels[LABEL_POOL_SPARE] = str(victim)
        labels[LABEL_POOL_MOUNTS] = mount_ids(folders.skill, victim)
        return DockerSession(client, {**options, "labels": labels})

    monkeypatch.setattr(containers_module, "DockerSession", forged)
    pool = ContainerPool(spares_dir=folders.fresh)

    async def go() -> None:
        await pool.resize(1)
        await pool.prime(DOCKER, folders.spec(folders.fresh / "run-1"))
        await filled(pool, 1)
        workspace = folders.fresh / "run-2"
        workspace.mkdir()
        executor = await started(pool, folders.spec(workspace))
        try:
            assert not executor.warm
        finally:
            await executor.stop()
            await pool.close()
        assert (victim / "kept.txt").is_file() and not any(workspace.iterdir())

    asyncio.run(go())


@pytest.mark.docker
def test_a_held_claim_lock_costs_one_timeout_then_the_run_starts_cold(
    folders: Folders, client: docker.DockerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    tries: list[str] = []

    def counted(api: docker.APIClient, name: str, new_name: str) -> None:
        tries.append(name)
        rename_locked(api, name, new_name)

    monkeypatch.setattr(containers_module, "rename_locked", counted)
    monkeypatch.setattr("workbench.executors.warm.container_claims.CLAIM_LOCK_S", 0.2)
    pool, spec = ContainerPool(), folders.spec()
    data_dir().mkdir(parents=True, exist_ok=True)
    held = os.open(data_dir() / CLAIM_LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)  # as another process of this user would hold it

    async def go() -> None:
        await pool.resize(2)
        await pool.prime(DOCKER, spec)
        await filled(pool, 2)
        executor = await started(pool, spec)
        try:
            assert not executor.warm and len(tries) == 1
            assert len(pooled_ids(client, pool, spec)) == 2  # both still waiting
        finally:
            await executor.stop()
            await pool.close()

    try:
        asyncio.run(go())
    finally:
        os.close(held)


@pytest.mark.docker
def test_a_symlink_planted_at_the_claim_lock_is_not_followed(
    folders: Folders, client: docker.DockerClient
) -> None:
    target = folders.base / "planted-target"
    data_dir().mkdir(parents=True, exist_ok=True)
    (data_dir() / CLAIM_LOCK_NAME).symlink_to(target)
    pool, spec = ContainerPool(), folders.spec()

    async def go() -> None:
        container = await one_pooled(pool, spec, client)
        executor = await started(pool, spec)
        try:
            assert not executor.warm and exists(client, container)
        finally:
            await executor.stop()
            await pool.close()

    asyncio.run(go())
    assert not target.exists()


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# An app that fills its pool for the workspace argv[1] names, says so, and waits to be killed.
FILLER = """
import asyncio, sys
from pathlib import Path
from workbench.executors.warm.containers import ContainerPool
from workbench.executors.types import SessionSpec
from tests.docker.test_pool import DOCKER as posture
workspace = Path(sys.argv[1])
base = workspace.parent
spec = SessionSpec(base / "skill", "demo", workspace, base / "runs")

async def go():
    pool = ContainerPool()
    await pool.resize(1)
    await pool.prime(posture, spec)
    while not pool.status().ready:
        await asyncio.sleep(0.05)
    print("ready", flush=True)
    await asyncio.sleep(600)

asyncio.run(go())
"""


@pytest.mark.docker
def test_the_containers_of_an_app_that_is_gone_are_removed_by_the_next_listing(
    folders: Folders, client: docker.DockerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, boot, namespace, _, start = owner().split(" ")
    elsewhere = f"another-machine {boot} {namespace} {dead_pid()} {start}"
    pools = {"alive": ContainerPool(), "cli": ContainerPool(owned=False)}  # cli: pool fill's
    monkeypatch.setattr(containers_module, "owner", lambda: elsewhere)
    pools["elsewhere"] = ContainerPool()
    specs = {name: folders.spec(folders.base / name) for name in (*pools, "gone")}
    for spec in specs.values():
        spec.workspace.mkdir()
    with subprocess.Popen(
        [sys.executable, "-c", FILLER, str(specs["gone"].workspace)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    ) as app:
        try:
            assert app.stdout is not None and app.stdout.readline() == "ready\n"
            (gone,) = pooled_ids(client, ContainerPool(), specs["gone"])
        finally:
            app.kill()  # the app crashes: its pool is never closed
    ids = {}

    async def go() -> None:
        for name, pool in pools.items():
            ids[name] = await one_pooled(pool, specs[name], client)
        assert exists(client, gone)
        assert await ContainerPool().adopt(DOCKER, specs["gone"]) == 0  # another pool looks
        assert not exists(client, gone)
        pooled_containers(client)  # as `workbench pool status` lists them
        assert all(exists(client, ids[name]) for name in ("elsewhere", "alive", "cli"))
        for pool in pools.values():
            await pool.close()

    asyncio.run(go())
    assert not exists(client, ids["alive"])  # closed by its owner


CLAIMER = """
import asyncio, json, sys, time
from pathlib import Path
from workbench.executors.warm.containers import ContainerPool
from workbench.executors.types import SessionSpec
from tests.docker.test_pool import DOCKER as posture
base, at = Path(sys.argv[1]), float(sys.argv[2])
spec = SessionSpec(base / "skill", "demo", base / "workspace", base / "runs")

async def go():
    pool = ContainerPool(refill=False)
    await pool.adopt(posture, spec)
    time.sleep(max(0.0, at - time.time()))  # both claim at the same moment
    claimed = await pool.claim(posture, spec)
    print(json.dumps(claimed.container_id if claimed else None))
    await pool.detach()

asyncio.run(go())
"""


@pytest.mark.docker
def test_two_claiming_processes_never_share_a_container(
    folders: Folders, client: docker.DockerClient
) -> None:
    pool, spec = ContainerPool(), folders.spec()

    async def go() -> tuple[str, list[str | None]]:
        container = await one_pooled(pool, spec, client)
        argv = [sys.executable, "-c", CLAIMER, str(folders.base), str(time.time() + 2.0)]
        claimers = [
            await asyncio.create_subprocess_exec(*argv, stdout=subprocess.PIPE, cwd=ROOT)
            for _ in range(CLAIMERS)
        ]
        try:
            async with asyncio.timeout(60):
                outputs = [await claimer.communicate() for claimer in claimers]
            return container, [json.loads(output) for output, _ in outputs]
        finally:
            for claimer in claimers:
                with contextlib.suppress(ProcessLookupError):
                    claimer.kill()
                await claimer.wait()
            # claimed: renamed, and its claimer may be removing it (gone or in progress is fine)
            remove_container(client.api, container)
            await pool.close()

    container, claimed = asyncio.run(go())
    assert sorted(claimed, key=str) == sorted([container] + [None] * (CLAIMERS - 1), key=str)
