"""Warm-pool containers in the engine: their labels, the claim lock, listing and draining.

Owns the labels a pooled container carries (`LABEL_POOL`, `LABEL_POOL_OWNER`, ...), the rename under
the user's claim lock that makes a claim exclusive (`rename_locked`), removing pooled containers
whose owning process is gone (`reap_orphans`), `pooled_containers` and `drain` for `workbench pool
status|drain`, and `mount_ids` / `holds_files`, which tell whether the folders a pooled container
mounts can still serve a run.
"""

import contextlib
import fcntl
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
from docker.errors import DockerException
from requests.exceptions import RequestException

from workbench.errors import ExecutorError
from workbench.executors.docker.owner import owner_gone, reap_sessions, session_name
from workbench.executors.docker.session import pooled, remove_container
from workbench.executors.docker.spec import LABEL_APP
from workbench.platform.paths import data_dir

LABEL_POOL = "org.skill-workbench.pool"  # the key's hash
LABEL_POOL_KEY = "org.skill-workbench.pool.key"  # the key in words
LABEL_POOL_POSTURE = "org.skill-workbench.pool.posture"
LABEL_POOL_SPARE = "org.skill-workbench.pool.spare"  # the spare workspace folder, or ""
LABEL_POOL_MOUNTS = "org.skill-workbench.pool.mounts"  # `mount_ids` of its folders
LABEL_POOL_OWNER = "org.skill-workbench.pool.owner"  # `owner.owner()` of the app, or ""
SPARE_PREFIX = ".pool-"
CLAIM_LOCK_NAME = "pool-claim.lock"
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
    folder = data_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(folder / CLAIM_LOCK_NAME, flags, 0o600)
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


def reap_orphans(client: docker.DockerClient, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Remove the unclaimed pooled containers in `found` (a container listing) whose owner is
    gone; the others. Each is claimed first (renamed out of the pool, under the claim lock), so
    one another process claims is left alone; a held lock ends the reaping at once."""
    kept = []
    for at, item in enumerate(found):
        labels = item.get("Labels") or {}
        if not (pooled(item) and owner_gone(labels.get(LABEL_POOL_OWNER, ""))):
            kept.append(item)
            continue
        name = str(item["Names"][0]).lstrip("/")
        reaped = session_name(secrets.token_hex(6))  # if not removed, reaped once we are gone
        try:
            rename_locked(client.api, name, reaped)
            remove_container(client.api, reaped)
            remove_spare(labels)
        except TimeoutError:
            return kept + found[at:]
        except (DockerException, RequestException, ExecutorError, OSError):
            pass
    return kept


def remove_spare(labels: dict[str, str]) -> None:
    """Remove a removed pooled container's spare workspace folder: only ever an empty one
    named `.pool-...` (one that was claimed is the run's workspace now, under another name)."""
    spare = Path(labels.get(LABEL_POOL_SPARE) or "/")
    if spare.name.startswith(SPARE_PREFIX):
        with contextlib.suppress(OSError):
            spare.rmdir()


def pooled_containers(client: docker.DockerClient) -> list[Pooled]:
    """Every pooled container in the engine, of any key and process, oldest first."""
    reap_sessions(client)
    found = client.api.containers(all=True, filters={"label": [LABEL_APP, LABEL_POOL]})
    found = reap_orphans(client, found)
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
    reap_sessions(client)
    pool = f"{LABEL_POOL}={digest}" if digest else LABEL_POOL
    found = client.api.containers(all=True, filters={"label": [LABEL_APP, pool]})
    found = [item for item in found if pooled(item)]
    for item in found:
        remove_container(client.api, item["Id"])
        remove_spare(item.get("Labels") or {})
    return len(found)
