"""Restore puts a workspace back byte for byte, and never writes outside it."""

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from workbench.errors import WorkspaceError
from workbench.workspace.blobs import SMALL_BLOB_BYTES, BlobStore
from workbench.workspace.restore import restore_workspace
from workbench.workspace.snapshot import DEFAULT_SNAPSHOT_LIMITS, SnapshotLimits, take_snapshot

Listing = Callable[[Path], dict[str, tuple[str, int, bytes]]]


def _rich_tree(root: Path) -> None:
    (root / "docs" / "nested").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "ro").mkdir()
    (root / "docs" / "a.md").write_text("# A\n")
    (root / "docs" / "nested" / "b.bin").write_bytes(bytes(range(256)) * 40)
    (root / "script.sh").write_text("#!/bin/sh\n")
    (root / "script.sh").chmod(0o750)
    (root / "private").write_text("mine")
    (root / "private").chmod(0o600)
    (root / "link").symlink_to("docs/a.md")
    (root / "dangling").symlink_to("nowhere/at/all")
    (root / "dir_to_file").mkdir()
    (root / "dir_to_file" / "inner.txt").write_text("inner")
    (root / "ro" / "kept.txt").write_text("in a folder the run makes read-only")
    (root / "large.bin").write_bytes(os.urandom(SMALL_BLOB_BYTES + 12345))  # kept as a file


def _run_mutations(root: Path) -> None:
    (root / "new.txt").write_text("added")
    (root / "newdir" / "sub").mkdir(parents=True)
    (root / "newdir" / "sub" / "deep.txt").write_text("deep")
    (root / "newdir" / "sub").chmod(0o500)
    (root / "docs" / "a.md").write_text("# A, rewritten in place\n")
    (root / "docs" / "nested" / "b.bin").unlink()
    (root / "docs" / "nested").rmdir()
    (root / "script.sh").chmod(0o777)
    (root / "private").unlink()
    (root / "private").symlink_to("/etc/passwd")
    (root / "link").unlink()
    (root / "link").symlink_to("script.sh")
    (root / "dangling").unlink()
    for child in (root / "dir_to_file").iterdir():
        child.unlink()
    (root / "dir_to_file").rmdir()
    (root / "dir_to_file").write_text("now a file")
    (root / "empty").rmdir()
    (root / "ro" / "extra.txt").write_text("added inside")
    (root / "ro").chmod(0o555)
    with (root / "large.bin").open("r+b") as large:  # modified in place
        large.seek(1000)
        large.write(b"overwritten")


def test_restore_is_byte_for_byte(tmp_path: Path, tree_listing: Listing) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    _rich_tree(root)
    store = BlobStore(tmp_path / "blobs")
    wanted = tree_listing(root)
    before = take_snapshot(root, store=store)
    _run_mutations(root)
    assert tree_listing(root) != wanted

    report = restore_workspace(root, before, store)

    assert report.complete, report.notes
    assert report.notes == ()
    assert tree_listing(root) == wanted
    assert report.undone > 10
    assert restore_workspace(root, before, store).undone == 0


def test_restore_never_writes_through_a_planted_symlink(
    tmp_path: Path, tree_listing: Listing
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "host.txt").write_text("host file")
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "x.txt").write_text("x")
    store = BlobStore(tmp_path / "blobs")
    wanted = tree_listing(root)
    before = take_snapshot(root, store=store)
    (root / "sub" / "x.txt").unlink()
    (root / "sub").rmdir()
    (root / "sub").symlink_to(outside)

    report = restore_workspace(root, before, store)

    assert report.complete
    assert tree_listing(root) == wanted
    assert [p.name for p in outside.iterdir()] == ["host.txt"]
    assert (outside / "host.txt").read_text() == "host file"


