"""The session's copies of the skill and the workspace, on an engine that does not see our files.

`CopiedFiles` fills the session's read-only skill volume through a loader container (again when
the skill changed), puts the workspace into the container's volume before each command unless it
already holds it (after checking its size against `WORKSPACE_LIMIT_BYTES`), and after each command
brings it back through a staging folder (`archive.unpack`) and carries the command's changes into
the workspace (`workspace.carry`), with progress in words. Engine faults are an `ExecutorError`
while sending and a caution on the run while bringing back; the workspace is never half-written.
Design notes: docs/notes.md, "Remote engines".
"""

import contextlib
import tarfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import docker
from docker.errors import APIError, DockerException, NotFound
from docker.types import Mount
from requests.exceptions import RequestException

from workbench.errors import ExecutorError, WorkspaceError
from workbench.executors.docker.archive import ArchiveTooLarge, Packer, fetched, unpack
from workbench.executors.docker.engine import missing_image
from workbench.executors.docker.spec import LABEL_APP
from workbench.executors.process.outcome import format_bytes
from workbench.executors.types import SessionSpec
from workbench.postures.model import MIB, PostureWarning, Severity
from workbench.workspace.carry import carry_back
from workbench.workspace.changes import EntryType
from workbench.workspace.diff import diff_snapshots
from workbench.workspace.safe_walk import remove_tree
from workbench.workspace.snapshot import Entry, Snapshot, take_snapshot, within

# The most file content a workspace may hold to be copied to an engine, either way. One place
# until the workspace size limit of the bounds issue lands and replaces it.
WORKSPACE_LIMIT_BYTES = 1024 * MIB
PROGRESS_EVERY_S = 0.5
LOADER_MOUNT = "/load"
STAGING_NAME = "workspace-copy"
EMPTY_SCRIPT = 'chmod -R u+rwX "$1" 2>/dev/null; find "$1" -mindepth 1 -delete && echo emptied'
EMPTY_TIMEOUT_S = 120

Words = Callable[[str], None]


def _engine_fault(error: BaseException) -> str:
    """A fault between the app and the engine in words, with what is known of its cause."""
    if isinstance(error, NotFound):
        return "the session container is gone"
    if isinstance(error, APIError):
        return f"the engine refused: {error.explanation or error}"
    if isinstance(error, OSError) and not isinstance(error, RequestException):
        return f"reading the local files failed: {error}"
    return f"the engine stopped answering or the connection was cut ({error})"


class _Meter:
    """Progress in words: a first line once a copy has taken `PROGRESS_EVERY_S`, then at most
    one per `PROGRESS_EVERY_S`, and a last one if any was said (a small copy says nothing)."""

    def __init__(self, on_progress: Words | None, what: str, total: int = 0) -> None:
        self._say = on_progress
        self._what = what
        self._total = total
        self._last = time.monotonic()
        self._said = False

    def __call__(self, done: int, final: bool = False) -> None:
        now = time.monotonic()
        if self._say is None or (final and not self._said):
            return
        if final or now - self._last >= PROGRESS_EVERY_S:
            self._last, self._said = now, True
            of = f" of {self._total / MIB:.1f}" if self._total else ""
            self._say(f"{self._what}: {done / MIB:.1f}{of} MiB")


