"""The history view: the list of past runs, a run's record, export, restore and re-run."""

import asyncio
import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QMessageBox

from tests.ui.conftest import Run, activate, items
from tests.waiting import until
from workbench.executors.types import CancelToken, RunStatus
from workbench.postures.model import Posture, PostureId
from workbench.runs.history import RunFilter
from workbench.runs.record import RunOrigin, RunRecord
from workbench.runs.reports import INTERRUPTED_CAUSE
from workbench.runs.service import RunPlan
from workbench.ui.history.rows import COLUMNS, RUN_ID
from workbench.ui.history.view import PAGE, HistoryView
from workbench.ui.mainwindow import MainWindow
from workbench.ui.scene import Scene, stage
from workbench.ui.services import Services

HOSTILE = "<b>bold</b><img src=x>"
SCRIPT = f"echo '{HOSTILE}'; echo new > made.txt; echo changed >> kept.txt; exit 3"


def _record_run(
    services: Services,
    run: Run,
    workspace: Path,
    script: str = SCRIPT,
    posture: Posture | None = None,
) -> RunRecord:
    """Run `script` under `posture` (local) through the window's run service."""
    workspace.mkdir(exist_ok=True)
    posture = posture or Posture(PostureId.LOCAL)
    plan = RunPlan("demo", workspace, posture, ("sh", "-c", script), workspace)
    done = run(services.runs.run_once(plan, lambda chunk: None, CancelToken()))
    record: RunRecord = done.record
    return record


def _open_history(window: MainWindow, run: Run) -> HistoryView:
    window.pages.setCurrentWidget(window.history)
    run(window.history.refresh())
    return window.history


def _write_record(
    services: Services,
    skill_dir: Path,
    posture: str,
    status: RunStatus,
    cause: str,
    origin: RunOrigin = RunOrigin.RUN,
    session: str | None = None,
) -> RunRecord:
    """A finished run written straight into the history (no command runs)."""
    run_id = f"run-{time.monotonic_ns()}"
    record = RunRecord(
        run_id, skill_dir.name, skill_dir, posture, ("true",), skill_dir, skill_dir, time.time(),
        origin=origin, session=session,
    )  # fmt: skip
    services.runs.history.start(record)
    return services.runs.history.abandon(run_id, status, cause)


def _rows(view: HistoryView) -> list[dict[str, str]]:
    return [{c: item.text(i) for i, c in enumerate(COLUMNS)} for item in items(view.runs)]


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
    top = items(view.runs)[0]
    row = dict(zip(COLUMNS, (top.text(i) for i in range(len(COLUMNS))), strict=True))
    assert row["Status"] == "Failed" and row["Cause"] == "exited with code 3"
    assert (row["Posture"], row["Skill"], row["Changes"]) == ("Local (no sandbox)", "demo", "2")
    assert view.select_run(second.run_id) and view.current_record() == second
    text = view.details.toPlainText()
    assert second.run_id in text and HOSTILE in text  # shown literally, never as markup
    assert f"{second.run_id}: demo under Local (no sandbox)" in text
    peak = second.result["peak_rss_bytes"] if second.result else 0
    assert re.search(rf"Peak memory +[0-9.]+ [KM]iB \({peak:,} bytes\)", text)
    assert re.search(r"memory_bytes +512 MiB \(536,870,912 bytes\)", text)
    assert view.select_run(first.run_id)
    assert first.run_id in view.details.toPlainText()
    assert view.export_button.isEnabled() and view.restore_button.isEnabled()


