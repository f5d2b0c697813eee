"""The worker's `fs` object: file access confined to the run's workspace, with size caps.

Every path is workspace-relative; `..` and absolute paths are refused outright, and the real
path (symlinks resolved) must stay inside the workspace, so a planted symlink cannot lead out.
Files are opened with O_NOFOLLOW. Caps per run: 16 MiB per read or write, 256 MiB written in
all, 1,000 new files, 10,000 entries per listing. Refusals raise `FsRefused`, whose text the
script sees.
"""

import os
from pathlib import Path, PurePosixPath
from typing import Any

from workbench.jsworker.protocol import write_all

MIB = 1024 * 1024
MAX_READ_BYTES = 16 * MIB  # one fs.readText, and the entry script
MAX_WRITE_BYTES = 16 * MIB  # one fs.writeText
MAX_WRITTEN_BYTES = 256 * MIB  # all fs.writeText of a run
MAX_FILES_CREATED = 1000  # new files per run
MAX_LIST_ENTRIES = 10_000


class FsRefused(Exception):
    """An fs call the workspace policy refuses; its text is shown to the script."""


class WorkspaceFs:
    """File access confined to one workspace folder, with size and count caps."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve(strict=True)
        self.files_created = 0
        self.bytes_written = 0

    def resolve(self, rel: str) -> Path:
        """The real path of workspace-relative `rel`; `FsRefused` for any escape."""
        try:
            real = (self.root / checked(rel)).resolve()
        except (RuntimeError, OSError) as error:  # a symlink loop, an unreadable folder
            raise FsRefused(f"path {rel!r} cannot be resolved: {error}") from None
        if real != self.root and self.root not in real.parents:
            raise FsRefused(f"path {rel!r} refused: it resolves outside the workspace")
        return real

    def call(self, op: str, rel: str, data: str | None) -> Any:
        """Perform one fs operation; the value goes back to JavaScript as JSON."""
        if op == "remove":
            self.remove(rel)
            return None
        path = self.resolve(rel)
        if op == "exists":
            return path.exists()
        if op == "list":
            names = sorted(entry.name for entry in os.scandir(path))
            if len(names) > MAX_LIST_ENTRIES:
                raise FsRefused(f"{rel!r} has more than {MAX_LIST_ENTRIES} entries")
            return names
        if op == "readText":
            return read_capped(path, rel).decode("utf-8", errors="replace")
        if op == "writeText":
            self.write_text(path, rel, data or "")
            return None
        raise FsRefused(f"unknown operation {op!r}")

    def remove(self, rel: str) -> None:
        """Remove a file, a symlink (not its target) or an empty folder."""
        pure = checked(rel)
        if pure.name in ("", "."):
            raise FsRefused("the workspace itself cannot be removed")
        path = self.resolve(str(pure.parent)) / pure.name
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink()

    def write_text(self, path: Path, rel: str, text: str) -> None:
        """Write `text` as UTF-8, creating parent folders inside the workspace."""
        data = text.encode()
        if len(data) > MAX_WRITE_BYTES:
            raise FsRefused(f"writing {rel!r} refused: {len(data)} bytes exceed the 16 MiB cap")
        if self.bytes_written + len(data) > MAX_WRITTEN_BYTES:
            raise FsRefused(f"writing {rel!r} refused: a run writes at most 256 MiB in all")
        if not path.exists():
            if self.files_created >= MAX_FILES_CREATED:
                raise FsRefused(f"writing {rel!r} refused: {MAX_FILES_CREATED} new files cap")
            self.files_created += 1
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path, flags, 0o644)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        self.bytes_written += len(data)


def checked(rel: str) -> PurePosixPath:
    """`rel` as a relative path without `..`; `FsRefused` otherwise."""
    if not rel or "\0" in rel:
        raise FsRefused(f"invalid path {rel!r}")
    pure = PurePosixPath(rel)
    if pure.is_absolute():
        raise FsRefused(f"absolute path {rel!r} refused: paths are relative to the workspace")
    if ".." in pure.parts:
        raise FsRefused(f"path {rel!r} refused: '..' is not allowed")
    return pure


def read_capped(path: Path, rel: str) -> bytes:
    """The bytes of a regular file no larger than `MAX_READ_BYTES`."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(MAX_READ_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_READ_BYTES:
        raise FsRefused(f"reading {rel!r} refused: larger than the 16 MiB cap")
    return data
