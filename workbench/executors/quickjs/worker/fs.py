"""The worker's `fs` object: file access confined to the run's workspace, with size caps.

`WorkspaceFs` walks every workspace-relative path from the opened workspace folder one name at a
time with `dir_fd` and `O_NOFOLLOW`, refusing links, non-regular files, `..` and absolute paths, so
a planted or swapped link cannot lead out; it enforces the per-run caps on reads, writes, new files
and listings, and raises `FsRefused`, whose text the script sees.
"""

from __future__ import annotations

import errno
import os
import stat

from workbench.executors.quickjs.worker.protocol import write_all

TYPE_CHECKING = False  # not typing's (see jsonwire: the worker's start stays lean)
if TYPE_CHECKING:
    from typing import Any

MIB = 1024 * 1024
MAX_READ_BYTES = 16 * MIB  # one fs.readText, and the entry script
MAX_WRITE_BYTES = 16 * MIB  # one fs.writeText
MAX_WRITTEN_BYTES = 256 * MIB  # all fs.writeText of a run
MAX_FILES_CREATED = 1000  # new files per run
MAX_LIST_ENTRIES = 10_000

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
WRITE_FLAGS = os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC


KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class FsRefused(Exception):
    """An fs call the workspace policy refuses; its text is shown to the script."""


