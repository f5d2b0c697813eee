"""Putting a workspace back exactly as a snapshot recorded it.

`restore_workspace` removes every entry the wanted snapshot does not have as it is, recreates the
deleted and modified ones from the blob store (`restore_from`: from any other `Contents`, such as a
staged copy of the workspace, see `carry`), and sets permission bits and times back, all by
descriptor without following links, so nothing the run planted leads it out of the workspace; a
final snapshot verifies the result, and the report counts what was put back and names each path that
could not be, with the reason.
"""

import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from workbench.errors import WorkspaceError
from workbench.workspace.blobs import BlobStore
from workbench.workspace.changes import ChangeKind, EntryType, FileChange, quoted
from workbench.workspace.diff import diff_snapshots
from workbench.workspace.snapshot import (
    DEFAULT_SNAPSHOT_LIMITS,
    Entry,
    Snapshot,
    SnapshotLimits,
    iter_ancestors,
    take_snapshot,
)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_PATH_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_T = TypeVar("_T")


class Contents(Protocol):
    """Where a restore reads file contents from, by content hash (a `BlobSession` is one)."""

    def has(self, digest: str) -> bool: ...

    def copy_to_fd(self, digest: str, out_fd: int) -> bool: ...


@dataclass(frozen=True, slots=True)
class RestoreReport:
    """What a restore did: `undone` paths put back, `left` paths that still differ.

    `complete` is True when the workspace now matches the snapshot exactly; `notes` say, once
    per path, why a path could not be put back, and anything else the restore ran into.
    """

    undone: int
    complete: bool
    notes: tuple[str, ...] = ()
    left: int = 0


def restore_workspace(
    root: Path,
    wanted: Snapshot,
    store: BlobStore,
    limits: SnapshotLimits = DEFAULT_SNAPSHOT_LIMITS,
) -> RestoreReport:
    """Make the workspace at `root` match `wanted` byte for byte (see the module doc).

    `limits` are those `wanted` was taken with; the restore's own snapshots use them too.
    """
    with store.session() as blobs:
        return restore_from(root, wanted, blobs, limits)


def restore_from(
    root: Path,
    wanted: Snapshot,
    contents: Contents,
    limits: SnapshotLimits = DEFAULT_SNAPSHOT_LIMITS,
) -> RestoreReport:
    """`restore_workspace`, with the files' contents read from `contents`."""
    if wanted.truncated:
        raise WorkspaceError(
            "The workspace had too many entries to be recorded completely, so it cannot be "
            "restored safely."
        )
    if "" in wanted.unlisted:
        raise WorkspaceError("The workspace could not be listed when it was recorded.")
    restorer = _Restorer(root, wanted, contents)
    restorer.prune()
    current = take_snapshot(root, previous=wanted, limits=limits)
    restorer.apply(diff_snapshots(wanted, current))
    return restorer.report(take_snapshot(root, previous=wanted, limits=limits))


@dataclass(slots=True)
class _Frame:
    fd: int
    prefix: str
    subdirs: list[str] = field(default_factory=list)


