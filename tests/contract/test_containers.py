"""What the docker posture adds to the contract, on the local engine and on a remote one: the
memory limit, no container or volume left after the session, and the workspace's round trip
(on the remote engine, through the copies)."""

from pathlib import Path
from typing import Any

import docker
import pytest

from tests.contract.conftest import Harness
from workbench.executors.docker.engine import engine_client
from workbench.executors.docker.spec import COPIED, LABEL_APP, LABEL_SESSION, volume_name
from workbench.executors.types import RunStatus
from workbench.postures.model import MIB

pytestmark = pytest.mark.timeout(90)

ODD = "odd\nname \\ é"


def _session_leftovers(session_id: str) -> tuple[list[object], list[dict[str, Any]]]:
    """The session's containers (by label) and volumes (by name: a volume that lost its labels
    would be left for good)."""
    client: docker.DockerClient = engine_client()
    try:
        filters = {"label": [LABEL_APP, f"{LABEL_SESSION}={session_id}"]}
        containers = client.api.containers(all=True, filters=filters)
        names = {volume_name(session_id, role) for role in ("skill", "workspace")}
        volumes = [
            volume
            for volume in client.api.volumes().get("Volumes") or []
            if volume["Name"] in names
        ]
    finally:
        client.close()
    return containers, volumes


def test_a_memory_bomb_is_oom_killed(container_harness: Harness) -> None:
    executor = container_harness.start(container_harness.posture(memory_bytes=64 * MIB))
    bomb = "b = []\nwhile True: b.append(bytearray(10**7))"
    result = container_harness.run("python3", "-c", bomb, executor=executor).result
    assert result.status is RunStatus.OOM_KILLED
    assert "memory limit 64 MiB" in result.cause
    assert result.leftover_processes == 0


def test_nothing_of_the_session_is_left_after_stop(container_harness: Harness) -> None:
    executor = container_harness.start(container_harness.posture())
    result = container_harness.run("sh", "-c", "sleep 60 &", executor=executor).result
    assert result.status is RunStatus.OK
    session_id = executor.session_id  # type: ignore[attr-defined]
    containers, volumes = _session_leftovers(session_id)
    assert len(containers) == 1
    copied = (COPIED, True) in result.card.checks
    assert len(volumes) == (2 if copied else 0)
    assert all(v["Labels"].get(LABEL_SESSION) == session_id for v in volumes)
    container_harness.loop.run_until_complete(executor.stop())
    assert _session_leftovers(session_id) == ([], [])


def test_the_workspace_round_trip_keeps_links_modes_and_odd_names(
    container_harness: Harness,
) -> None:
    workspace = container_harness.workspace
    (workspace / "edit.txt").write_text("text\n")
    (workspace / "gone.txt").write_text("bye\n")
    (workspace / "tool.sh").write_text("#!/bin/sh\n")
    (workspace / "tool.sh").chmod(0o644)
    script = (
        "printf more >> edit.txt && rm gone.txt && chmod 755 tool.sh && mkdir -p d/e && "
        f"printf deep > d/e/f && ln -s ../edit.txt d/link && ln -s /etc/passwd out && "
        f"printf odd > \"$(printf '{ODD}')\" && chmod 700 d"
    )
    result = container_harness.run("sh", "-c", script).result
    assert result.status is RunStatus.OK, result.cause
    assert (workspace / "edit.txt").read_text() == "text\nmore"
    assert not (workspace / "gone.txt").exists()
    assert (workspace / "tool.sh").stat().st_mode & 0o777 == 0o755
    assert (workspace / "d" / "e" / "f").read_text() == "deep"
    assert (workspace / "d" / "link").readlink() == Path("../edit.txt")
    assert (workspace / "out").readlink() == Path("/etc/passwd")
    assert (workspace / ODD).read_text() == "odd"
    assert (workspace / "d").stat().st_mode & 0o777 == 0o700
    again = container_harness.run("sh", "-c", "cat edit.txt d/link; ls").result
    assert again.stdout.text.startswith("text\nmoretext\nmore")


def test_a_special_file_the_command_made_stays_in_a_copy_and_is_named(
    container_harness: Harness,
) -> None:
    result = container_harness.run("sh", "-c", "mkfifo pipe && echo data > kept.txt").result
    assert result.status is RunStatus.OK
    copied = (COPIED, True) in result.card.checks
    names = sorted(p.name for p in container_harness.workspace.iterdir())
    assert names == (["kept.txt"] if copied else ["kept.txt", "pipe"])
    named = any("'pipe' (a device, FIFO or other special file)" in w.text for w in result.warnings)
    assert named is copied
