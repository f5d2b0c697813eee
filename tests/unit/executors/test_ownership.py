"""Lending a folder to another uid and giving it back; reachability of folders for a uid."""

import os
from pathlib import Path

import pytest

from tests.unit.executors.test_safe_walk import make_deep
from workbench.executors.process.ownership import FolderLoan, can_reach
from workbench.workspace.safe_walk import remove_tree, walk

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
BORROWER = 0x6FFFFFF0


@needs_root
def test_lend_and_give_back(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "f").write_text("x")
    os.chown(root / "sub" / "f", 123, 456)
    (root / "link").symlink_to("/etc/passwd")
    loan = FolderLoan(root, BORROWER, BORROWER)
    loan.lend()
    assert (root / "sub" / "f").stat().st_uid == BORROWER
    assert Path("/etc/passwd").stat().st_uid == 0  # symlinks are not followed
    (root / "sub" / "new").write_text("y")
    os.chown(root / "sub" / "new", BORROWER, BORROWER)
    (root / "foreign").write_text("a hard link to someone else's file, say")
    os.chown(root / "foreign", 777, 777)
    loan.give_back()
    assert (root / "foreign").stat().st_uid == 777  # not the borrower's: left alone
    assert ((root / "sub" / "f").stat().st_uid, (root / "sub" / "f").stat().st_gid) == (123, 456)
    assert (root / "sub" / "new").stat().st_uid == root.stat().st_uid
    assert (root / "sub").stat().st_uid == os.getuid()


@needs_root
def test_a_hard_linked_file_is_never_lent(tmp_path: Path) -> None:
    outside = tmp_path / "secret"
    outside.write_text("root only")
    outside.chmod(0o600)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "linked").hardlink_to(outside)
    (root / "plain").write_text("x")
    loan = FolderLoan(root, BORROWER, BORROWER)
    loan.lend()
    assert (root / "plain").stat().st_uid == BORROWER
    assert outside.stat().st_uid == 0
    loan.give_back()
    assert (outside.stat().st_uid, outside.stat().st_gid) == (0, 0)
    assert (root / "plain").stat().st_uid == 0


def test_can_reach(tmp_path: Path) -> None:
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o755)
    closed = tmp_path / "closed"
    (closed / "inner").mkdir(parents=True)
    closed.chmod(0o700)
    tmp_path.chmod(0o755)
    stranger = 0x6FFFFFF1
    reachable_parents = all((p.stat().st_mode & 0o001) for p in tmp_path.parents)
    assert can_reach(open_dir, stranger, stranger) is reachable_parents
    assert can_reach(closed / "inner", stranger, stranger) is False
    assert can_reach(closed / "inner", closed.stat().st_uid, closed.stat().st_gid) is True


@needs_root
def test_a_tree_deeper_than_path_max_is_lent_and_given_back(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    make_deep(root)
    loan = FolderLoan(root, BORROWER, BORROWER)
    loan.lend()
    owners = {entry.stat.st_uid for entry in walk(root)}
    assert owners == {BORROWER}
    loan.give_back()
    assert {entry.stat.st_uid for entry in walk(root)} == {0}
    assert root.stat().st_uid == 0
    assert remove_tree(root)  # shutil.rmtree, pytest's cleanup, cannot