class CopiedFiles:
    """The skill and the workspace of one session, copied to and from its container."""

    def __init__(
        self,
        api: docker.APIClient,
        spec: SessionSpec,
        owner: tuple[int, int],
        limit_bytes: int = WORKSPACE_LIMIT_BYTES,
    ) -> None:
        self._api = api
        self._spec = spec
        self._owner = owner
        self.limit_bytes = limit_bytes
        self.container_id = ""
        # What the container's /workspace holds as far as we know: None when unknown.
        self._held: Snapshot | None = None
        self._sent: Snapshot | None = None
        self._skill: Snapshot | None = None  # what the skill volume holds (None: empty)

    def adopt(self, container_id: str) -> None:
        """Serve the newly started container `container_id`, whose volumes are empty."""
        self.container_id = container_id
        self._held = Snapshot(self._spec.workspace, 0, {})
        self._sent = self._skill = None

    def load_skill(self, image: str, skill_volume: str) -> None:
        """Make the session's skill volume hold the skill folder as it is now (nothing to do
        when it already does). Blocking; `ExecutorError` when it could not."""
        skill = take_snapshot(self._spec.skill_dir)
        if self._skill is not None and not diff_snapshots(self._skill, skill):
            return
        self._check_size(skill, "The skill folder")
        try:
            loader = self._api.create_container(
                image,
                ["sh", "-c", EMPTY_SCRIPT, "sh", LOADER_MOUNT],
                user="0:0",
                labels={LABEL_APP: "1"},
                host_config=self._api.create_host_config(
                    mounts=[Mount(LOADER_MOUNT, skill_volume)], network_mode="none"
                ),
            )
        except docker.errors.ImageNotFound as error:
            raise ExecutorError(missing_image(image)) from error
        except (DockerException, RequestException) as error:
            raise ExecutorError(f"Could not copy the skill to the engine: {error}") from error
        try:
            if self._skill is not None:  # an older skill is there: the loader empties it
                self._api.start(loader["Id"])
                if self._api.wait(loader["Id"], timeout=EMPTY_TIMEOUT_S)["StatusCode"] != 0:
                    raise ExecutorError("Could not empty the engine's copy of the skill.")
            self._skill = None
            packer = Packer(self._spec.skill_dir, _sendable(skill), (0, 0))
            self._api.put_archive(loader["Id"], LOADER_MOUNT, packer.chunks())
            self._skill = skill
        except (DockerException, RequestException, OSError) as error:
            raise ExecutorError(
                f"Could not copy the skill to the engine: {_engine_fault(error)}"
            ) from error
        finally:
            with contextlib.suppress(DockerException, RequestException):
                self._api.remove_container(loader["Id"], force=True)

    def send(self, mount: str, on_progress: Words | None = None) -> None:
        """Make the container's `mount` hold what the workspace holds (see the module doc).
        `ExecutorError` when it could not; the container's copy is then unknown. Blocking."""
        local = take_snapshot(self._spec.workspace, exclude=self._spec.exclude)
        if local.truncated:
            raise ExecutorError(
                "The workspace has too many entries to be copied to the engine whole."
            )
        wanted = replace(local, entries={e.path: e for e in _sendable(local)})
        held, self._held, self._sent = self._held, None, None
        if held is not None and not diff_snapshots(held, wanted):
            self._held = self._sent = wanted
            return
        total = self._check_size(wanted, "The workspace")
        try:
            if held is None or held.entries:
                self._empty(mount)
            meter = _Meter(on_progress, "Copying the workspace to the engine", total)
            packer = Packer(self._spec.workspace, list(wanted.entries.values()), self._owner, meter)
            self._api.put_archive(self.container_id, mount, packer.chunks())
            meter(packer.sent_bytes, final=True)
        except (DockerException, RequestException, OSError) as error:
            raise ExecutorError(
                f"Could not copy the workspace to the engine: {_engine_fault(error)}"
            ) from error
        skipped = frozenset(packer.skipped)
        entries = {p: e for p, e in wanted.entries.items() if not within(p, skipped)}
        self._held = self._sent = replace(wanted, entries=entries)

    def _check_size(self, snapshot: Snapshot, what: str) -> int:
        total = sum(e.size for e in snapshot.entries.values() if e.type is EntryType.FILE)
        if total > self.limit_bytes:
            raise ExecutorError(
                f"{what} holds {format_bytes(total)} of files, over the "
                f"{format_bytes(self.limit_bytes)} that are copied to a remote engine; nothing "
                "was sent."
            )
        return total

    def _empty(self, mount: str) -> None:
        created = self._api.exec_create(self.container_id, ["sh", "-c", EMPTY_SCRIPT, "sh", mount])
        output = self._api.exec_start(created["Id"])
        if b"emptied" not in output:
            raise ExecutorError("Could not empty the container's copy of the workspace.")

    def bring_back(
        self, mount: str, run_dir: Path, on_progress: Words | None = None
    ) -> tuple[PostureWarning, ...]:
        """Carry what the command did to the container's `mount` into the workspace (see the
        module doc); the cautions of what could not be. Blocking."""
        sent, self._held = self._sent, None
        if sent is None:
            return ()
        staging = run_dir / STAGING_NAME
        try:
            staging.mkdir()
            meter = _Meter(on_progress, "Copying the workspace back from the engine")
            top = mount.rstrip("/").rpartition("/")[2]
            with fetched(self._api, self.container_id, mount) as chunks:
                unpacked = unpack(chunks, staging, top, self.limit_bytes, meter)
            meter(unpacked.received_bytes, final=True)
            staged = take_snapshot(staging, exclude=sent.excluded)
            report = carry_back(
                self._spec.workspace, sent, staged, staging, frozenset(unpacked.refused)
            )
        except ArchiveTooLarge:
            return _not_back(
                f"the engine's copy holds more than {format_bytes(self.limit_bytes)} of files"
            )
        except (DockerException, RequestException) as error:
            return _not_back(_engine_fault(error))
        except (tarfile.TarError, EOFError) as error:
            return _not_back(
                f"the copy arrived cut short or broken, as when the connection is cut ({error})"
            )
        except (OSError, WorkspaceError) as error:
            return _not_back(f"the staging folder or the workspace failed ({error})")
        finally:
            remove_tree(staging)
        cautions = []
        if unpacked.refused:
            self._held = None
            count = len(unpacked.refused)
            entries = "1 entry" if count == 1 else f"{count} entries"
            cautions.append(
                f"{entries} of the engine's copy of the workspace refused, not brought back: "
                f"{unpacked.notes()}."
            )
        else:
            self._held = staged
        if not report.complete:
            cautions.append(
                "Some of the command's changes could not be brought back from the engine: "
                + " ".join(report.notes[:5])
            )
        return tuple(PostureWarning(Severity.CAUTION, text) for text in cautions)


def _sendable(snapshot: Snapshot) -> list[Entry]:
    """The entries that are sent: folders, files and symlinks (not FIFOs, sockets, devices)."""
    return [e for e in snapshot.entries.values() if e.type is not EntryType.OTHER]


def _not_back(why: str) -> tuple[PostureWarning, ...]:
    text = (
        f"The workspace was not brought back from the engine: {why}. Your workspace is as it "
        "was before the command; what the command changed in the engine's copy is lost."
    )
    return (PostureWarning(Severity.CAUTION, text),)
