"""Warm-pool containers in the engine: their labels, the claim lock, listing and draining.

A pooled container carries `LABEL_POOL` (its key's hash), the key in words, its posture and
its spare workspace folder in labels, and a `skill-workbench-pool-...` name until a claim
renames it (`rename_locked`: under a host-wide file lock, because the engine looks the old
name up before it locks the container, so two renames at the same moment could both succeed).
`pooled_containers` lists them for `workbench pool status`; `drain` removes every one, of
any key and any process, stale ones (stopped by an engine restart) too. `mount_ids` and
`holds_files` tell whether the folders a pooled container mounts can still serve a run.
"""

import calendar
import contextlib
import fcntl
import os
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker

from workbench.executors.docker_session import pooled, remove_container
from workbench.executors.docker_spec import LABEL_APP

LABEL_POOL = "org.skill-workbench.pool"  # the key's hash
LABEL_POOL_KEY = "org.skill-workbench.pool.key"  # the key in words
LABEL_POOL_POSTURE = "org.skill-workbench.pool.posture"
LABEL_POOL_SPARE = "org.skill-workbench.pool.spare"  # the spare workspace folder, or ""
LABEL_POOL_MOUNTS = "org.skill-workbench.pool.mounts"  # `mount_ids` of its folders
SPARE_PREFIX = ".pool-"
CLAIM_LOCK = Path(tempfile.gettempdir()) / "skill-workbench-pool.lock"
CLAIM_LOCK_S = 5.0


@dataclass(frozen=True, slots=True)
class Pooled:
    """A pooled container as the engine lists it (for `workbench pool status`)."""

    name: str
    key: str
    posture: str
    age_s: float
    state: str


def rename_locked(api: docker.APIClient, name: str, new_name: str) -> None:
    """Rename a pooled container by its pool name, holding the host's claim lock.

    The engine looks the old name up before it locks the container, so two renames at the
    same moment can both succeed; under the lock the second finds the name gone (NotFound).
    """
    fd = os.open(CLAIM_LOCK, os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + CLAIM_LOCK_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError("the pool's claim lock is held too long") from None
                time.sleep(0.005)
        api.rename(name, new_name)
    finally:
        os.close(fd)  # releases the lock


def mount_ids(skill_dir: Path, workspace: Path) -> str:
    """The device and inode of the skill folder and workspace: a folder deleted and made again
    under its name is another folder, which a started container does not see."""
    ids = [(path.stat().st_dev, path.stat().st_ino) for path in (skill_dir, workspace)]
    return " ".join(f"{dev}:{ino}" for dev, ino in ids)


def holds_files(folder: Path) -> bool:
    """True when `folder` exists and is not an empty folder."""
    try:
        return any(folder.iterdir())
    except FileNotFoundError:
        return False
    except OSError:
        return True


def labels_of(attrs: dict[str, Any]) -> dict[str, str]:
    """A container's labels, from its inspect data."""
    labels: dict[str, str] = (attrs.get("Config") or {}).get("Labels") or {}
    return labels


def execs_since_created(client: docker.DockerClient, attrs: dict[str, Any]) -> int:
    """How many execs the engine created in the container since it was created."""
    created = attrs["Created"][:19]  # "2026-11-22T16:11:02.123456789Z" (UTC) -> seconds
    since = calendar.timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%S"))
    filters = {"container": attrs["Id"], "event": "exec_create"}
    until = datetime.now(UTC)
    events = client.api.events(since=since, until=until, filters=filters)
    return sum(1 for _ in events)


def pooled_containers(client: docker.DockerClient) -> list[Pooled]:
    """Every pooled container in the engine, of any key and process, oldest first."""
    found = client.api.containers(all=True, filters={"label": [LABEL_APP, LABEL_POOL]})
    now = time.time()
    items = [
        Pooled(
            name=str(item["Names"][0]).lstrip("/"),
            key=str((item.get("Labels") or {}).get(LABEL_POOL_KEY, "")),
            posture=str((item.get("Labels") or {}).get(LABEL_POOL_POSTURE, "")),
            age_s=max(0.0, now - float(item.get("Created") or now)),
            state=str(item.get("State") or ""),
        )
        for item in found
        if pooled(item)
    ]
    return sorted(items, key=lambda item: -item.age_s)


def drain(client: docker.DockerClient, digest: str = "") -> int:
    """Remove every pooled container in the engine (any process, stale ones too), or those
    of one key's `digest`, and their spare workspaces; how many were removed."""
    pool = f"{LABEL_POOL}={digest}" if digest else LABEL_POOL
    found = client.api.containers(all=True, filters={"label": [LABEL_APP, pool]})
    found = [item for item in found if pooled(item)]
    for item in found:
        remove_container(client.api, item["Id"])
        spare = (item.get("Labels") or {}).get(LABEL_POOL_SPARE)
        if spare:
            with contextlib.suppress(OSError):
                Path(spare).rmdir()
    return len(found)
