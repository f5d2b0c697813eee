"""A skill's file tree with sizes, bounded in entries and never following a symbolic link.

`walk_tree` lists at most `MAX_TREE_ENTRIES` entries, `MAX_TREE_DEPTH` folders deep, and reads
at most `MAX_TREE_SCAN` folder entries in all, so a folder of 20,000 files or a deep tree stays
fast; each folder node counts the entries it left out. Symbolic links are listed with their
target, never followed, so link loops cannot trap the walk; a link that leads outside the skill
gets a warning.
"""

import itertools
import os
import stat
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from workbench.skills.diagnostics import Code, Diagnostic, diagnostic

MAX_TREE_ENTRIES = 500
MAX_TREE_SCAN = 50_000
MAX_TREE_DEPTH = 16


class FileKind(StrEnum):
    """What an entry in a skill's file tree is."""

    FILE = "file"
    DIRECTORY = "directory"
    SYMLINK = "symlink"
    OTHER = "other"  # a FIFO, socket or device


@dataclass(frozen=True, slots=True)
class FileNode:
    """One entry of a skill's file tree.

    `size` is in bytes (a folder's is the total of the entries listed under it). `omitted`
    counts a folder's entries left out of `children` because the tree was capped. A symlink
    carries its `link_target` as written; the catalog never follows it.
    """

    name: str
    kind: FileKind
    size: int = 0
    children: tuple["FileNode", ...] = ()
    omitted: int = 0
    link_target: str | None = None

    @property
    def total_omitted(self) -> int:
        """Entries left out anywhere in this subtree."""
        return self.omitted + sum(child.total_omitted for child in self.children)


def walk_tree(folder: Path) -> tuple[FileNode, list[Diagnostic]]:
    """The bounded file tree of the skill `folder`, and warnings about its links and its size."""
    if not folder.is_dir():  # missing, not a folder, or a link loop: nothing to walk
        return FileNode(folder.name, FileKind.OTHER), []
    walk = _Walk(folder)
    root = walk.directory(folder, folder.name, 0)
    if omitted := root.total_omitted:
        message = f"The file tree shows {walk.listed:,} entries and leaves out {omitted:,} more"
        if walk.scanned >= MAX_TREE_SCAN:
            message += f" (counting stopped after {MAX_TREE_SCAN:,} entries)"
        walk.problems.append(diagnostic(Code.FILE_TREE_TRUNCATED, message + ".", folder))
    return root, walk.problems


class _Walk:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.real_root = folder.resolve()
        self.listed = 0
        self.scanned = 0
        self.problems: list[Diagnostic] = []

    def directory(self, path: Path, name: str, depth: int) -> FileNode:
        """A folder node: its entries in name order, each folder's direct entries before any
        grandchildren, so the top of the tree is listed first when the cap bites."""
        entries = self._scan(path)
        room = MAX_TREE_ENTRIES - self.listed if depth < MAX_TREE_DEPTH else 0
        shown = entries[: max(0, room)]
        self.listed += len(shown)
        children = tuple(self._node(entry, depth + 1) for entry in shown)
        size = sum(child.size for child in children)
        return FileNode(name, FileKind.DIRECTORY, size, children, len(entries) - len(shown))

    def _scan(self, path: Path) -> list[os.DirEntry[str]]:
        try:
            with os.scandir(path) as iterator:
                entries = list(itertools.islice(iterator, MAX_TREE_SCAN - self.scanned))
        except OSError:
            return []
        self.scanned += len(entries)
        return sorted(entries, key=lambda entry: entry.name)

    def _node(self, entry: os.DirEntry[str], depth: int) -> FileNode:
        try:
            if entry.is_symlink():
                return self._link(entry)
            if entry.is_dir(follow_symlinks=False):
                return self.directory(Path(entry.path), entry.name, depth)
            status = entry.stat(follow_symlinks=False)
        except OSError:
            return FileNode(entry.name, FileKind.OTHER)
        kind = FileKind.FILE if stat.S_ISREG(status.st_mode) else FileKind.OTHER
        return FileNode(entry.name, kind, status.st_size)

    def _link(self, entry: os.DirEntry[str]) -> FileNode:
        target = str(Path(entry.path).readlink())
        where = Path(entry.path).relative_to(self.folder)
        try:
            outside = not Path(entry.path).resolve().is_relative_to(self.real_root)
        except (OSError, RuntimeError):  # RuntimeError: a link loop on Python 3.11
            message = f"{where} is a symbolic link loop ({target}); it is listed, not followed."
            self.problems.append(diagnostic(Code.SYMLINK_LOOP, message, Path(entry.path)))
        else:
            if outside:
                message = (
                    f"{where} is a symbolic link to {target}, outside the skill; it is listed "
                    "but never followed."
                )
                self.problems.append(diagnostic(Code.SYMLINK_OUTSIDE, message, Path(entry.path)))
        return FileNode(entry.name, FileKind.SYMLINK, 0, link_target=target)
