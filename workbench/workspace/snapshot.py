"""Workspace snapshots: every entry's type, size, mode, times, inode and content hash.

`take_snapshot` walks the workspace by directory descriptor without following links or opening
anything but regular files, reuses the `previous` snapshot's entries (hashes included) for what its
stat shows unchanged, keeps the content of every hashed file in a `BlobStore` when given one
(listing in `unstored` what it did not keep), skips `exclude`, and turns unreadable or oversized
parts into notes, never exceptions.
"""

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_IMODE, S_ISDIR, S_ISLNK, S_ISREG
from typing import NamedTuple

from workbench.errors import WorkspaceError
from workbench.workspace.blobs import BlobSession, BlobStore, hash_fd
from workbench.workspace.changes import EntryType, quoted

MIB = 1024 * 1024
RACY_NS = 100_000_000  # 100 ms: above any file-system timestamp granularity on Linux
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_FILE, _DIR = EntryType.FILE, EntryType.DIR


class Entry(NamedTuple):
    """One workspace entry; `path` is relative to the root, with POSIX separators.

    A named tuple rather than a dataclass: a snapshot makes one per file, and this is faster.

    `mode` holds the permission bits only (`stat.S_IMODE`). `digest` is the content hash of a
    file (None when it could not be read or was over the hash cap); `target` is a symlink's
    target text, never resolved.
    """

    path: str
    type: EntryType
    size: int
    mode: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    device: int
    digest: str | None = None
    target: str | None = None


@dataclass(frozen=True, slots=True)
class SnapshotLimits:
    """Caps that keep a snapshot bounded in time, memory and disk use."""

    max_entries: int = 100_000
    max_depth: int = 200
    max_hash_bytes: int = 1024 * MIB  # larger files are compared by size and times only
    max_blob_bytes: int = 256 * MIB  # larger files are not kept: restore is partial for them
    max_store_bytes: int = 2048 * MIB  # new bytes one snapshot may add to the blob store


