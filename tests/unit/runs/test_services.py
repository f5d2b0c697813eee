"""`RunServices`: built once over one data folder, and a run with no pool spawns no pool filler.

What a process starts is watched with an audit hook (`sys.addaudithook`): every spawn, exec
and Popen of this process, from any thread, while `spawns()` records.
"""

import asyncio
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.executors.process.local import LocalExecutor
from workbench.executors.types import CancelToken, OutputChunk
from workbench.postures.model import CONTAINER_POSTURES, Posture, PostureId
from workbench.runs.layout import DataLayout
from workbench.runs.service import RunPlan
from workbench.runs.services import RunServices

COLD = "Container started cold (no warm one ready)"
_SPAWN_EVENTS = ("os.posix_spawn", "os.exec", "os.spawn", "subprocess.Popen")
_recording: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _recording is not None and event in _SPAWN_EVENTS:
        _recording.append(repr(args))


sys.addaudithook(_audit)  # hooks cannot be removed: this one records only inside `spawns()`


@contextlib.contextmanager
def spawns() -> Iterator[list[str]]:
    """The arguments of every process this process starts meanwhile, as text."""
    global _recording
    _recording = []
    try:
        yield _recording
    finally:
        _recording = None


def pool_fillers(spawned: list[str]) -> list[str]:
    return [args for args in spawned if "'pool', 'fill'" in args]


def discard(chunk: OutputChunk) -> None:
    del chunk


def plan(tmp_path: Path, posture_id: PostureId, *argv: str) -> RunPlan:
    skill = tmp_path / "demo-skill"
    skill.mkdir(exist_ok=True)
    return RunPlan("demo-skill", skill, Posture(posture_id), argv, tmp_path / "ws")


def test_one_constructor_gives_the_layout_history_warm_starts_and_run_service(
    tmp_path: Path,
) -> None:
    layout = DataLayout(tmp_path / "data")
    command = RunServices.open(layout)
    assert command.runs.layout == command.layout == layout
    assert command.runs.history is command.history
    assert command.history.path == layout.history_path and layout.history_path.is_file()
    assert "warm" not in vars(command)  # docker-py loads at the first run, not before
    assert isinstance(command.runs.build_executor(Posture(PostureId.LOCAL)), LocalExecutor)
    assert "warm" in vars(command)  # the executor came through the warm starts
    assert set(command.engine_pools) == set(CONTAINER_POSTURES)  # a command borrows the engine's
    app = RunServices.open(layout, own_pools=True)
    assert app.engine_pools == {}
    assert set(app.warm.pools) == {*CONTAINER_POSTURES, PostureId.QUICKJS}
    asyncio.run(app.close())


def test_the_default_layout_is_the_users_data_folder(isolated_user_dirs: Path) -> None:
    services = RunServices.open()
    assert services.layout.root.is_relative_to(isolated_user_dirs)


def test_a_local_run_spawns_its_command_and_no_pool_filler(tmp_path: Path) -> None:
    services = RunServices.open(DataLayout(tmp_path / "data"))
    with spawns() as spawned:
        done = asyncio.run(
            services.run(plan(tmp_path, PostureId.LOCAL, "true"), discard, CancelToken())
        )
    assert done.result.exit_code == 0
    assert spawned  # the hook sees the command itself
    assert pool_fillers(spawned) == []


@pytest.mark.docker
def test_a_container_run_with_no_pool_starts_cold_and_spawns_no_pool_filler(
    docker_runtimes: set[str], tmp_path: Path
) -> None:
    del docker_runtimes
    services = RunServices.open(DataLayout(tmp_path / "data"))
    with spawns() as spawned:
        done = asyncio.run(
            services.run(plan(tmp_path, PostureId.DOCKER, "true"), discard, CancelToken())
        )
    assert done.result.exit_code == 0, done.result.cause
    assert done.result.card.started == COLD
    assert pool_fillers(spawned) == []
