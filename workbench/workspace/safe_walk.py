"""Walking and removing a folder tree a command may have tampered with.

`walk()` visits every entry below a root without recursion, without following symlinks, with one
folder open at a time and checking each folder's identity as it enters and leaves it, staying on the
root's file system; so deep trees, swapped folders and vanishing entries neither mislead nor stop
it. `copy_plain()` copies out its folders and regular files only; `remove_tree()` deletes it.
"""

import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry met by `walk()`. `dir_fd` is the folder holding it, valid until the walk
    moves on; a folder is met twice: before its contents and (`leaving`) after them."""

    dir_fd: int
    name: str
    rel: str  # the path below the root, "/"-separated
    stat: os.stat_result  # lstat, taken before the entry was yielded
    leaving: bool = False


def _open_dir(
    name: str | Path, dir_fd: int | None, same_as: os.stat_result | None, follow: bool = False
) -> int | None:
    """A descriptor of folder `name`, or None when it is gone, not a folder, or not `same_as`."""
    flags = _DIR_FLAGS if follow else _DIR_FLAGS | os.O_NOFOLLOW
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        return None
    st = os.fstat(fd)
    if same_as is not None and (st.st_dev, st.st_ino) != (same_as.st_dev, same_as.st_ino):
        os.close(fd)
        return None
    return fd


def _names(fd: int) -> Iterator[str]:
    try:
        return iter(os.listdir(fd))
    except OSError:
        return iter(())


def walk(root: Path, follow_root: bool = False) -> Iterator[Entry]:
    """Every entry below `root` (not `root` itself), a folder before and after its contents;
    nothing when `root` is a symlink, unless `follow_root`."""
    fd = _open_dir(root, None, None, follow_root)
    if fd is None:
        return
    levels = [(os.fstat(fd), "", _names(fd))]
    device = levels[0][0].st_dev
    try:
        while levels:
            here, rel, names = levels[-1]
            name = next(names, None)
            if name is None:
                levels.pop()
                if not levels:
                    return
                parent = _open_dir("..", fd, levels[-1][0])
                if parent is None:  # moved away while walked: the rest is out of reach
                    return
                os.close(fd)
                fd = parent
                yield Entry(fd, rel.rpartition("/")[2], rel, here, leaving=True)
                continue
            try:
                st = os.lstat(name, dir_fd=fd)
            except OSError:
                continue
            if st.st_dev != device:  # a mount point: another file system's root
                continue
            path = f"{rel}/{name}" if rel else name
            yield Entry(fd, name, path, st)
            if stat.S_ISDIR(st.st_mode) and (child := _open_dir(name, fd, st)) is not None:
                os.close(fd)
                fd = child
                levels.append((st, path, _names(child)))
    finally:
        os.close(fd)


def copy_plain(source: Path, target: Path) -> None:
    """Copy the folders and regular files below `source` into the new folder `target`, as new
    files of the caller's with the same permission bits; symlinks, FIFOs, sockets and devices
    are left out, and so is what cannot be copied (a path beyond PATH_MAX). Never raises."""
    try:
        target.mkdir(mode=0o700)
    except OSError:
        return
    for entry in walk(source):
        mode = entry.stat.st_mode
        try:
            if entry.leaving:
                continue
            if stat.S_ISDIR(mode):
                (target / entry.rel).mkdir(mode=stat.S_IMODE(mode) & 0o777 | 0o700)
            elif stat.S_ISREG(mode):
                _copy_file(entry, target / entry.rel)
        except OSError:
            continue


def _copy_file(entry: Entry, target: Path) -> None:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    source_fd = os.open(entry.name, flags, dir_fd=entry.dir_fd)
    with open(source_fd, "rb") as source:  # noqa: PTH123 - a descriptor, not a path
        if not stat.S_ISREG(os.fstat(source_fd).st_mode):
            return  # swapped for something else since it was listed
        mode = stat.S_IMODE(entry.stat.st_mode) & 0o777
        target_fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        with open(target_fd, "wb") as copy:  # noqa: PTH123 - a descriptor, not a path
            shutil.copyfileobj(source, copy, 1 << 20)


def remove_tree(root: Path, owned_by: int | None = None) -> bool:
    """Delete `root` and everything below it (only what uid `owned_by` owns, when given);
    True when `root` is gone. Never raises."""
    for entry in walk(root):
        if owned_by is not None and entry.stat.st_uid != owned_by:
            continue
        try:
            if entry.leaving:
                os.rmdir(entry.name, dir_fd=entry.dir_fd)
            elif not stat.S_ISDIR(entry.stat.st_mode):
                os.unlink(entry.name, dir_fd=entry.dir_fd)
        except OSError:
            continue
    try:
        root.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True
