"""Tar streams of a folder for the engine's archive API, and unpacking the engine's tar safely.

`Packer` streams the folders, files and symlinks a `Snapshot` lists as one tar owned by the
container's user (raw-byte names, modes and times kept; FIFOs, sockets, devices and unreadable files
left out in `skipped`); `fetched` reads an archive with the client's timeout on every read, and
`path_stat` asks for a path's stat alone (a HEAD of the same endpoint, nothing copied); `unpack`
writes one into an empty staging folder as it arrives and refuses, naming them, the entries that
could write outside it or are not plain workspace entries, keeping symlinks as links, dropping
set-uid bits and stopping past a size limit. Design notes: docs/notes.md, "Remote engines".
"""

import base64
import binascii
import io
import json
import os
import stat
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import docker
from docker.errors import create_api_error_from_http_exception
from requests.exceptions import HTTPError, RequestException

from workbench.workspace.changes import EntryType, quoted
from workbench.workspace.snapshot import Entry

BLOCK = tarfile.BLOCKSIZE
CHUNK = 1 << 20
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_SENT_TYPES = {EntryType.DIR: tarfile.DIRTYPE, EntryType.SYMLINK: tarfile.SYMTYPE}

Progress = Callable[[int], None]  # bytes of file content moved so far


@contextmanager
def fetched(api: docker.APIClient, container_id: str, path: str) -> Iterator[Iterator[bytes]]:
    """The engine's tar of `path` in the container, as chunks read with the client's timeout
    on every read: docker-py's own `get_archive` turns the timeout off, so an engine that
    stopped answering mid-copy would hang it for good."""
    url = f"{api.base_url}/v{api.api_version}/containers/{container_id}/archive"
    response = api.get(url, params={"path": path}, stream=True, timeout=api.timeout)
    try:
        try:
            response.raise_for_status()
        except HTTPError as error:  # as docker-py says it: NotFound, APIError
            create_api_error_from_http_exception(error)
        yield response.iter_content(CHUNK)
    finally:
        response.close()


def path_stat(api: docker.APIClient, container_id: str, path: str) -> dict[str, object] | None:
    """The engine's stat of `path` in the container (name, size, mode, mtime), or None when
    the container has no such path. Blocking; raises what the client raises."""
    url = f"{api.base_url}/v{api.api_version}/containers/{container_id}/archive"
    response = api.head(url, params={"path": path}, timeout=api.timeout)
    if response.status_code != 200:
        return None
    try:
        found = json.loads(base64.b64decode(response.headers["X-Docker-Container-Path-Stat"]))
    except (KeyError, ValueError, binascii.Error):
        return None
    return found if isinstance(found, dict) else None


class ArchiveTooLarge(Exception):
    """The archive holds more file content than the limit allows."""


def _header(info: tarfile.TarInfo) -> bytes:
    return info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")


@dataclass
class Packer:
    """One tar stream of `entries` below `root` (see the module doc)."""

    root: Path
    entries: list[Entry]
    owner: tuple[int, int]
    progress: Progress | None = None
    skipped: list[str] = field(default_factory=list)
    sent_bytes: int = 0

    def chunks(self) -> Iterator[bytes]:
        """The tar, in pieces of at most about a MiB."""
        for entry in sorted(self.entries, key=lambda e: e.path.split("/")):
            if entry.type is EntryType.FILE:
                yield from self._file(entry)
            elif entry.type in _SENT_TYPES:
                yield _header(self._info(entry, _SENT_TYPES[entry.type]))
            else:
                self.skipped.append(entry.path)
        yield b"\0" * (2 * BLOCK)

    def _info(self, entry: Entry, kind: bytes, size: int = 0) -> tarfile.TarInfo:
        info = tarfile.TarInfo(entry.path)
        info.type = kind
        info.mode = entry.mode
        info.mtime = entry.mtime_ns // 1_000_000_000
        info.uid, info.gid = self.owner
        info.size = size
        info.linkname = entry.target or ""
        return info

    def _file(self, entry: Entry) -> Iterator[bytes]:
        try:
            fd = os.open(self.root / entry.path, _FILE_FLAGS)
        except OSError:
            self.skipped.append(entry.path)
            return
        with open(fd, "rb") as source:  # noqa: PTH123 - a descriptor, not a path
            size = os.fstat(fd).st_size
            yield _header(self._info(entry, tarfile.REGTYPE, size))
            left = size
            while left:  # exactly `size` bytes: a file that shrank meanwhile is padded
                data = source.read(min(CHUNK, left)) or b"\0" * min(CHUNK, left)
                left -= len(data)
                self.sent_bytes += len(data)
                if self.progress is not None:
                    self.progress(self.sent_bytes)
                yield data
            yield b"\0" * (-size % BLOCK)


