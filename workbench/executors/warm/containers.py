"""`ContainerPool`: the warm pool of the docker and gvisor postures (a `WarmPool`).

The pool keeps `size` started containers ready for one key (the container options for one skill
folder and one workspace, or the fresh-workspace key) set by `prime()`, refills in the background
after each hand-out, and drains containers of an older key. `claim()` takes one under the user's
claim lock, checks it is still clean and still mounts the run's folders (for a fresh workspace,
renames its spare folder over the run's), and hands it to one session, which removes it afterwards;
`executor()` builds the executors that claim, falling back to a cold start. `status()` reports what
is ready and any engine problem (an engine that does not see this machine's files, `locality`,
keeps no pool), and `close()` removes what the pool holds. Design notes: docs/notes.md, "Warm
pools".
"""

import asyncio
import contextlib
import hashlib
import json
import secrets
from dataclasses import dataclass, replace
from pathlib import Path

import docker
from docker.errors import DockerException, NotFound
from requests.exceptions import RequestException

from workbench.errors import ExecutorError
from workbench.executors.docker.engine import EngineUnreachable, engine_client, resolve_engine
from workbench.executors.docker.executor import ENGINE_TIMEOUT_S, DockerExecutor, runtime_of
from workbench.executors.docker.locality import sees_files
from workbench.executors.docker.owner import owner, session_name
from workbench.executors.docker.session import (
    POOL_NAME_PREFIX,
    DockerSession,
    pooled,
    remove_container,
)
from workbench.executors.docker.spec import LABEL_SESSION, WORKSPACE_MOUNT, container_options
from workbench.executors.types import SessionSpec
from workbench.executors.warm.container_checks import clean_at_claim, spare_of
from workbench.executors.warm.container_claims import (
    LABEL_POOL,
    LABEL_POOL_KEY,
    LABEL_POOL_MOUNTS,
    LABEL_POOL_OWNER,
    LABEL_POOL_POSTURE,
    LABEL_POOL_SPARE,
    SPARE_PREFIX,
    holds_files,
    labels_of,
    mount_ids,
    reap_orphans,
    remove_spare,
    rename_locked,
)
from workbench.executors.warm.starts import PoolStatus
from workbench.postures.model import MIB, Posture

FRESH = "<fresh>"
STALE_STATES = ("exited", "dead")


@dataclass(frozen=True, slots=True)
class PoolKey:
    """What a pooled container serves: the hash of its options, in words, and how to make it."""

    digest: str
    text: str
    posture: Posture
    session: SessionSpec
    fresh: bool  # the session's workspace is a fresh one: mount a spare in its place


@dataclass(frozen=True, slots=True)
class Claimed:
    """A warm container handed out to one session."""

    container_id: str
    session_id: str