class WorkspaceFs:
    """File access confined to one workspace folder, with size and count caps.

    Holds a descriptor of the workspace (opened from `root`, or `root` itself when it is one,
    as a warm worker receives it) until `close()` or the end of the process.
    """

    def __init__(self, root: str | os.PathLike[str] | int) -> None:
        if isinstance(root, int):
            self.root_fd = root
        else:
            self.root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self.files_created = 0
        self.bytes_written = 0

    def close(self) -> None:
        """Let go of the workspace descriptor."""
        if self.root_fd >= 0:
            os.close(self.root_fd)
            self.root_fd = -1

    def call(self, op: str, rel: str, data: str | None) -> Any:
        """Perform one fs operation; the value goes back to JavaScript as JSON."""
        if op not in ("exists", "list", "readText", "writeText", "remove"):
            raise FsRefused(f"unknown operation {op!r}")
        fd = -1
        try:
            fd, name = self.parent(rel, create=op == "writeText")
            return self._at(op, fd, name, rel, data)
        except (FileNotFoundError, NotADirectoryError):
            if op == "exists":
                return False
            raise
        finally:
            if fd >= 0:
                os.close(fd)

    def _at(self, op: str, fd: int, name: str, rel: str, data: str | None) -> Any:
        """Perform `op` on `name` in the folder `fd` (which the caller closes)."""
        if op == "exists":
            refuse_link(fd, name, rel)
            return True
        if op == "list":
            return list_names(fd, name, rel)
        if op == "readText":
            file_fd = open_file(fd, name, rel, os.O_RDONLY | os.O_CLOEXEC)
            return read_capped(file_fd, rel).decode("utf-8", errors="replace")
        if op == "writeText":
            self.write_text(fd, name, rel, data or "")
        else:
            remove(fd, name)
        return None

    def parent(self, rel: str, create: bool = False) -> tuple[int, str]:
        """A new descriptor of the folder holding `rel` (walked from the root; the caller
        closes it), and its last name.

        With `create`, missing folders on the way are made. The workspace itself is ".".
        """
        parts = checked(rel)
        fd = os.dup(self.root_fd)
        try:
            for name in parts[:-1]:
                if create:
                    try:  # noqa: SIM105 - no contextlib: its imports cost every run 2 ms
                        os.mkdir(name, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                inner = checked_open(fd, name, rel, DIR_FLAGS)
                os.close(fd)
                fd = inner
        except BaseException:
            os.close(fd)
            raise
        return fd, parts[-1] if parts else "."

    def write_text(self, dir_fd: int, name: str, rel: str, text: str) -> None:
        """Write `text` as UTF-8 to `name` in `dir_fd`, a new file or an existing one."""
        data = text.encode()
        if len(data) > MAX_WRITE_BYTES:
            raise FsRefused(f"writing {rel!r} refused: {len(data)} bytes exceed the 16 MiB cap")
        if self.bytes_written + len(data) > MAX_WRITTEN_BYTES:
            raise FsRefused(f"writing {rel!r} refused: a run writes at most 256 MiB in all")
        fd = -1
        if self.files_created < MAX_FILES_CREATED:
            try:
                fd = os.open(name, WRITE_FLAGS | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dir_fd)
                self.files_created += 1
            except FileExistsError:
                pass
        if fd < 0:
            try:
                fd = open_file(dir_fd, name, rel, WRITE_FLAGS)
            except FileNotFoundError:
                if self.files_created < MAX_FILES_CREATED:
                    raise
                raise FsRefused(
                    f"writing {rel!r} refused: {MAX_FILES_CREATED} new files cap"
                ) from None
        try:
            os.ftruncate(fd, 0)
            write_all(fd, data)
        finally:
            os.close(fd)
        self.bytes_written += len(data)


def checked(rel: str) -> tuple[str, ...]:
    """The names of `rel`, a relative path without `..` (empty and `.` names dropped, as
    pathlib does); `FsRefused` otherwise."""
    if not rel or "\0" in rel:
        raise FsRefused(f"invalid path {rel!r}")
    if rel.startswith("/"):
        raise FsRefused(f"absolute path {rel!r} refused: paths are relative to the workspace")
    parts = tuple(name for name in rel.split("/") if name not in ("", "."))
    if ".." in parts:
        raise FsRefused(f"path {rel!r} refused: '..' is not allowed")
    return parts


def refuse_link(dir_fd: int, name: str, rel: str) -> None:
    """`FsRefused` when `name` in `dir_fd` is a symbolic link; OSError when it is missing."""
    if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
        raise FsRefused(
            f"path {rel!r} refused: {name!r} is a symbolic link, which could lead outside "
            "the workspace"
        )


def checked_open(dir_fd: int, name: str, rel: str, flags: int) -> int:
    """`os.open(name, flags | O_NOFOLLOW, dir_fd=dir_fd)`, with `FsRefused` for a link."""
    try:
        return os.open(name, flags | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            refuse_link(dir_fd, name, rel)
        raise


def open_file(dir_fd: int, name: str, rel: str, flags: int) -> int:
    """`checked_open` of a regular file, left blocking; `FsRefused` for anything else.

    Opened with O_NONBLOCK and checked with fstat on the open descriptor, so a named pipe,
    socket or device (even one swapped in just before) can block neither the open nor a read.
    """
    try:
        fd = checked_open(dir_fd, name, rel, flags | os.O_NONBLOCK)
    except OSError as error:
        if error.errno != errno.ENXIO:  # a socket, or a named pipe nobody reads
            raise
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        raise FsRefused(f"{rel!r} refused: it is {kind_of(mode)}, not a regular file") from None
    try:
        require_regular(fd, rel)
    except FsRefused:
        os.close(fd)
        raise
    os.set_blocking(fd, True)
    return fd


def require_regular(fd: int, rel: str) -> None:
    """`FsRefused` unless the open `fd` is a regular file."""
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        raise FsRefused(f"{rel!r} refused: it is {kind_of(mode)}, not a regular file")


def kind_of(mode: int) -> str:
    """What a file of `mode` is, in words (for one that is not a regular file)."""
    return next((kind for test, kind in KINDS if test(mode)), "a special file")


def list_names(dir_fd: int, name: str, rel: str) -> list[str]:
    """The sorted names in folder `name` of `dir_fd`."""
    fd = checked_open(dir_fd, name, rel, DIR_FLAGS)
    try:
        with os.scandir(fd) as entries:
            names = sorted(entry.name for entry in entries)
    finally:
        os.close(fd)
    if len(names) > MAX_LIST_ENTRIES:
        raise FsRefused(f"{rel!r} has more than {MAX_LIST_ENTRIES} entries")
    return names


def remove(dir_fd: int, name: str) -> None:
    """Remove a file, a symbolic link (not its target) or an empty folder."""
    if name == ".":
        raise FsRefused("the workspace itself cannot be removed")
    if stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
        os.rmdir(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


def read_capped(fd: int, rel: str) -> bytes:
    """The bytes of the open regular file `fd` (then closed), if no more than
    `MAX_READ_BYTES`. Its opener passes O_NONBLOCK, so a named pipe cannot block it."""
    try:
        require_regular(fd, rel)
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(MAX_READ_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_READ_BYTES:
        raise FsRefused(f"reading {rel!r} refused: larger than the 16 MiB cap")
    return data
