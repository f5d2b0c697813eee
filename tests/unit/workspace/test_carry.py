"""Carrying a copy's changes back: exactly what the command did, and nothing the user did."""

import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.unit.workspace.test_restore import _rich_tree, _run_mutations
from workbench.workspace.carry import carry_back
from workbench.workspace.snapshot import take_snapshot

Listing = Callable[[Path], dict[str, tuple[str, int, bytes]]]


def _copy(source: Path, target: Path) -> None:
    subprocess.run(["cp", "-a", f"{source}/.", str(target)], check=True)


def test_the_copys_changes_arrive_byte_for_byte(tmp_path: Path, tree_listing: Listing) -> None:
    workspace, copy = tmp_path / "ws", tmp_path / "copy"
    workspace.mkdir()
    copy.mkdir()
    _rich_tree(workspace)
    sent = take_snapshot(workspace)
    _copy(workspace, copy)
    _run_mutations(copy)  # what the command did, on the engine's side

    report = carry_back(workspace, sent, take_snapshot(copy), copy)

    assert report.complete, report.notes
    assert tree_listing(workspace) == tree_listing(copy)


def test_what_the_user_changed_meanwhile_is_kept(tmp_path: Path) -> None:
    workspace, copy = tmp_path / "ws", tmp_path / "copy"
    workspace.mkdir()
    copy.mkdir()
    (workspace / "notes.txt").write_text("mine")
    (workspace / "data.csv").write_text("a,b\n")
    sent = take_snapshot(workspace)
    _copy(workspace, copy)
    (copy / "data.csv").write_text("a,b\n1,2\n")  # the command
    (copy / "report.md").write_text("# Report\n")
    (workspace / "notes.txt").write_text("mine, edited during the run")  # the user

    carry_back(workspace, sent, take_snapshot(copy), copy)

    assert (workspace / "notes.txt").read_text() == "mine, edited during the run"
    assert (workspace / "data.csv").read_text() == "a,b\n1,2\n"
    assert (workspace / "report.md").read_text() == "# Report\n"


def test_kept_paths_stay_as_they_are(tmp_path: Path) -> None:
    workspace, copy = tmp_path / "ws", tmp_path / "copy"
    (workspace / "sub").mkdir(parents=True)
    copy.mkdir()
    (workspace / "sub" / "a").write_text("a")
    (workspace / "b").write_text("b")
    sent = take_snapshot(workspace)
    (copy / "c").write_text("c")  # the copy came back without sub/ and b, which were refused

    carry_back(workspace, sent, take_snapshot(copy), copy, keep=frozenset({"sub", "b"}))

    assert sorted(p.name for p in workspace.iterdir()) == ["b", "c", "sub"]
    assert (workspace / "sub" / "a").read_text() == "a"
