"""Whether the engine sees this machine's files, asked of real engines: the local one does, the
remote one (its own mount namespace) does not, and a kept answer that went stale is caught."""

import asyncio
import json
from pathlib import Path

import pytest

from workbench.executors.docker.engine import engine_client, resolve_engine
from workbench.executors.docker.executor import DockerExecutor
from workbench.executors.docker.locality import (
    CACHE_NAME,
    Marker,
    confirm,
    known,
    remember,
    sees_files,
)
from workbench.executors.docker.spec import COPIED, LOCAL, WORKSPACE_MOUNT
from workbench.executors.types import SessionSpec
from workbench.platform.paths import data_dir
from workbench.postures.model import Posture, PostureId

pytestmark = [pytest.mark.docker, pytest.mark.timeout(60)]
IMAGE = Posture(PostureId.DOCKER).image


def _asked(workspace: Path) -> bool:
    client = engine_client()
    try:
        return sees_files(client, resolve_engine().url, workspace, IMAGE)
    finally:
        client.close()


def test_the_local_engine_sees_the_workspace_and_the_answer_is_kept(
    docker_runtimes: set[str], tmp_path: Path
) -> None:
    remember(resolve_engine().url, None)  # asked afresh, whatever this process knew
    assert _asked(tmp_path) is True
    assert list(tmp_path.iterdir()) == []  # the marker is gone
    kept = json.loads((data_dir() / CACHE_NAME).read_text())
    assert kept[resolve_engine().url] is True


@pytest.mark.remote_engine
def test_the_remote_engine_does_not_see_it(remote_engine: str, tmp_path: Path) -> None:
    remember(remote_engine, None)
    assert _asked(tmp_path) is False
    assert known(remote_engine) is False


@pytest.mark.remote_engine
def test_a_stale_answer_is_caught_in_the_session_and_asked_again(
    remote_engine: str, tmp_path: Path
) -> None:
    remember(remote_engine, True)  # as if the endpoint had been a local engine before
    spec = _session(tmp_path)
    executor = DockerExecutor(Posture(PostureId.DOCKER))

    async def go() -> tuple[tuple[str, bool], ...]:
        await executor.start(spec)
        try:
            return executor._card.checks
        finally:
            await executor.stop()

    checks = asyncio.run(go())
    assert (COPIED, True) in checks and (LOCAL, True) not in checks
    assert known(remote_engine) is None  # the next session asks again
    assert list((tmp_path / "workspace").iterdir()) == []


def test_a_session_container_lists_the_fresh_marker_by_its_name_and_size(
    docker_runtimes: set[str], tmp_path: Path
) -> None:
    spec = _session(tmp_path)
    executor = DockerExecutor(Posture(PostureId.DOCKER))

    async def go() -> tuple[bool, bool]:
        await executor.start(spec)
        try:
            assert executor._session is not None
            api, container = executor._session.api, executor._session.container_id
            confirmed = await asyncio.to_thread(confirm, api, container, spec.workspace)
            with Marker(spec.workspace) as marker:  # the same name, another size
                (spec.workspace / marker.name).write_bytes(marker.content + b"!")
                resized = await asyncio.to_thread(marker.listed_by, api, container, WORKSPACE_MOUNT)
            return confirmed, resized
        finally:
            await executor.stop()

    assert asyncio.run(go()) == (True, False)
    assert list(spec.workspace.iterdir()) == []


def _session(folder: Path) -> SessionSpec:
    """A session over a skill and an empty workspace in `folder`."""
    (folder / "skill").mkdir()
    (folder / "skill" / "SKILL.md").write_text("---\nname: demo\n---\n")
    (folder / "workspace").mkdir()
    return SessionSpec(folder / "skill", "demo", folder / "workspace", folder / "runs")