def test_restore_is_partial_for_files_over_the_copy_cap(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    big = tmp_path / "ws" / "big.dat"
    big.write_bytes(b"B" * 5000)
    store = BlobStore(tmp_path / "blobs")
    before = take_snapshot(tmp_path / "ws", store=store, limits=SnapshotLimits(max_blob_bytes=1000))
    assert before.unstored == ("big.dat",)
    big.write_bytes(b"C" * 5000)

    report = restore_workspace(tmp_path / "ws", before, store)

    assert not report.complete
    assert any("content was not kept" in note for note in report.notes)
    assert big.read_bytes() == b"C" * 5000


def test_restore_refuses_a_truncated_snapshot(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"f{i}").write_text("x")
    before = take_snapshot(tmp_path, limits=SnapshotLimits(max_entries=2))
    with pytest.raises(WorkspaceError, match="too many entries"):
        restore_workspace(tmp_path, before, BlobStore(tmp_path / "blobs"))


@pytest.mark.skipif(os.geteuid() != 0, reason="only root restores files for another owner")
def test_restored_entries_belong_to_the_workspace_owner_not_root(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("a")
    (root / "sub" / "b.txt").write_text("b")
    (root / "c.txt").symlink_to("a.txt")
    for path in (root, root / "sub", root / "a.txt", root / "sub" / "b.txt", root / "c.txt"):
        os.lchown(path, 1234, 1234)
    store = BlobStore(tmp_path / "blobs")
    before = take_snapshot(root, store=store)
    for path in (root / "sub" / "b.txt", root / "a.txt", root / "c.txt"):
        path.unlink()
    (root / "sub").rmdir()

    restore_workspace(root, before, store)

    owners = {
        path.relative_to(root).as_posix(): (path.lstat().st_uid, path.lstat().st_gid)
        for path in root.rglob("*")
    }
    assert owners == {name: (1234, 1234) for name in ("a.txt", "sub", "sub/b.txt", "c.txt")}


def _chain(root: Path, depth: int) -> None:
    """`depth` nested folders `d` below `root` and a file at the bottom, made through
    descriptors (the deepest paths outgrow PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    finally:
        os.close(fd)


def _workspace_with(tmp_path: Path, name: str) -> tuple[Path, BlobStore]:
    """A workspace holding one file `name`, and a blob store."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / name).write_text("mine")
    return root, BlobStore(tmp_path / "blobs")


@pytest.mark.usefixtures("remove_deep_trees")
def test_restore_removes_a_tree_thousands_of_folders_deep(
    tmp_path: Path, tree_listing: Listing
) -> None:
    root, store = _workspace_with(tmp_path, "keep.txt")
    wanted = tree_listing(root)
    before = take_snapshot(root, store=store)
    _chain(root, 3000)

    report = restore_workspace(root, before, store)

    assert report.complete, report.notes
    assert report.undone == 3001  # the 3000 folders and the file at the bottom
    assert tree_listing(root) == wanted


@pytest.mark.usefixtures("remove_deep_trees")
def test_a_path_beyond_path_max_is_reported_not_raised(tmp_path: Path) -> None:
    root, store = _workspace_with(tmp_path, "keep.txt")
    long_name = "n" * 250
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(20):  # 20 x 251 characters: past PATH_MAX (4096)
        os.mkdir(long_name, dir_fd=fd)
        child = os.open(long_name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)
    before = take_snapshot(root, store=store)
    subprocess.run(["rm", "-rf", str(root / long_name)], check=True)

    report = restore_workspace(root, before, store)

    assert not report.complete
    assert report.undone + report.left == 20
    assert report.left > 0 and all("File name too long" in note for note in report.notes)


def test_restore_leaves_a_folder_too_deep_to_record_untouched(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    depth = DEFAULT_SNAPSHOT_LIMITS.max_depth
    _chain(root, depth + 10)
    deepest_recorded = root.joinpath(*["d"] * (depth + 1))  # recorded, but not listed
    deepest_recorded.chmod(0o751)
    store = BlobStore(tmp_path / "blobs")
    before = take_snapshot(root, store=store)
    assert before.unlisted == ("/".join(["d"] * (depth + 1)),)
    (root / "added.txt").write_text("by the run")

    report = restore_workspace(root, before, store)

    assert report.complete, report.notes
    assert report.undone == 1
    assert not (root / "added.txt").exists()
    assert deepest_recorded.stat().st_mode & 0o777 == 0o751
    assert deepest_recorded.joinpath(*["d"] * 9, "bottom.txt").exists()


def test_restore_removes_a_flood_past_the_snapshot_cap(
    tmp_path: Path, tree_listing: Listing
) -> None:
    root, store = _workspace_with(tmp_path, "precious.txt")
    wanted = tree_listing(root)
    limits = SnapshotLimits(max_entries=100)
    before = take_snapshot(root, store=store, limits=limits)
    (root / "precious.txt").unlink()
    flood = 1000
    for i in range(flood):
        (root / f"f{i}").touch()
    assert take_snapshot(root, previous=before, limits=limits).truncated

    report = restore_workspace(root, before, store, limits)

    assert report.complete, report.notes
    assert report.undone == flood + 1
    assert tree_listing(root) == wanted


def test_restore_counts_only_what_it_put_back_and_names_each_failure_once(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    os.mkfifo(root / "fifo")
    (root / "big.dat").write_bytes(b"B" * 5000)
    (root / "notes.txt").write_text("mine")
    store = BlobStore(tmp_path / "blobs")
    before = take_snapshot(root, store=store, limits=SnapshotLimits(max_blob_bytes=1000))
    (root / "fifo").unlink()
    (root / "big.dat").write_bytes(b"C" * 5000)
    (root / "notes.txt").write_text("changed by the run")

    report = restore_workspace(root, before, store)

    assert (report.undone, report.left, report.complete) == (1, 2, False)
    assert (root / "notes.txt").read_text() == "mine"
    assert len(report.notes) == 2, report.notes
    big, fifo = report.notes
    assert big.startswith("'big.dat'") and "content was not kept" in big
    assert fifo.startswith("'fifo'") and "FIFO" in fifo