def test_export_writes_the_chosen_format_through_a_non_blocking_dialog(
    window: MainWindow, services: Services, run: Run, tmp_path: Path
) -> None:
    record = _record_run(services, run, tmp_path / "ws")
    view = _open_history(window, run)
    assert view.select_run(record.run_id)
    checks: dict[str, Callable[[str], bool]] = {
        "report.md": lambda text: text.startswith("# Run ") and "made.txt" in text,
        "report.json": lambda text: json.loads(text)["run_id"] == record.run_id,
        "report.html": lambda text: "&lt;b&gt;bold&lt;/b&gt;" in text and HOSTILE not in text,
    }
    for name, check in checks.items():
        view.export_button.click()
        dialog = view.export_dialog()
        assert isinstance(dialog, QFileDialog) and dialog.isVisible()  # opened, not exec()'d
        target = tmp_path / name
        dialog.selectFile(str(target))
        dialog.accept()
        run(view.tasks.settle())
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
    run(until(view.question))
    assert "changed after run" in view.question().text()  # type: ignore[union-attr]
    _answer_yes(view.question())
    run(until(lambda: not (workspace / "later.txt").exists() and not view.tasks.busy()))
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
    run(until(lambda: view.runs.topLevelItemCount() == 2 and not view.tasks.busy()))
    again = view.current_record()
    assert again is not None and again.run_id != record.run_id
    assert (again.posture, again.argv, again.workspace) == ("local", record.argv, workspace)
    assert (workspace / "log.txt").read_text() == "again\nagain\n"
    assert again.outcome == "ok" and "Re-run" in view.status.text()
    assert again.rerun_of == record.run_id


def test_a_diagnosed_run_is_rerun_as_suggested_and_linked(
    window: MainWindow, services: Services, run: Run, tmp_path: Path
) -> None:
    quick = Posture(PostureId.LOCAL).with_limits(timeout_s=1)
    record = _record_run(services, run, tmp_path / "ws", "sleep 1.5", quick)
    assert record.diagnosis is not None and record.diagnosis.change is not None
    view = _open_history(window, run)
    assert view.select_run(record.run_id)
    item = view.runs.currentItem()
    assert item is not None and "wall-clock timeout 1 s" in item.text(COLUMNS.index("Cause"))
    assert "Why it failed" in view.details.toPlainText()
    assert view.fix_button.isEnabled() and view.fix_button.isVisibleTo(view)
    assert view.fix_button.toolTip() == "Run the same command again with a timeout of 4 s"
    view.fix_button.click()
    box = view.question()
    assert box is not None and "local posture" in box.text()
    _answer_yes(box)
    run(until(lambda: view.runs.topLevelItemCount() == 2 and not view.tasks.busy()))
    again, item = view.current_record(), view.runs.currentItem()
    assert again is not None and again.outcome == "ok" and again.rerun_of == record.run_id
    assert item is not None
    assert f"A re-run of {record.run_id}" in item.toolTip(COLUMNS.index("Cause"))
    assert not view.fix_button.isVisibleTo(view)  # it passed: nothing to suggest


def test_the_screenshot_scene_can_show_the_run_in_the_history(window: MainWindow, run: Run) -> None:
    """`workbench gui --screenshot F --run --skill S --posture local --view history`."""
    scene = Scene("workspace-report", posture=PostureId.LOCAL, view="history", run=True)
    run(stage(window, scene))
    last = window.run_panel.last_run
    assert last is not None and window.pages.currentWidget() is window.history
    assert window.history.current_record() == last.record
    assert "report.md" in window.history.details.toPlainText()


def test_says_how_many_runs_it_lists_of_all_and_reads_older_ones_on_demand(
    window: MainWindow, services: Services, run: Run, tmp_path: Path
) -> None:
    for _ in range(PAGE + 3):
        _write_record(services, tmp_path / "demo", "hardened", RunStatus.OK, "exited with code 0")
    view = _open_history(window, run)
    assert view.runs.topLevelItemCount() == PAGE
    assert view.status.text() == f"The newest {PAGE} of {PAGE + 3} runs in the history."
    assert view.older_button.isVisibleTo(view)
    view.older_button.click()
    run(until(lambda: view.runs.topLevelItemCount() == PAGE + 3 and not view.tasks.busy()))
    assert view.status.text() == f"{PAGE + 3} runs in the history."
    assert not view.older_button.isVisibleTo(view)


