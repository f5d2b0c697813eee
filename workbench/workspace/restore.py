"""Putting a workspace back exactly as a snapshot recorded it.

`restore_workspace` snapshots the workspace as it is now, diffs it against the wanted
snapshot and undoes each difference: added entries are removed (deepest first), deleted and
modified ones are recreated from the blob store (parents first; files written to a temporary
name and renamed into place), permission bits and times are set back (folders last, deepest
first, so a read-only folder does not block its children). It never works below a path that
is not a real folder, so a symlink planted by the run cannot redirect it out of the workspace.
A final snapshot verifies the result; whatever could not be put back is reported, not raised.
"""

import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import WorkspaceError
from workbench.workspace.blobs import BlobSession, BlobStore
from workbench.workspace.changes import ChangeKind, EntryType, FileChange
from workbench.workspace.diff import diff_snapshots
from workbench.workspace.snapshot import Entry, Snapshot, iter_ancestors, take_snapshot


@dataclass(frozen=True, slots=True)
class RestoreReport:
    """What a restore did: how many paths it undid, and whether the result is exact."""

    undone: int
    complete: bool
    notes: tuple[str, ...] = ()


def restore_workspace(root: Path, wanted: Snapshot, store: BlobStore) -> RestoreReport:
    """Make the workspace at `root` match `wanted` byte for byte (see the module doc)."""
    if wanted.truncated:
        raise WorkspaceError(
            "The workspace had too many entries to be recorded completely, so it cannot be "
            "restored safely."
        )
    current = take_snapshot(root, previous=wanted)
    if current.unlisted:  # e.g. a folder the run made unreadable: open it up, then look again
        for folder in current.unlisted:
            if folder and (root / folder).is_dir() and not (root / folder).is_symlink():
                (root / folder).chmod(stat.S_IRWXU)
        current = take_snapshot(root, previous=wanted)
    changes = diff_snapshots(wanted, current)
    with store.session() as blobs:
        restorer = _Restorer(root, wanted, blobs)
        restorer.apply(changes)
    left = diff_snapshots(wanted, take_snapshot(root, previous=wanted))
    notes = restorer.notes + [f"{c.path!r} is still {c.kind.value}." for c in left]
    return RestoreReport(undone=len(changes), complete=not left, notes=tuple(notes))


def _depth(path: str) -> int:
    return path.count("/")


