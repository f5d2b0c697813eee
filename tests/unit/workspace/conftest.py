"""Fixtures for the workspace tests: a full, comparable listing of a folder tree."""

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

Listing = dict[str, tuple[str, int, bytes]]


def _listing(root: Path) -> Listing:
    """Every entry below `root`: (type, permission bits, content or link target or b"")."""
    result: Listing = {}
    for folder, subfolders, files in os.walk(root):
        for name in subfolders + files:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                result[rel] = ("link", 0, os.fsencode(path.readlink()))
            elif stat.S_ISDIR(st.st_mode):
                result[rel] = ("dir", stat.S_IMODE(st.st_mode), b"")
            elif stat.S_ISREG(st.st_mode):
                result[rel] = ("file", stat.S_IMODE(st.st_mode), path.read_bytes())
            else:
                result[rel] = ("other", stat.S_IMODE(st.st_mode), b"")
    return result


@pytest.fixture
def tree_listing() -> Callable[[Path], Listing]:
    """The `_listing` function: contents, modes and link targets of a whole tree."""
    return _listing