def test_words_runs_like_the_run_page_and_filters_them(
    window: MainWindow, services: Services, run: Run, tmp_path: Path
) -> None:
    _write_record(services, tmp_path / "runaway", "hardened", RunStatus.OOM_KILLED, "memory limit")
    _write_record(services, tmp_path / "report", "gvisor", RunStatus.OK, "exited with code 0")
    gone = _write_record(services, tmp_path / "gone", "quickjs", RunStatus.OK, "")
    with sqlite3.connect(services.runs.history.path) as db:  # its workbench died mid-run
        db.execute(
            "UPDATE runs SET state = 'running', status = NULL, owner_started = 1 WHERE run_id = ?",
            (gone.run_id,),
        )
    view = _open_history(window, run)
    rows = _rows(view)
    assert [(r["Skill"], r["Status"], r["Posture"]) for r in rows] == [
        ("gone", "Interrupted", "QuickJS worker"),
        ("report", "Finished", "Docker on gVisor"),
        ("runaway", "Stopped", "Hardened local"),
    ]
    assert rows[0]["Cause"] == INTERRUPTED_CAUSE
    assert view.select_run(gone.run_id) and INTERRUPTED_CAUSE in view.details.toPlainText()
    assert view.status.text() == "3 runs in the history."

    view.filters.text.setText("STOPPED  hardened")
    assert [r["Skill"] for r in _rows(view)] == ["runaway"]
    view.filters.text.setText("gvisor")
    assert [r["Skill"] for r in _rows(view)] == ["report"]
    assert view.status.text() == "Showing 1 of 3 runs in the history."
    view.filters.text.clear()
    _choose(view.filters.status, "Interrupted")
    run(until(lambda: [r["Skill"] for r in _rows(view)] == ["gone"]))
    assert view.status.text() == "1 run that match, of 3 in the history."
    _choose(view.filters.status, "Any status")
    _choose(view.filters.posture, "Hardened local")
    run(until(lambda: [r["Skill"] for r in _rows(view)] == ["runaway"]))
    _choose(view.filters.posture, "Any posture")
    _choose(view.filters.skill, "report")
    run(until(lambda: [r["Skill"] for r in _rows(view)] == ["report"]))


def test_a_sessions_runs_are_grouped_under_it_and_filtered_by_origin(
    window: MainWindow, services: Services, run: Run, tmp_path: Path
) -> None:
    plain = _write_record(services, tmp_path / "report", "hardened", RunStatus.OK, "exited")
    probes = [
        _write_record(
            services,
            tmp_path / f"probe-{i}",
            "docker",
            RunStatus.OK,
            "exited",
            RunOrigin.LAB,
            "lab",
        )
        for i in range(3)
    ]
    view = _open_history(window, run)
    group, single = items(view.runs)
    assert group.text(COLUMNS.index("Cause")) == "Probe lab: 3 runs, 3 ended ok"
    assert group.childCount() == 3 and not group.isExpanded()  # folded: it does not crowd
    assert single.data(0, RUN_ID) == plain.run_id
    view.runs.setCurrentItem(group)
    assert "Probe lab: 3 runs" in view.details.toPlainText()
    assert view.current_record() is None and not view.rerun_button.isEnabled()
    assert view.select_run(probes[1].run_id) and group.isExpanded()
    _choose(view.filters.origin, "Runs")
    run(until(lambda: view.runs.topLevelItemCount() == 1))
    assert items(view.runs)[0].data(0, RUN_ID) == plain.run_id
    run(view.show_run(probes[0].run_id))  # the filter that hides it goes
    assert view.filters.origin.currentIndex() == 0
    shown = view.current_record()
    assert shown is not None and shown.run_id == probes[0].run_id