class _Restorer:
    def __init__(self, root: Path, wanted: Snapshot, blobs: BlobSession) -> None:
        self.root = root
        self.wanted = wanted
        self.blobs = blobs
        self.notes: list[str] = []
        self.folders_to_finish: set[str] = set()

    def apply(self, changes: tuple[FileChange, ...]) -> None:
        removals = [c for c in changes if _must_remove(c)]
        for change in sorted(removals, key=lambda c: _depth(c.path), reverse=True):
            self._guarded(change.path, self._remove, change)
        creations = [c for c in changes if c.before_type is not None and _must_create(c)]
        for change in sorted(creations, key=lambda c: c.path.split("/")):
            self._guarded(change.path, self._create, change)
        for change in changes:
            if change.kind is ChangeKind.MODE_CHANGED and change.before_type in (
                EntryType.FILE,
                EntryType.OTHER,
            ):
                self._guarded(change.path, self._chmod, change)
            self.folders_to_finish.update(iter_ancestors(change.path))
        self._finish_folders()

    def _guarded(self, rel: str, action: Callable[[FileChange], None], change: FileChange) -> None:
        try:
            self._check_parents(rel)
            action(change)
        except OSError as error:
            self.notes.append(f"Could not restore {rel!r}: {error.strerror or error}.")
        except WorkspaceError as error:
            self.notes.append(str(error))

    def _check_parents(self, rel: str) -> None:
        for folder in reversed(list(iter_ancestors(rel))):
            if not stat.S_ISDIR(os.lstat(self.root / folder).st_mode):
                raise WorkspaceError(f"{folder!r} is not a folder; {rel!r} was left alone.")
        self._make_writable(self.root / rel.rsplit("/", 1)[0] if "/" in rel else self.root)
        if "/" in rel:
            self.folders_to_finish.add(rel.rsplit("/", 1)[0])

    def _make_writable(self, folder: Path) -> None:
        mode = os.lstat(folder).st_mode
        if mode & stat.S_IRWXU != stat.S_IRWXU:
            folder.chmod(stat.S_IMODE(mode) | stat.S_IRWXU)

    def _remove(self, change: FileChange) -> None:
        path = self.root / change.path
        if change.after_type is EntryType.DIR:
            for folder, subfolders, _files in os.walk(path):  # never follows links
                for name in subfolders:
                    if not (Path(folder) / name).is_symlink():
                        self._make_writable(Path(folder) / name)
            shutil.rmtree(path)
        else:
            path.unlink()

    def _create(self, change: FileChange) -> None:
        entry = self.wanted.entries[change.path]
        path = self.root / entry.path
        if entry.type is EntryType.DIR:
            path.mkdir(mode=stat.S_IRWXU)
            _own_like_parent(path)
            self.folders_to_finish.add(entry.path)
        elif entry.type is EntryType.SYMLINK:
            path.symlink_to(entry.target or "")
            _own_like_parent(path)
            os.utime(path, ns=(entry.mtime_ns, entry.mtime_ns), follow_symlinks=False)
        elif entry.type is EntryType.FILE:
            self._write_file(path, entry)
        else:
            self.notes.append(f"{entry.path!r} was a FIFO, socket or device; not recreated.")

    def _write_file(self, path: Path, entry: Entry) -> None:
        if entry.digest is None or not self.blobs.has(entry.digest):
            self.notes.append(
                f"{entry.path!r}: its content was not kept, so it cannot be restored."
            )
            return
        fd, tmp_name = tempfile.mkstemp(prefix=".workbench-restore-", dir=path.parent)
        try:
            self.blobs.copy_to_fd(entry.digest, fd)
            _own_like_parent(Path(tmp_name))
            os.fchmod(fd, entry.mode)  # after the chown, which clears set-uid bits
        finally:
            os.close(fd)
        os.utime(tmp_name, ns=(entry.mtime_ns, entry.mtime_ns))
        Path(tmp_name).replace(path)

    def _chmod(self, change: FileChange) -> None:
        (self.root / change.path).chmod(self.wanted.entries[change.path].mode)

    def _finish_folders(self) -> None:
        for rel in sorted(self.folders_to_finish, key=_depth, reverse=True):
            entry = self.wanted.entries.get(rel)
            path = self.root / rel
            if entry is None or entry.type is not EntryType.DIR or path.is_symlink():
                continue
            try:
                path.chmod(entry.mode)
                os.utime(path, ns=(entry.mtime_ns, entry.mtime_ns))
            except OSError as error:
                self.notes.append(f"Could not reset folder {rel!r}: {error.strerror}.")


def _own_like_parent(path: Path) -> None:
    """As root, give a recreated entry its folder's owner, not root (owners are not kept)."""
    if os.geteuid() == 0:
        folder = path.parent.lstat()
        os.lchown(path, folder.st_uid, folder.st_gid)


def _must_remove(change: FileChange) -> bool:
    """The current entry has to go: added, of another type, or a link to elsewhere."""
    if change.after_type is None:
        return False
    return change.kind in (ChangeKind.ADDED, ChangeKind.TYPE_CHANGED) or (
        change.kind is ChangeKind.MODIFIED and change.after_type is not EntryType.FILE
    )


def _must_create(change: FileChange) -> bool:
    """The wanted entry has to be (re)made: deleted, of another type, or modified."""
    return change.kind in (ChangeKind.DELETED, ChangeKind.TYPE_CHANGED, ChangeKind.MODIFIED)
