"""Restore puts a workspace back byte for byte, and never writes outside it."""

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from workbench.errors import WorkspaceError
from workbench.workspace.blobs import SMALL_BLOB_BYTES, BlobStore
from workbench.workspace.restore import restore_workspace
from workbench.workspace.snapshot import SnapshotLimits, take_snapshot

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
