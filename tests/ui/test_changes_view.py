"""The changes view: badges and counts, diffs and placeholders, and Restore workspace."""

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QMessageBox, QSplitter, QTreeWidgetItem

from tests.ui.conftest import Run, items
from workbench.executors.types import CancelToken, OutputChunk
from workbench.postures.model import Posture, PostureId
from workbench.runs.service import CompletedRun, RunPlan
from workbench.ui.run.changes import CHANGE_ROLE, ChangesView, losses, summary
from workbench.ui.run.diff import DiffView, split_rows
from workbench.ui.services import Services

COMMAND = (
    "echo new > keep.txt; rm gone.txt; printf 'x\\000y' > blob.bin; mkdir sub;"
    " python3 -c \"open('sub/big.txt', 'w').write('line of text\\n' * 90000)\""
)


def _ignore(_chunk: OutputChunk) -> None:
    pass


@pytest.fixture
def done(services: Services, tmp_path: Path, run: Run) -> CompletedRun:
    """A local run that modified, deleted and added files in a prepared workspace."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "keep.txt").write_text("old\n")
    (workspace / "gone.txt").write_text("bye\n")
    plan = RunPlan("test", tmp_path, Posture(PostureId.LOCAL), ("sh", "-c", COMMAND), workspace)
    completed: CompletedRun = run(services.runs.run_once(plan, _ignore, CancelToken()))
    assert completed.result.status == "ok", completed.result.cause
    return completed


@pytest.fixture
def view(qtbot: Any, services: Services, run: Run) -> ChangesView:
    changes = ChangesView(services.runs)
    qtbot.addWidget(changes)
    changes.resize(1500, 500)
    changes.show()
    return changes


def _items(view: ChangesView) -> dict[str, QTreeWidgetItem]:
    found: dict[str, QTreeWidgetItem] = {}

    def walk(item: QTreeWidgetItem, prefix: str) -> None:
        path = f"{prefix}{item.text(0)}"
        found[path] = item
        for child in items(item):
            walk(child, f"{path}/")

    for top in items(view.tree):
        walk(top, "")
    return found


def _show(view: ChangesView, done: CompletedRun, run: Run) -> None:
    view.set_run(done)
    run(view.settle())  # the first file's diff


async def _restore(view: ChangesView) -> None:
    assert view.restore_now() is not None
    await view.settle()


def _select(view: ChangesView, path: str, run: Run) -> None:
    view.tree.setCurrentItem(_items(view)[path])
    run(view.settle())


def test_the_tree_has_badges_and_counts(view: ChangesView, done: CompletedRun, run: Run) -> None:
    view.set_run(done)
    run(view.settle())
    assert view.counts.text() == "5 changes: 3 added · 1 modified · 1 deleted"
    items = _items(view)
    assert items["keep.txt"].text(1) == "M  modified"
    assert items["gone.txt"].text(1) == "D  deleted"
    assert items["blob.bin"].text(1) == "A  added"
    assert items["sub/big.txt"].text(1) == "A  added"
    assert items["keep.txt"].text(2) == "4 B"
    assert items["keep.txt"].data(0, CHANGE_ROLE).path == "keep.txt"
    assert view.restore_button.isEnabled()


def test_a_text_diff_and_the_binary_placeholder(
    view: ChangesView, done: CompletedRun, run: Run
) -> None:
    _show(view, done, run)
    view.diff.layout_choice.setCurrentText("Unified")
    _select(view, "keep.txt", run)
    text = view.diff.unified.toPlainText()
    assert "-old" in text and "+new" in text
    assert view.diff.title.text() == "keep.txt (modified)"
    _select(view, "blob.bin", run)
    assert view.diff.placeholder.text().startswith("Binary file")
    assert view.diff.show_anyway_button.isHidden()


def test_a_large_text_file_can_be_shown_anyway(
    view: ChangesView, done: CompletedRun, run: Run
) -> None:
    _show(view, done, run)
    _select(view, "sub/big.txt", run)
    assert view.diff.placeholder.text().startswith("Too large to diff")
    assert not view.diff.show_anyway_button.isHidden()
    view.diff.show_anyway_button.click()
    run(view.settle())
    assert view.diff.is_split()  # the view is wide
    assert view.diff.right.document().blockCount() > 90_000


def test_restore_asks_naming_the_losses_then_brings_files_back(
    view: ChangesView, done: CompletedRun, run: Run
) -> None:
    _show(view, done, run)
    view.restore_button.click()
    box = view.confirmation_box()
    assert box is not None
    assert "gone.txt: deleted by the run, will come back" in box.informativeText()
    for label in box.findChildren(QLabel):  # paths are hostile text
        assert label.textFormat() == Qt.TextFormat.PlainText or not label.text()
    assert "blob.bin: created by the run, will be deleted" in box.informativeText()
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert view.confirmation_box() is None
    workspace = done.record.workspace
    assert not (workspace / "gone.txt").exists()  # cancelled: nothing restored

    async def confirm() -> None:
        view.restore_button.click()
        box = view.confirmation_box()
        assert box is not None
        next(b for b in box.buttons() if b.text() == "Restore workspace").click()
        await view.settle()

    run(confirm())
    assert view.restore_status.text().startswith("Restored: 5 paths put back")
    assert (workspace / "gone.txt").read_text() == "bye\n"
    assert (workspace / "keep.txt").read_text() == "old\n"
    assert not (workspace / "blob.bin").exists() and not (workspace / "sub").exists()
    assert not view.restore_button.isEnabled()


@pytest.mark.parametrize("anyway", [False, True])
def test_a_refused_restore_says_why_and_can_restore_anyway(
    view: ChangesView, done: CompletedRun, run: Run, anyway: bool
) -> None:
    _show(view, done, run)
    later = done.record.workspace / "later.txt"
    later.write_text("made after the run")
    run(_restore(view))
    assert view.restore_status.text().startswith("Not restored: The workspace changed after")
    assert later.exists()
    assert view.restore_button.isEnabled()
    box = view.confirmation_box()
    assert box is not None and box.windowTitle() == "Restore anyway?"
    if not anyway:
        box.button(QMessageBox.StandardButton.Cancel).click()
        assert view.confirmation_box() is None and later.exists()
        return
    accept = next(b for b in box.buttons() if b.text() == "Restore and lose those changes")
    accept.click()
    run(view.settle())
    assert view.restore_status.text().startswith("Restored:"), view.restore_status.text()
    assert not later.exists()
    assert (done.record.workspace / "keep.txt").read_text() == "old\n"


def test_split_rows_pair_removals_with_additions() -> None:
    unified = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n same\n-old\n-gone\n+new\n\\ No newline\n"
    assert split_rows(unified) == [
        ("@@ -1,3 +1,3 @@", "@@ -1,3 +1,3 @@"),
        ("same", "same"),
        ("old", "new"),
        ("gone", None),
    ]


def test_auto_layout_follows_the_width(qtbot: Any) -> None:
    diff = DiffView()
    qtbot.addWidget(diff)
    diff.resize(600, 300)
    diff.show()
    diff.show_diff("f", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n")
    assert not diff.is_split()
    diff.resize(1200, 300)
    qtbot.waitUntil(diff.is_split)
    assert diff.left.toPlainText().splitlines()[-1] == "a"
    assert diff.right.toPlainText().splitlines()[-1] == "b"


def test_summary_and_losses_of_nothing() -> None:
    assert summary(()) == "No changes in the workspace."
    assert losses(()) == []


def test_hostile_paths_are_plain_text_escaped_on_one_line_as_the_cli_shows_them(
    view: ChangesView, services: Services, tmp_path: Path, run: Run
) -> None:
    workspace = tmp_path / "hostile"
    workspace.mkdir()
    markup = "<img src=x onerror=alert(1)>&amp;.txt"
    command = (
        f"echo x > '{markup}'; echo y > 'a\\b'; "
        "echo z > \"$(printf 'notes.txt\\n  deleted      important.txt')\""
    )
    plan = RunPlan("test", tmp_path, Posture(PostureId.LOCAL), ("sh", "-c", command), workspace)
    completed = run(services.runs.run_once(plan, _ignore, CancelToken()))
    assert completed.result.status == "ok", completed.result.cause
    forged = "notes.txt\\n  deleted      important.txt"

    _show(view, completed, run)
    view.diff.layout_choice.setCurrentText("Unified")
    _select(view, forged, run)

    assert sorted(_items(view)) == [markup, "a\\\\b", forged]
    assert forged in _items(view)[forged].toolTip(0)
    assert view.diff.title.text() == f"{forged} (added)"
    header = view.diff.unified.toPlainText().splitlines()[:2]
    assert header == [f"--- a/{forged}", f"+++ b/{forged}"]
    assert losses(completed.result.changes)[1:] == [
        "a\\\\b: created by the run, will be deleted",
        f"{forged}: created by the run, will be deleted",
    ]
    _select(view, markup, run)
    assert view.diff.title.text() == f"{markup} (added)"


def test_the_change_and_size_columns_stay_whole_beside_a_long_path(
    view: ChangesView, services: Services, tmp_path: Path, run: Run, qtbot: Any
) -> None:
    long_name = "a-file-with-a-rather-long-name-" * 3 + ".txt"
    command = f"mkdir -p deep/er; head -c 100000 /dev/zero | tr '\\0' y > deep/er/{long_name}"
    plan = RunPlan("t", tmp_path, Posture(PostureId.LOCAL), ("sh", "-c", command), tmp_path / "w")
    done = run(services.runs.run_once(plan, _ignore, CancelToken()))
    assert done.result.status == "ok", done.result.cause
    _show(view, done, run)
    split = view.tree.parentWidget()
    assert isinstance(split, QSplitter)
    split.setSizes([260, 1200])
    qtbot.waitUntil(lambda: view.tree.width() <= 270)
    header, metrics = view.tree.header(), view.tree.fontMetrics()
    assert header.sectionViewportPosition(2) + header.sectionSize(2) <= view.tree.viewport().width()
    item = _items(view)[f"deep/er/{long_name}"]
    assert item.text(2) == "97.7 KiB"
    for column in (1, 2):
        assert header.sectionSize(column) >= metrics.horizontalAdvance(item.text(column))
    assert long_name in item.toolTip(0)