DEFAULT_SNAPSHOT_LIMITS = SnapshotLimits()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A workspace at one moment.

    `unlisted` are folders whose contents are unknown (unreadable, too deep, or past the
    entry cap): a diff ignores everything below them and a restore leaves it alone.
    """

    root: Path
    taken_ns: int
    entries: dict[str, Entry]
    notes: tuple[str, ...] = ()
    truncated: bool = False
    unlisted: tuple[str, ...] = ()
    unstored: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()


def take_snapshot(
    root: Path,
    *,
    previous: Snapshot | None = None,
    store: BlobStore | None = None,
    limits: SnapshotLimits = DEFAULT_SNAPSHOT_LIMITS,
    exclude: tuple[str, ...] | None = None,
) -> Snapshot:
    """Snapshot the workspace at `root` (see the module doc); raises only if it is unreadable."""
    if exclude is None:
        exclude = previous.excluded if previous else ()
    if store is None:
        return _Walker(root, previous, None, limits, exclude).run()
    with store.session() as blobs:
        return _Walker(root, previous, blobs, limits, exclude).run()


@dataclass(slots=True)
class _Frame:
    fd: int
    prefix: str
    depth: int
    subdirs: list[tuple[str, int]] = field(default_factory=list)  # (name, inode)


class _Walker:
    """One snapshot walk: an explicit stack of open folder descriptors, deepest last."""

    def __init__(
        self,
        root: Path,
        previous: Snapshot | None,
        blobs: BlobSession | None,
        limits: SnapshotLimits,
        exclude: tuple[str, ...],
    ) -> None:
        self.root = root
        self.previous = previous
        self.blobs = blobs
        self.limits = limits
        self.exclude = exclude
        self.excluded = frozenset(exclude)
        self.entries: dict[str, Entry] = {}
        self.notes: list[str] = []
        self.unlisted: list[str] = []
        self.unstored: list[str] = []
        self.truncated = False
        self.stored_bytes = 0
        self.previous_entries = previous.entries if previous else {}
        self.racy_limit_ns = previous.taken_ns - RACY_NS if previous else 0
        # files the previous snapshot could not keep: hash again, to try keeping them now
        self.rehash = set(previous.unstored) if previous and blobs else set()

    def run(self) -> Snapshot:
        taken_ns = time.time_ns()
        try:
            root_fd = os.open(self.root, _DIR_FLAGS & ~os.O_NOFOLLOW)
        except OSError as error:
            raise WorkspaceError(
                f"Cannot read the workspace {self.root}: {error.strerror}."
            ) from None
        stack = [_Frame(root_fd, "", 0)]
        try:
            self._list(stack[0])
            while stack:
                frame = stack[-1]
                if not frame.subdirs:
                    os.close(stack.pop().fd)
                    continue
                name, inode = frame.subdirs.pop()
                child = self._open_dir(frame, name, inode)
                if child is not None:
                    stack.append(_Frame(child, f"{frame.prefix}{name}/", frame.depth + 1))
                    self._list(stack[-1])
        finally:
            for frame in stack:  # only left open when the walk failed
                os.close(frame.fd)
        if self.truncated:
            most = f"{self.limits.max_entries:,}"
            self.notes.insert(
                0,
                f"The workspace has more than {most} entries; only the first {most} were "
                "recorded, so changes beyond them are not listed. Restore can bring a "
                f"workspace back only to a state of at most {most} entries.",
            )
        return Snapshot(
            root=self.root,
            taken_ns=taken_ns,
            entries=self.entries,
            notes=tuple(self.notes),
            truncated=self.truncated,
            unlisted=tuple(self.unlisted),
            unstored=tuple(self.unstored),
            excluded=self.exclude,
        )

    def _open_dir(self, parent: _Frame, name: str, inode: int) -> int | None:
        rel = parent.prefix + name
        if parent.depth + 1 > self.limits.max_depth:
            self._unlist(
                rel, f"Folder {quoted(rel)} is nested too deeply; its contents were skipped."
            )
            return None
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent.fd)
        except OSError as error:
            self._unlist(rel, f"Cannot read folder {quoted(rel)}: {error.strerror}.")
            return None
        if os.fstat(fd).st_ino != inode:
            os.close(fd)
            self._unlist(rel, f"Folder {quoted(rel)} changed while it was being read; skipped.")
            return None
        return fd

    def _unlist(self, rel: str, note: str) -> None:
        self.unlisted.append(rel)
        self.notes.append(note)

    def _list(self, frame: _Frame) -> None:
        """Record every entry of one folder (the hot loop: kept flat on purpose).

        An unchanged entry keeps the previous snapshot's `Entry` object itself (see `_same`),
        so a diff can tell it apart by identity and nothing new is built for it.
        """
        fd, prefix = frame.fd, frame.prefix
        if self.truncated:
            self.unlisted.append(prefix.rstrip("/"))
            return
        try:
            with os.scandir(fd) as listing:
                items = list(listing)
        except OSError as error:
            self._unlist(
                prefix.rstrip("/"), f"Cannot list folder {quoted(prefix)}: {error.strerror}."
            )
            return
        room = self.limits.max_entries - len(self.entries)
        if len(items) > room:
            items = items[:room]
            self.truncated = True
            self.unlisted.append(prefix.rstrip("/"))
        entries, excluded, previous = self.entries, self.excluded, self.previous_entries
        racy_limit_ns, rehash, subdirs = self.racy_limit_ns, self.rehash, frame.subdirs
        for item in items:
            name = item.name
            rel = prefix + name
            if rel in excluded:
                continue
            try:
                st = item.stat(follow_symlinks=False)
                mode = st.st_mode
                target = os.readlink(name, dir_fd=fd) if S_ISLNK(mode) else None
            except OSError as error:  # vanished meanwhile
                self.notes.append(f"Cannot read {quoted(rel)}: {error.strerror}.")
                continue
            old = previous.get(rel)
            digest = None
            if S_ISREG(mode):
                if (
                    old is not None
                    and old.type is _FILE
                    and old.digest is not None
                    and _same(old, st)
                    and old.mtime_ns < racy_limit_ns
                    and old.ctime_ns < racy_limit_ns
                    and rel not in rehash
                ):
                    entries[rel] = old
                    continue
                kind = _FILE
                digest = self._hash(fd, name, rel, st)
            elif S_ISDIR(mode):
                subdirs.append((name, st.st_ino))
                if old is not None and old.type is _DIR and _same(old, st):
                    entries[rel] = old
                    continue
                kind = _DIR
            else:
                kind = EntryType.SYMLINK if target is not None else EntryType.OTHER
            entries[rel] = Entry(
                rel,
                kind,
                st.st_size,
                S_IMODE(mode),
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_ino,
                st.st_dev,
                digest,
                target,
            )

    def _hash(self, dir_fd: int, name: str, rel: str, st: os.stat_result) -> str | None:
        if st.st_size > self.limits.max_hash_bytes:
            self.notes.append(
                f"{quoted(rel)} is {st.st_size // MIB} MiB: compared by size and time only."
            )
            self.unstored.append(rel)
            return None
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except OSError as error:
            self.notes.append(f"Cannot read {quoted(rel)}: {error.strerror}.")
            self.unstored.append(rel)
            return None
        try:
            opened = os.fstat(fd)
            if not S_ISREG(opened.st_mode) or opened.st_ino != st.st_ino:
                self.notes.append(f"{quoted(rel)} changed while it was being read.")
                self.unstored.append(rel)
                return None
            return self._hash_and_keep(fd, rel, opened.st_size)
        finally:
            os.close(fd)

    def _hash_and_keep(self, fd: int, rel: str, size: int) -> str:
        if self.blobs is None:
            return hash_fd(fd)
        if size <= min(self.limits.max_blob_bytes, self.limits.max_store_bytes - self.stored_bytes):
            digest, added = self.blobs.put_fd(fd, size)
            self.stored_bytes += added
            return digest
        digest = hash_fd(fd)
        if not self.blobs.has(digest):
            self.notes.append(
                f"{quoted(rel)} ({size // MIB} MiB) is over the copy limit: restore cannot "
                "bring it back."
            )
            self.unstored.append(rel)
        return digest


def _same(old: Entry, st: os.stat_result) -> bool:
    """Whether `st` has every stat field `old` recorded (mtime first: it differs most often)."""
    return (
        old.mtime_ns == st.st_mtime_ns
        and old.ctime_ns == st.st_ctime_ns
        and old.size == st.st_size
        and old.inode == st.st_ino
        and old.device == st.st_dev
        and old.mode == S_IMODE(st.st_mode)
    )


def iter_ancestors(path: str) -> Iterator[str]:
    """The folders above a relative path, nearest first: 'a/b/c' -> 'a/b', 'a'."""
    while "/" in path:
        path = path.rsplit("/", 1)[0]
        yield path


def within(path: str, paths: frozenset[str]) -> bool:
    """True when `path` or a folder above it is one of `paths`."""
    return path in paths or any(folder in paths for folder in iter_ancestors(path))
