"""Walking, copying out and removing trees a command may have tampered with."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.workspace.safe_walk import copy_plain, remove_tree, walk

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
DEEP = 2500  # deeper than Python's recursion limit, and "d/" * DEEP is beyond PATH_MAX


def make_deep(root: Path, depth: int = DEEP) -> None:
    """`root`/d/d/.../d/leaf, made by a process that walks down as it goes (the path is too
    long for one call)."""
    script = f"import os\nfor _ in range({depth}): os.mkdir('d'); os.chdir('d')\nopen('leaf', 'w')"
    subprocess.run([sys.executable, "-c", script], cwd=root, check=True)


def hostile_tree(root: Path, outside: Path) -> None:
    """Plain files and folders mixed with what a command could plant."""
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "keep.txt").write_text("kept")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o750)
    (root / "to-outside").symlink_to(outside)
    (root / "sub" / "to-file").symlink_to(outside / "precious")
    os.mkfifo(root / "fifo")


def test_walk_reaches_the_bottom_of_a_deep_tree(tmp_path: Path) -> None:
    make_deep(tmp_path)
    entries = list(walk(tmp_path))
    assert sum(1 for e in entries if e.name == "d" and not e.leaving) == DEEP
    assert sum(1 for e in entries if e.leaving) == DEEP  # every folder left again
    (leaf,) = (e for e in entries if e.name == "leaf")
    assert leaf.rel == "d/" * DEEP + "leaf"
    assert remove_tree(tmp_path / "d")  # shutil.rmtree, pytest's cleanup, cannot


def test_remove_tree_removes_a_deep_tree_and_never_follows_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("mine")
    root = tmp_path / "private"
    hostile_tree(root, outside)
    make_deep(root / "sub")
    (root / "sub").chmod(0)  # a closed folder is still emptied (by root) or left (by others)
    removed = remove_tree(root)
    if os.geteuid() == 0:
        assert removed
        assert not root.exists()
    assert (outside / "precious").read_text() == "mine"
    assert remove_tree(tmp_path / "never-made")


def test_copy_plain_keeps_files_and_folders_only(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("mine")
    source, target = tmp_path / "home", tmp_path / "kept"
    hostile_tree(source, outside)
    copy_plain(source, target)
    kept = sorted(str(p.relative_to(target)) for p in target.rglob("*"))
    assert kept == ["run.sh", "sub", "sub/keep.txt"]
    assert (target / "sub" / "keep.txt").read_text() == "kept"
    assert (target / "run.sh").stat().st_mode & 0o777 == 0o750
    assert (target / "run.sh").stat().st_ino != (source / "run.sh").stat().st_ino  # a copy


def test_a_root_swapped_for_a_link_is_neither_copied_nor_emptied(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("no")
    home = tmp_path / "home"
    home.symlink_to(tmp_path / "outside")
    copy_plain(home, tmp_path / "kept")
    assert list((tmp_path / "kept").iterdir()) == []
    assert not remove_tree(home)
    assert (tmp_path / "outside" / "secret").read_text() == "no"
    assert [e.name for e in walk(home, follow_root=True)] == ["secret"]  # a workspace's link


@needs_root
def test_a_mount_below_the_root_is_neither_listed_nor_entered(tmp_path: Path) -> None:
    """A folder mounted into a workspace (here a tmpfs) belongs to another file system: the
    walk that lends a workspace, and the removal of a tree, must never reach into it."""
    (tmp_path / "root" / "mnt").mkdir(parents=True)
    (tmp_path / "root" / "mine.txt").write_text("mine")
    mounted = tmp_path / "root" / "mnt"
    if subprocess.run(["mount", "-t", "tmpfs", "none", str(mounted)], check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (mounted / "theirs.txt").write_text("theirs")
        assert [entry.rel for entry in walk(tmp_path / "root")] == ["mine.txt"]
        assert not remove_tree(tmp_path / "root")  # the mount point stays, and so does
        assert (mounted / "theirs.txt").read_text() == "theirs"  # what is mounted there
    finally:
        subprocess.run(["umount", str(mounted)], check=False)
