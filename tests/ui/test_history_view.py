"""The history view: the list of past runs, a run's record, export, restore and re-run."""

import asyncio
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QFileDialog, QMessageBox

from workbench.executors.types import CancelToken
from workbench.postures import Posture, PostureId
from workbench.runs.record import RunRecord
from workbench.runs.service import RunPlan
from workbench.ui.historyview import COLUMNS, HistoryView
from workbench.ui.mainwindow import MainWindow
from workbench.ui.scene import Scene, stage
from workbench.ui.services import Services

Run = Callable[[Coroutine[Any, Any, Any]], Any]
HOSTILE = "<b>bold</b><img src=x>"
SCRIPT = f"echo '{HOSTILE}'; echo new > made.txt; echo changed >> kept.txt; exit 3"


def _record_run(services: Services, run: Run, workspace: Path, script: str = SCRIPT) -> RunRecord:
    """Run `script` under the local posture through the window's run service."""
    workspace.mkdir(exist_ok=True)
    plan = RunPlan("demo", workspace, Posture(PostureId.LOCAL), ("sh", "-c", script), workspace)
    done = run(services.runs.run_once(plan, lambda chunk: None, CancelToken()))
    record: RunRecord = done.record
    return record


async def _until(condition: Callable[[], object]) -> None:
    while not condition():
        await asyncio.sleep(0.02)


def _open_history(window: MainWindow, run: Run) -> HistoryView:
    window.pages.setCurrentWidget(window.history)
    run(window.history.refresh())
    return window.history


def _answer_yes(box: QMessageBox | None) -> None:
    assert box is not None and box.isVisible()
    (yes,) = [b for b in box.buttons() if box.buttonRole(b) == QMessageBox.ButtonRole.AcceptRole]
    yes.click()


def test_lists_runs_newest_first_and_shows_a_record_as_plain_text(
    window: MainWindow, services: Services, run: Run, tmp_path: Path
) -> None:
    first = _record_run(services, run, tmp_path / "ws", "true")
    second = _record_run(services, run, tmp_path / "ws")
    view = _open_history(window, run)
    assert view.runs.topLevelItemCount() == 2
    top = view.runs.topLevelItem(0)
    row = dict(zip(COLUMNS, (top.text(i) for i in range(len(COLUMNS))), strict=True))
    assert row["Status"] == "failed" and row["Cause"] == "exited with code 3"
    assert (row["Posture"], row["Skill"], row["Changes"]) == ("local", "demo", "2")
    assert view.select_run(second.run_id) and view.current_record() == second
    text = view.details.toPlainText()
    assert second.run_id in text and HOSTILE in text  # shown literally, never as markup
    assert view.select_run(first.run_id)
    assert first.run_id in view.details.toPlainText()
    assert view.export_button.isEnabled() and view.restore_button.isEnabled()


def test_export_writes_the_chosen_format_through_a_non_blocking_dialog(
    window: MainWindow, services: Services, run: Run, tmp_path: Path
) -> None:
    record = _record_run(services, run, tmp_path / "ws")
    view = _open_history(window, run)
    assert view.select_run(record.run_id)
    for name, check in (
        ("report.md", lambda text: text.startswith("# Run ") and "made.txt" in text),
        ("report.json", lambda text: json.loads(text)["run_id"] == record.run_id),
        ("report.html", lambda text: "&lt;b&gt;bold&lt;/b&gt;" in text and HOSTILE not in text),
    ):
        view.export_button.click()
        dialog = view.export_dialog()
        assert isinstance(dialog, QFileDialog) and dialog.isVisible()  # opened, not exec()'d
        target = tmp_path / name
        dialog.selectFile(str(target))
        dialog.accept()
        run(_until(lambda target=target: target.exists() and not view._tasks))
        assert check(target.read_text(encoding="utf-8")), name
        assert view.export_dialog() is None
    assert str(tmp_path / "report.html") in view.status.text()


def test_restore_puts_the_workspace_back_and_asks_before_losing_later_changes(
    window: MainWindow, services: Services, run: Run, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "kept.txt").write_text("original\n")
    record = _record_run(services, run, workspace)
    view = _open_history(window, run)
    assert view.select_run(record.run_id)

    run(view.restore(record))
    assert (workspace / "kept.txt").read_text() == "original\n"
    assert not (workspace / "made.txt").exists()
    assert view.status.text().startswith("Restored")

    second = _record_run(services, run, workspace)
    (workspace / "later.txt").write_text("written after the run\n")
    run(view.refresh())
    assert view.select_run(second.run_id)
    view.restore_button.click()
    run(_until(view.question))
    assert "changed after run" in view.question().text()  # type: ignore[union-attr]
    _answer_yes(view.question())
    run(_until(lambda: not (workspace / "later.txt").exists() and not view._tasks))
    assert (workspace / "kept.txt").read_text() == "original\n"


def test_rerun_of_a_local_run_asks_then_runs_it_again_in_the_same_workspace(
    window: MainWindow, services: Services, run: Run, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    record = _record_run(services, run, workspace, "echo again >> log.txt")
    view = _open_history(window, run)
    assert view.select_run(record.run_id)
    view.rerun_button.click()
    box = view.question()
    assert box is not None and "local posture" in box.text()
    _answer_yes(box)
    run(_until(lambda: view.runs.topLevelItemCount() == 2 and not view._tasks))
    again = view.current_record()
    assert again is not None and again.run_id != record.run_id
    assert (again.posture, again.argv, again.workspace) == ("local", record.argv, workspace)
    assert (workspace / "log.txt").read_text() == "again\nagain\n"
    assert again.outcome == "ok" and "Re-run" in view.status.text()


def test_the_screenshot_scene_can_show_the_run_in_the_history(window: MainWindow, run: Run) -> None:
    """`workbench gui --screenshot F --run SKILL --posture local --view history`."""
    run(stage(window, Scene("workspace-report", PostureId.LOCAL, view="history")))
    last = window.run_panel.last_run
    assert last is not None and window.pages.currentWidget() is window.history
    assert window.history.current_record() == last.record
    assert "report.md" in window.history.details.toPlainText()