class _Restorer:
    def __init__(self, root: Path, wanted: Snapshot, blobs: Contents) -> None:
        self.root = root
        self.wanted = wanted
        self.blobs = blobs
        self.notes: dict[str, str] = {}  # the first reason a path could not be put back
        self.removed = 0
        self.put_back: set[str] = set()
        self.folders_to_finish: set[str] = set()
        self.mode_changed_folders: set[str] = set()
        self.root_mode: int | None = None  # set when the prune had to open the root up

    # -- pass 1: remove what the wanted snapshot does not have ------------------------------

    def prune(self) -> None:
        """Remove every entry `wanted` does not have as it is now (see the module doc)."""
        try:
            path_fd = os.open(self.root, _PATH_FLAGS & ~os.O_NOFOLLOW)
            try:
                self.root_mode, root_fd = _open_up(path_fd)
            finally:
                os.close(path_fd)
        except OSError as error:
            raise WorkspaceError(
                f"Cannot read the workspace {self.root}: {error.strerror}."
            ) from None
        stack = [_Frame(root_fd, "")]
        try:
            stack[0].subdirs = self._prune_folder(root_fd, "")
            while stack:
                frame = stack[-1]
                if not frame.subdirs:
                    os.close(stack.pop().fd)
                    continue
                rel = frame.prefix + frame.subdirs.pop()
                child = self._guarded(rel, self._enter, frame.fd, rel)
                if child is not None:
                    stack.append(_Frame(child, rel + "/"))
                    stack[-1].subdirs = self._prune_folder(child, rel + "/")
        finally:
            for frame in stack:  # only left open when the walk failed
                os.close(frame.fd)

    def _enter(self, parent_fd: int, rel: str) -> int:
        old_mode, fd = _open_folder(parent_fd, rel.rsplit("/", 1)[-1])
        if old_mode is not None:
            self.folders_to_finish.add(rel)
        return fd

    def _prune_folder(self, fd: int, prefix: str) -> list[str]:
        """Remove what does not belong in one folder; returns the subfolders to walk into."""
        try:
            with os.scandir(fd) as listing:
                names = [item.name for item in listing]
        except OSError as error:
            self._note(
                prefix.rstrip("/"), f"Cannot list folder {quoted(prefix)}: {error.strerror}."
            )
            return []
        subdirs = []
        for name in names:
            rel = prefix + name
            if rel in self.wanted.excluded:
                continue
            want = self.wanted.entries.get(rel)
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                keep = want is not None and _is_as_wanted(want, st, fd, name)
            except FileNotFoundError:  # gone meanwhile
                continue
            except OSError as error:
                self._note(rel, f"Cannot read {quoted(rel)}: {error.strerror}.")
                continue
            if not keep:
                self._guarded(rel, self._remove, fd, rel, st)
            elif stat.S_ISDIR(st.st_mode) and rel not in self.wanted.unlisted:
                subdirs.append(name)
        return subdirs

    def _remove(self, parent_fd: int, rel: str, st: os.stat_result) -> None:
        """Remove one entry of the folder `parent_fd` and, for a folder, all below it."""
        name = rel.rsplit("/", 1)[-1]
        if stat.S_ISDIR(st.st_mode):
            gone = _remove_tree(parent_fd, name)
        else:
            os.unlink(name, dir_fd=parent_fd)
            gone = 1
        self.removed += gone - (rel in self.wanted.entries)  # made again below: counted there

    # -- pass 2: recreate what was deleted or modified, set modes and times back ------------

    def apply(self, changes: tuple[FileChange, ...]) -> None:
        creations = [c for c in changes if c.before_type is not None and _must_create(c)]
        for change in sorted(creations, key=lambda c: c.path.split("/")):
            self._guarded(change.path, self._create, change)
        for change in changes:
            if change.kind is ChangeKind.MODE_CHANGED:
                if change.before_type is EntryType.DIR:
                    self.mode_changed_folders.add(change.path)
                    self.folders_to_finish.add(change.path)
                else:
                    self._guarded(change.path, self._chmod, change)
            self.folders_to_finish.update(iter_ancestors(change.path))
        self._finish_folders()

    def _guarded(self, rel: str, action: Callable[..., _T], *args: Any) -> _T | None:
        """`action(*args)`, or None and a note for `rel` when it fails."""
        try:
            return action(*args)
        except OSError as error:
            self._note(rel, f"Could not restore {quoted(rel)}: {error.strerror or error}.")
        except WorkspaceError as error:
            self._note(rel, str(error))
        return None

    def _note(self, rel: str, note: str) -> None:
        self.notes.setdefault(rel, note)

    def _check_parents(self, rel: str) -> None:
        for folder in reversed(list(iter_ancestors(rel))):
            if not stat.S_ISDIR(os.lstat(self.root / folder).st_mode):
                raise WorkspaceError(
                    f"{quoted(folder)} is not a folder; {quoted(rel)} was left alone."
                )
        self._make_writable(self.root / rel.rsplit("/", 1)[0] if "/" in rel else self.root)
        if "/" in rel:
            self.folders_to_finish.add(rel.rsplit("/", 1)[0])

    def _make_writable(self, folder: Path) -> None:
        mode = os.lstat(folder).st_mode
        if mode & stat.S_IRWXU != stat.S_IRWXU:
            folder.chmod(stat.S_IMODE(mode) | stat.S_IRWXU)

    def _create(self, change: FileChange) -> None:
        self._check_parents(change.path)
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
        else:  # a FIFO could be made again, but the snapshot does not say which kind it was
            raise WorkspaceError(
                f"{quoted(entry.path)} was a FIFO, socket or device: restore does not recreate "
                "those."
            )
        self.put_back.add(entry.path)

    def _write_file(self, path: Path, entry: Entry) -> None:
        if entry.digest is None or not self.blobs.has(entry.digest):
            raise WorkspaceError(
                f"{quoted(entry.path)}: its content was not kept (too large, or unreadable "
                "when the run started), so it cannot be put back."
            )
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
        self._check_parents(change.path)
        (self.root / change.path).chmod(self.wanted.entries[change.path].mode)
        self.put_back.add(change.path)

    def _finish_folders(self) -> None:
        for rel in sorted(self.folders_to_finish, key=_depth, reverse=True):
            entry = self.wanted.entries.get(rel)
            path = self.root / rel
            if entry is None or entry.type is not EntryType.DIR:
                continue
            try:
                if path.is_symlink():
                    continue
                path.chmod(entry.mode)
                os.utime(path, ns=(entry.mtime_ns, entry.mtime_ns))
            except OSError as error:
                self._note(rel, f"Could not reset folder {quoted(rel)}: {error.strerror}.")
                continue
            if rel in self.mode_changed_folders:
                self.put_back.add(rel)
        if self.root_mode is not None:
            try:
                self.root.chmod(self.root_mode)
            except OSError as error:
                self._note("", f"Could not reset the workspace's mode: {error.strerror}.")

    # -- the report --------------------------------------------------------------------------

    def report(self, final: Snapshot) -> RestoreReport:
        """What was put back and, once per path, what was not and why, checked on `final`."""
        left = diff_snapshots(self.wanted, final)
        notes = [self.notes.pop(c.path, "") or _still(c) for c in left]
        notes += self.notes.values()
        unseen = [rel for rel in final.unlisted if rel not in self.wanted.unlisted]
        notes += [f"{quoted(rel)} could not be checked after the restore." for rel in unseen]
        if final.truncated:
            notes.append("The workspace has too many entries for the restore to be checked.")
        undone = self.removed + len(self.put_back - {c.path for c in left})
        complete = not left and not unseen and not final.truncated
        return RestoreReport(undone=undone, complete=complete, notes=tuple(notes), left=len(left))