class ContainerPool:
    """Warm containers of one container posture; see the module doc."""

    def __init__(
        self, spares_dir: Path | None = None, *, owned: bool = True, refill: bool = True
    ) -> None:
        """`owned`: its containers go when this process does; `refill`: after each claim."""
        self.spares_dir = spares_dir.absolute() if spares_dir is not None else None
        self._owner = owner() if owned else ""
        self._refill = refill
        self._size = 0
        self._key: PoolKey | None = None
        self._ready: list[str] = []  # names of the key's pooled containers, at the last look
        self._mine: dict[str, str] = {}  # name -> key digest, of the ones this pool started
        self._starting = 0
        self._problem = ""
        self._client: docker.DockerClient | None = None
        self._connecting = asyncio.Lock()
        self._fill: asyncio.Task[None] | None = None

    def status(self) -> PoolStatus:
        """The pool's state now (no I/O)."""
        key = self._key.text if self._key is not None else ""
        return PoolStatus(self._size, len(self._ready), self._starting, key, self._problem)

    def executor(self, posture: Posture) -> DockerExecutor:
        """A new executor for `posture` that takes a warm container from this pool."""
        return DockerExecutor(posture, pool=self)

    async def resize(self, size: int) -> None:
        """Keep `size` ready from now on; 0 drains what this pool started."""
        self._size = max(0, size)
        if self._size == 0:
            await self.settle()
            self._ready, self._problem = [], ""
            try:
                await self._drain_mine(keep="")
            except (DockerException, RequestException, ExecutorError) as error:
                self._problem = _engine_problem(error)
        else:
            self._kick()

    async def prime(self, posture: Posture, session: SessionSpec) -> None:
        """Serve runs of `posture` in `session` from now on; fills in the background."""
        key = self.key(posture, session)
        if self._key is not None and key.digest == self._key.digest:
            self._key = key
            self._kick()
            return
        self._key, self._ready = key, []
        if self._size:
            self._kick()

    async def adopt(self, posture: Posture, session: SessionSpec) -> int:
        """Serve the key of `posture` in `session` at the size the engine holds for it now
        (containers another process pooled, `workbench pool fill`); how many that is."""
        self._key = self.key(posture, session)
        try:
            self._ready = await self._listed(self._key.digest)
        except (DockerException, RequestException, ExecutorError) as error:
            self._problem = _engine_problem(error)
            return 0
        self._size = len(self._ready)
        return self._size

    async def settle(self) -> None:
        """Wait for the fill in progress."""
        if self._fill is not None:
            await asyncio.gather(self._fill, return_exceptions=True)

    async def detach(self) -> None:
        """Wait for the fill in progress, then let go of the engine; the ready containers
        stay in it for the next process (`workbench pool fill`, `workbench run`)."""
        await self.settle()
        self._close_client()

    async def close(self) -> None:
        """Remove every container this pool started and still holds."""
        self._size = 0
        await self.settle()
        with contextlib.suppress(DockerException, RequestException, ExecutorError):
            await self._drain_mine(keep="")
        self._ready = []
        self._close_client()

    def key(self, posture: Posture, session: SessionSpec) -> PoolKey:
        """The key of runs of `posture` in `session`."""
        workspace = session.workspace.absolute()
        fresh = self.spares_dir is not None and workspace.parent == self.spares_dir
        options = container_options(posture, session, "", runtime_of(posture))
        del options["labels"]
        if fresh:
            options["volumes"][1] = f"{FRESH}:{WORKSPACE_MOUNT}:rw"
        digest = hashlib.sha256(json.dumps(options, sort_keys=True).encode()).hexdigest()[:16]
        where = "a fresh workspace" if fresh else str(workspace)
        limits = posture.limits
        text = (
            f"{session.skill_name} in {where} ({posture.id}, {limits.memory_bytes / MIB:g} MiB, "
            f"{limits.cpus:g} cpus, network {posture.network})"
        )
        return PoolKey(digest, text, posture, session, fresh)

    async def claim(self, posture: Posture, session: SessionSpec) -> Claimed | None:
        """A clean warm container for `posture` in `session`, or None (then start cold).

        Only while the pool is on (size > 0); the pool then refills in the background.
        """
        if self._size == 0:
            return None
        key = self.key(posture, session)
        if key.fresh and holds_files(session.workspace):
            return None  # a spare can only take the place of an empty folder
        try:
            client = await self._engine()
            names = await self._listed(key.digest)
        except (DockerException, RequestException, ExecutorError) as error:
            self._problem = _engine_problem(error)
            return None
        names.sort(key=lambda name: name not in self._mine)  # ours first
        claimed: Claimed | None = None
        for name in names:
            try:
                claimed = await self._take(client, name, key, session)
            except TimeoutError:
                break  # another process holds the claim lock: start cold now, not per container
            if claimed is not None:
                break
        self._kick()
        return claimed

    async def _take(
        self, client: docker.DockerClient, name: str, key: PoolKey, session: SessionSpec
    ) -> Claimed | None:
        claimed_name = session_name(secrets.token_hex(6))  # owned by this process from now on
        try:
            await asyncio.to_thread(rename_locked, client.api, name, claimed_name)
        except TimeoutError:
            raise
        except (DockerException, RequestException, OSError):
            return None  # NotFound: another run or process claimed it first
        self._mine.pop(name, None)
        with contextlib.suppress(ValueError):
            self._ready.remove(name)
        labels: dict[str, str] = {}
        try:
            attrs = await asyncio.to_thread(client.api.inspect_container, claimed_name)
            labels = labels_of(attrs)
            spare = spare_of(attrs, labels[LABEL_POOL_SPARE], self.spares_dir)
            mounted = spare if key.fresh else session.workspace
            ids = mount_ids(session.skill_dir, mounted) if mounted is not None else None
            same = labels.get(LABEL_POOL) == key.digest and labels.get(LABEL_POOL_MOUNTS) == ids
            if same and await asyncio.to_thread(clean_at_claim, client, attrs, key.posture):
                if spare is not None and key.fresh:  # refused unless the workspace is empty
                    spare.rename(session.workspace)
                return Claimed(str(attrs["Id"]), labels.get(LABEL_SESSION, ""))
        except (DockerException, RequestException, OSError, KeyError):
            pass
        with contextlib.suppress(DockerException, RequestException, ExecutorError):
            await self._remove(client, claimed_name, labels)
        return None

    def _kick(self) -> None:
        """Start the background fill unless it runs already."""
        if self._refill and (self._fill is None or self._fill.done()):
            self._fill = asyncio.create_task(self._filling())

    async def _filling(self) -> None:
        try:
            while self._size and (key := self._key) is not None:
                await self._drain_mine(keep=key.digest)
                names = await self._listed(key.digest)
                if key is not self._key:
                    continue  # primed for another key meanwhile
                self._ready = names
                missing = self._size - len(names)
                if missing <= 0:
                    break
                self._starting = missing
                started = (self._start_one(key) for _ in range(missing))
                results = await asyncio.gather(*started, return_exceptions=True)
                errors = [result for result in results if isinstance(result, BaseException)]
                if errors:
                    raise errors[0]
                self._problem = ""
        except (DockerException, RequestException, ExecutorError, OSError) as error:
            self._problem = _engine_problem(error)
        finally:
            self._starting = 0

    async def _start_one(self, key: PoolKey) -> None:
        client = await self._engine()
        token = secrets.token_hex(6)
        session = key.session
        spare = None
        if key.fresh:
            assert self.spares_dir is not None
            spare = self.spares_dir / f"{SPARE_PREFIX}{token}"
            spare.mkdir(parents=True)
            session = replace(session, workspace=spare)
        url, image = resolve_engine().url, key.posture.image
        if not await asyncio.to_thread(sees_files, client, url, session.workspace, image):
            if spare is not None:
                spare.rmdir()
            raise ExecutorError(REMOTE_ENGINE)
        name = f"{POOL_NAME_PREFIX}{key.digest[:12]}-{token}"
        options = container_options(key.posture, session, token, runtime_of(key.posture))
        options["name"] = name
        options["labels"] |= {
            LABEL_POOL: key.digest,
            LABEL_POOL_KEY: key.text,
            LABEL_POOL_POSTURE: key.posture.id.value,
            LABEL_POOL_SPARE: str(spare or ""),
            LABEL_POOL_MOUNTS: mount_ids(session.skill_dir, session.workspace),
            LABEL_POOL_OWNER: self._owner,
        }
        self._mine[name] = key.digest
        try:
            await DockerSession(client, options).start()
        except BaseException:
            self._mine.pop(name, None)
            if spare is not None:
                with contextlib.suppress(OSError):
                    spare.rmdir()
            raise
        finally:
            self._starting = max(0, self._starting - 1)
        if self._key is not None and key.digest == self._key.digest:
            self._ready.append(name)

    async def _drain_mine(self, keep: str) -> None:
        """Remove the pooled containers this pool started for any key but `keep`."""
        gone = [name for name, digest in self._mine.items() if digest != keep]
        if not gone:
            return
        client = await self._engine()
        for name in gone:
            self._mine.pop(name, None)
            with contextlib.suppress(NotFound):
                attrs = await asyncio.to_thread(client.api.inspect_container, name)
                await self._remove(client, name, labels_of(attrs))

    async def _remove(self, client: docker.DockerClient, name: str, labels: dict[str, str]) -> None:
        await asyncio.to_thread(remove_container, client.api, name)
        remove_spare(labels)

    async def _listed(self, digest: str) -> list[str]:
        """The running pooled containers of `digest` in the engine; stopped ones are removed
        (not ones still being created or started, by this pool or another process)."""
        client = await self._engine()
        found = await asyncio.to_thread(
            client.api.containers, all=True, filters={"label": [f"{LABEL_POOL}={digest}"]}
        )
        found = await asyncio.to_thread(reap_orphans, client, found)
        names = []
        for item in found:
            if not pooled(item):
                continue
            name = str(item["Names"][0]).lstrip("/")
            state = item.get("State")
            if state == "running":
                names.append(name)
            elif state in STALE_STATES:  # the engine restarted, or it died
                await self._remove(client, name, item.get("Labels") or {})
        return names

    async def _engine(self) -> docker.DockerClient:
        async with self._connecting:  # one client, however many ask at once
            if self._client is None:
                self._client = await asyncio.to_thread(engine_client, ENGINE_TIMEOUT_S)
            return self._client

    def _close_client(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


REMOTE_ENGINE = (
    "The engine does not see this machine's files (a remote engine): it keeps no warm pool, "
    "and each run copies the workspace to it instead."
)


def _engine_problem(error: BaseException) -> str:
    """Why the pool cannot fill, in words (the engine's own message names the engine)."""
    if isinstance(error, ExecutorError | EngineUnreachable):
        return str(error)
    return f"The Docker engine failed: {error}"