def test_a_cause_is_one_line_elided_and_whole_in_its_tool_tip(
    window: MainWindow, services: Services, run: Run, tmp_path: Path
) -> None:
    cause = "The workbench that ran it ended before the run did. " * 4
    _write_record(services, tmp_path / "long", "hardened", RunStatus.ERROR, cause)
    view = _open_history(window, run)
    item = items(view.runs)[0]
    assert "\n" not in item.text(COLUMNS.index("Cause"))
    assert cause.strip() in item.toolTip(COLUMNS.index("Cause"))
    assert view.runs.textElideMode() == Qt.TextElideMode.ElideRight


def test_the_keep_setting_is_remembered_and_prunes_old_runs(
    window: MainWindow, services: Services, settings: Any, run: Run, tmp_path: Path
) -> None:
    for _ in range(4):
        _write_record(services, tmp_path / "demo", "hardened", RunStatus.OK, "exited")
    view = _open_history(window, run)
    assert view.keep.retention().keeps_all and not view.keep.prune_button.isEnabled()
    _choose(view.keep.mode, "Keep the last")
    view.keep.count.setValue(2)
    assert (settings.value("history/keep"), settings.value("history/keep_count")) == ("runs", 2)
    view.keep.prune_button.click()
    run(until(lambda: view.runs.topLevelItemCount() == 2 and not view.tasks.busy()))
    assert view.status.text().startswith("Keeping the last 2 runs: Removed 2 runs")
    assert services.runs.history.count() == 2


def test_a_slower_older_read_never_replaces_a_newer_one(
    window: MainWindow, services: Services, run: Run, tmp_path: Path, monkeypatch: Any
) -> None:
    _write_record(services, tmp_path / "report", "hardened", RunStatus.OK, "exited")
    _write_record(
        services, tmp_path / "probe", "docker", RunStatus.OK, "exited", RunOrigin.LAB, "lab"
    )
    view = _open_history(window, run)
    history, held, released = services.runs.history, threading.Event(), threading.Event()
    recent = history.recent

    def held_when_unfiltered(limit: int, where: RunFilter) -> list[RunRecord]:
        if where == RunFilter():
            held.set()
            released.wait(10)
        return recent(limit, where)

    monkeypatch.setattr(history, "recent", held_when_unfiltered)
    view.tasks.spawn(view.refresh())  # e.g. the page shown again: a read that takes long
    run(until(lambda: held.is_set()))
    _choose(view.filters.origin, "Runs")  # asks for a newer read while it runs
    run(asyncio.sleep(0.5))  # time for the newer read to finish, were it not held up
    released.set()
    run(view.tasks.settle(10))
    assert view.runs.topLevelItemCount() == 1  # the newer read's answer: runs only


def _choose(combo: Any, text: str) -> None:
    combo.setCurrentIndex(combo.findText(text))


def test_rerun_streams_its_output_and_stop_ends_it(
    window: MainWindow, services: Services, run: Run, tmp_path: Path, qtbot: Any
) -> None:
    workspace = tmp_path / "ws"
    again_only = "if [ -e ran ]; then echo start-$((2 + 2)); sleep 30; fi; touch ran"
    record = _record_run(services, run, workspace, again_only)
    view = _open_history(window, run)
    assert view.select_run(record.run_id) and not view.stop_button.isEnabled()
    view.rerun_button.click()
    _answer_yes(view.question())
    run(until(lambda: "start-4" in view.details.toPlainText()))
    assert "Re-running demo under Local (no sandbox)" in view.details.toPlainText()
    assert view.stop_button.isEnabled() and not view.rerun_button.isEnabled()
    run(view.refresh())  # e.g. the History page shown again: the output stays
    assert "start-4" in view.details.toPlainText()
    activate(window, run)
    qtbot.keyClick(view.filters.text, Qt.Key.Key_Period, Qt.KeyboardModifier.ControlModifier)
    run(until(lambda: not view.tasks.busy()))
    again = view.current_record()
    assert again is not None and again.run_id != record.run_id
    assert again.outcome == "cancelled"
    assert view.status.text().startswith(f"Re-run {again.run_id}: Cancelled")
    assert not view.stop_button.isEnabled()