def _depth(path: str) -> int:
    return path.count("/")


def _still(change: FileChange) -> str:
    if change.kind is ChangeKind.ADDED:
        return f"{quoted(change.path)} is still there; the run added it."
    return f"{quoted(change.path)} is still {change.kind.replace('_', ' ')}."


def _is_as_wanted(want: Entry, st: os.stat_result, parent_fd: int, name: str) -> bool:
    """Whether the entry is of the wanted type (and, for a link, has the wanted target)."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return want.type is EntryType.DIR
    if stat.S_ISREG(mode):
        return want.type is EntryType.FILE
    if stat.S_ISLNK(mode):
        return want.type is EntryType.SYMLINK and os.readlink(name, dir_fd=parent_fd) == want.target
    return want.type is EntryType.OTHER


def _open_up(path_fd: int) -> tuple[int | None, int]:
    """Open the folder `path_fd` (an `O_PATH` descriptor) for reading, first giving its owner
    full access when it lacks it; returns (the mode it had if it was changed, descriptor)."""
    mode = stat.S_IMODE(os.fstat(path_fd).st_mode)
    old_mode = None
    if mode & stat.S_IRWXU != stat.S_IRWXU:
        Path(f"/proc/self/fd/{path_fd}").chmod(mode | stat.S_IRWXU)  # the folder, not a link
        old_mode = mode
    return old_mode, os.open(".", _DIR_FLAGS, dir_fd=path_fd)


def _open_folder(parent_fd: int, name: str) -> tuple[int | None, int]:
    """`_open_up` for the folder `name` in `parent_fd`; a link there is refused (ELOOP)."""
    path_fd = os.open(name, _PATH_FLAGS, dir_fd=parent_fd)
    try:
        return _open_up(path_fd)
    finally:
        os.close(path_fd)


def _remove_tree(parent_fd: int, name: str) -> int:
    """Remove the folder `name` in `parent_fd` with all below it; returns how many entries went.

    One folder is open at a time (a tree thousands deep would run out of descriptors, and
    a recursive walk out of stack); going back up, `..` is checked to be the folder it came
    from, so a tree moved meanwhile stops the removal instead of misleading it.
    """
    parent = os.fstat(parent_fd)
    _, fd = _open_folder(parent_fd, name)
    trail: list[tuple[str, os.stat_result, list[str]]] = []  # entered folders, outermost first
    removed = 0
    try:
        while True:  # fd: a folder just entered
            subdirs, files = _empty_files(fd)
            removed += files
            trail.append((name, os.fstat(fd), subdirs))
            while not trail[-1][2]:  # emptied: go up and remove it
                emptied = trail.pop()[0]
                up = os.open("..", _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = up
                came_from = trail[-1][1] if trail else parent
                here = os.fstat(fd)
                if (here.st_dev, here.st_ino) != (came_from.st_dev, came_from.st_ino):
                    raise WorkspaceError(f"{quoted(emptied)} was moved while it was being removed.")
                os.rmdir(emptied, dir_fd=fd)
                removed += 1
                if not trail:
                    return removed
            name = trail[-1][2].pop()
            _, child = _open_folder(fd, name)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


def _empty_files(fd: int) -> tuple[list[str], int]:
    """Remove everything but folders from the folder `fd`: (its subfolders, how many went)."""
    with os.scandir(fd) as listing:
        items = list(listing)
    subfolders, removed = [], 0
    for item in items:
        if item.is_dir(follow_symlinks=False):
            subfolders.append(item.name)
        else:
            os.unlink(item.name, dir_fd=fd)
            removed += 1
    return subfolders, removed


def _own_like_parent(path: Path) -> None:
    """As root, give a recreated entry its folder's owner, not root (owners are not kept)."""
    if os.geteuid() == 0:
        folder = path.parent.lstat()
        os.lchown(path, folder.st_uid, folder.st_gid)


def _must_create(change: FileChange) -> bool:
    """The wanted entry has to be (re)made: deleted, of another type, or modified."""
    return change.kind in (ChangeKind.DELETED, ChangeKind.TYPE_CHANGED, ChangeKind.MODIFIED)
