"""A container's process table: the tree as the container sees it on a local runc engine, and
an honest "not visible" under gVisor and on a remote engine."""

import asyncio

import pytest

from tests.unit.monitor.test_tree import fullest, run_collecting, tables
from workbench.executors.docker.sampler import GVISOR_TREE, REMOTE_TREE, ContainerSampler
from workbench.monitor.sample import ResourceSample
from workbench.postures.model import MIB, Posture, PostureId

SHELL = "sleep 1 & sleep 1 & wait"


def test_a_remote_engine_says_the_tree_is_not_visible() -> None:
    document = {
        "cpu_stats": {"cpu_usage": {"total_usage": 1}},
        "memory_stats": {"usage": 1000},
        "pids_stats": {"current": 3},
    }
    seen: list[ResourceSample] = []

    async def go() -> None:
        sampler = ContainerSampler(None, lambda: document, 1, seen.append, 0.0)
        task = asyncio.create_task(sampler.run())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert seen and seen[0].tree is not None
    assert seen[0].tree.hidden == REMOTE_TREE and seen[0].tree.rows == ()


@pytest.mark.docker
@pytest.mark.timeout(90)
def test_a_docker_run_shows_the_containers_tree_with_its_own_pids(
    docker_runtimes: set[str],
) -> None:
    del docker_runtimes
    samples = run_collecting(Posture(PostureId.DOCKER), "sh", "-c", SHELL)
    found = tables(samples)
    assert found and all(t.pid_space == "container" and not t.hidden for t in found)
    assert all(t.rows for t in found)  # no empty table from before the command started
    full = fullest(found)
    # Only the command's processes: not the session's docker-init (pid 1) and idle sleep.
    assert 1 not in {row.pid for row in full.rows}
    shell = next(row for row in full.rows if row.cmdline == f"sh -c {SHELL}")
    assert shell.ppid == 0  # its parent (the engine's shim) is outside the container
    children = [row for row in full.rows if row.ppid == shell.pid]
    assert [row.cmdline for row in children] == ["sleep 1", "sleep 1"]
    assert full.total == len(full.rows) == 3
    assert max(sample.processes for sample in samples) == 3  # the count agrees with the table
    assert all(row.cpu_percent <= 100 for table in found for row in table.rows)


@pytest.mark.docker
@pytest.mark.gvisor
@pytest.mark.timeout(90)
def test_gvisor_says_the_tree_is_not_visible(docker_runtimes: set[str]) -> None:
    if "runsc" not in docker_runtimes:
        pytest.skip("the engine has no runsc runtime")
    posture = Posture(PostureId.GVISOR).with_limits(memory_bytes=256 * MIB)
    samples = run_collecting(posture, "sh", "-c", SHELL)
    found = tables(samples)
    assert found and all(t.hidden == GVISOR_TREE and t.rows == () for t in found)
    # gVisor's own threads fill the cgroup: no count, rather than theirs as the run's.
    assert all(sample.processes == 0 for sample in samples)