class _ChunkReader(io.RawIOBase):
    """A file object over an iterator of byte chunks (tarfile reads the stream through it)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: "memoryview | bytearray") -> int:  # type: ignore[override]
        while not self._pending:
            self._pending = next(self._chunks, b"")
            if not self._pending:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


@dataclass
class _Unpacking:
    root: Path
    top: str
    limit_bytes: int
    progress: Progress | None
    folders: dict[str, tarfile.TarInfo] = field(default_factory=dict)
    files: set[str] = field(default_factory=set)
    refused: dict[str, str] = field(default_factory=dict)
    received: int = 0

    def member(self, tar: tarfile.TarFile, info: tarfile.TarInfo) -> None:
        rel = self._relative(info.name)
        if rel is None:
            self._refuse(info.name, "a name outside the workspace")
            return
        if rel == "":  # the top folder itself (the workspace's own mode stays)
            return
        parent = rel.rpartition("/")[0]
        if rel in self.folders or rel in self.files or rel in self.refused:
            self._refuse(rel, "a second entry of that name")
        elif parent and parent not in self.folders:
            self._refuse(rel, "below something that is not a folder")
        elif info.isdir():
            (self.root / rel).mkdir(mode=0o700)
            self.folders[rel] = info
        elif info.isreg():
            self._file(tar, info, rel)
        elif info.issym():
            (self.root / rel).symlink_to(info.linkname)
            os.utime(self.root / rel, (info.mtime, info.mtime), follow_symlinks=False)
        elif info.islnk():
            target = self._relative(info.linkname)
            if target is None or target not in self.files:
                self._refuse(rel, "a hard link to something outside the workspace")
            else:
                os.link(self.root / target, self.root / rel, follow_symlinks=False)
                self.files.add(rel)
        else:
            self._refuse(rel, "a device, FIFO or other special file")

    def _relative(self, name: str) -> str | None:
        """`name` below the top folder, or None when it is not safely there."""
        head, _, rel = name.partition("/")
        parts = rel.split("/") if rel else []
        if parts and parts[-1] == "":  # a folder's trailing slash
            parts.pop()
        if head != self.top or any(part in ("", ".", "..") for part in parts) or "\0" in name:
            return None
        return "/".join(parts)

    def _file(self, tar: tarfile.TarFile, info: tarfile.TarInfo, rel: str) -> None:
        self.received += info.size
        if self.received > self.limit_bytes:
            raise ArchiveTooLarge
        source = tar.extractfile(info)
        assert source is not None  # a regular file always has a stream
        fd = os.open(self.root / rel, _NEW_FILE_FLAGS, 0o600)
        with open(fd, "wb") as out:  # noqa: PTH123 - a descriptor, not a path
            done = self.received - info.size
            while data := source.read(CHUNK):
                out.write(data)
                done += len(data)
                if self.progress is not None:
                    self.progress(done)
            os.fchmod(fd, stat.S_IMODE(info.mode) & ~(stat.S_ISUID | stat.S_ISGID))
        os.utime(self.root / rel, (info.mtime, info.mtime))
        self.files.add(rel)

    def _refuse(self, rel: str, reason: str) -> None:
        self.refused.setdefault(rel, reason)

    def finish_folders(self) -> None:
        """Folders' modes and times, deepest first (a read-only folder blocked nothing)."""
        for rel in sorted(self.folders, key=lambda path: path.count("/"), reverse=True):
            info = self.folders[rel]
            (self.root / rel).chmod(stat.S_IMODE(info.mode))
            os.utime(self.root / rel, (info.mtime, info.mtime))


@dataclass(frozen=True, slots=True)
class Unpacked:
    """What `unpack` refused (path below the top folder, or the raw name -> why) and how many
    bytes of file content it received."""

    refused: dict[str, str]
    received_bytes: int

    def notes(self, most: int = 5) -> str:
        """The refusals in one sentence, the first `most` named."""
        named = [f"{quoted(rel)} ({why})" for rel, why in list(self.refused.items())[:most]]
        more = len(self.refused) - len(named)
        return ", ".join(named) + (f" and {more} more" if more > 0 else "")


def unpack(
    chunks: Iterator[bytes],
    root: Path,
    top: str,
    limit_bytes: int,
    progress: Progress | None = None,
) -> Unpacked:
    """Unpack the engine's tar of the folder `top` into the empty folder `root` (see the
    module doc). `ArchiveTooLarge` past `limit_bytes`; `tarfile.TarError` for a broken tar;
    `OSError` from the staging folder's file system."""
    state = _Unpacking(root, top, limit_bytes, progress)
    reader = io.BufferedReader(_ChunkReader(chunks), CHUNK)
    with tarfile.open(fileobj=reader, mode="r|", encoding="utf-8", errors="surrogateescape") as tar:
        for info in tar:
            try:
                state.member(tar, info)
            except RequestException:  # an OSError too, but the engine's, not the staging's
                raise
            except OSError as error:
                rel = state._relative(info.name) or info.name
                state._refuse(rel, f"could not be written here: {error.strerror}")
    state.finish_folders()
    return Unpacked(state.refused, state.received)
