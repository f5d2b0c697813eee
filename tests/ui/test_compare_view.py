"""The compare view: posture choices, one command under each, the table, links to the history."""

import asyncio
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from tests.ui.conftest import Run, activate, cell, headers
from tests.waiting import until
from workbench.postures.description import POSTURE_INFO
from workbench.postures.model import PostureId
from workbench.ui.compare.view import FIGURES, CompareView
from workbench.ui.mainwindow import MainWindow
from workbench.ui.scene import Scene, stage


def _column(view: CompareView, column: int) -> dict[str, str]:
    return {figure: cell(view.table, row, column).text() for row, figure in enumerate(FIGURES)}


def _open_without_hardened(window: MainWindow, skill_name: str) -> CompareView:
    """The compare page for `skill_name`, Hardened local unticked: its throwaway uid cannot
    enter the test's temporary folder."""
    view = _open_compare(window, skill_name)
    view.postures.boxes[PostureId.HARDENED].setChecked(False)
    return view


def _open_compare(window: MainWindow, skill_name: str) -> CompareView:
    skill = next(s for s in window.browser.skills() if s.name == skill_name)
    assert window.browser.select_path(skill.path)
    window.pages.setCurrentWidget(window.compare)
    return window.compare


def test_offers_available_postures_and_never_ticks_local_by_itself(window: MainWindow) -> None:
    view = _open_compare(window, "workspace-report")
    assert view.chosen() == [PostureId.HARDENED]  # QuickJS cannot run a python3 command
    assert view.postures.boxes[PostureId.QUICKJS].isEnabled()
    assert (
        view.postures.boxes[PostureId.LOCAL].isEnabled()
        and not view.postures.boxes[PostureId.LOCAL].isChecked()
    )
    assert not view.postures.boxes[PostureId.DOCKER].isEnabled()
    assert "No engine." in view.postures.boxes[PostureId.DOCKER].toolTip()
    assert view.command.text() == 'python3 "$SKILL_DIR/scripts/report.py"'
    assert view.skill_label.text() == "workspace-report:"
    view.command.clear()
    assert not view.run_button.isEnabled()


def test_ticks_by_default_only_the_postures_that_can_run_the_command(window: MainWindow) -> None:
    view = _open_compare(window, "csv-to-markdown")
    assert view.chosen() == [PostureId.QUICKJS]
    _open_compare(window, "traceback-demo")
    assert view.chosen() == [PostureId.HARDENED]
    view.postures.boxes[PostureId.QUICKJS].setChecked(True)  # the user's choice stays ...
    _open_compare(window, "workspace-report")
    assert view.chosen() == [PostureId.HARDENED, PostureId.QUICKJS]
    _open_compare(window, "csv-to-markdown")  # ... until the command changes kind
    assert view.chosen() == [PostureId.QUICKJS]


def test_compares_side_by_side_and_a_cell_opens_its_run_in_the_history(
    window: MainWindow, run: Run
) -> None:
    view = _open_compare(window, "workspace-report")
    view.postures.boxes[PostureId.HARDENED].setChecked(False)
    view.postures.boxes[PostureId.QUICKJS].setChecked(True)
    view.postures.boxes[PostureId.LOCAL].setChecked(True)
    view.run_button.click()
    box = view.question()
    assert box is not None and box.isVisible() and "local posture" in box.text()
    (yes,) = [b for b in box.buttons() if box.buttonRole(b) == QMessageBox.ButtonRole.AcceptRole]
    yes.click()
    run(until(lambda: len(view.records()) == 2 and view.stop_button.isEnabled() is False))

    assert headers(view.table) == [
        POSTURE_INFO[PostureId.QUICKJS].title,
        POSTURE_INFO[PostureId.LOCAL].title,
    ]
    quickjs, local = _column(view, 0), _column(view, 1)
    assert quickjs["Status"] == "Could not run" and "JavaScript" in quickjs["Cause"]
    assert quickjs["Difference"] == "QuickJS worker cannot run it"  # local ran it
    assert local["Difference"] == ""
    assert quickjs["Changed files"] == "0" and quickjs["Wall time"] == "-"  # it never ran
    assert quickjs["Warnings"].startswith("ℹ ") and "INFO:" not in quickjs["Warnings"]
    assert local["Status"] == "Finished" and local["Cause"] == "exited with code 0"
    assert local["Warnings"].startswith("⚠ DANGER: ")
    assert local["Changed files"] == "1" and local["Wall time"].endswith(" s")
    assert local["Peak processes"] != "-"
    assert view.status.text().startswith("1 of 2 runs ended ok")

    local_run = view.records()[1]
    view.table.itemActivated.emit(view.table.item(FIGURES.index("Cause"), 1))
    run(until(lambda: window.history.current_record() is not None))
    assert window.pages.currentWidget() is window.history
    assert window.history.current_record() == local_run

    _open_compare(window, "traceback-demo")  # another skill: its comparison is not this one
    assert view.table.columnCount() == 0 and view.records() == []


def test_stop_ends_the_run_in_progress_and_skips_the_rest(window: MainWindow, run: Run) -> None:
    view = _open_compare(window, "workspace-report")
    view.postures.boxes[PostureId.LOCAL].setChecked(True)
    view.command.setText("sleep 30")

    async def start() -> "asyncio.Task[None] | None":
        return view.start()  # what Compare does once local is confirmed, as the app does it

    async def click_stop() -> None:
        view.stop_button.click()  # on the running loop, as in the app

    task = run(start())
    assert task is not None and not view.run_button.isEnabled()
    run(until(lambda: cell(view.table, 0, 0).text() == "running…"))
    assert cell(view.table, 0, 1).text() == "waiting…"
    run(click_stop())
    run(task)
    assert _column(view, 0)["Status"] == "Cancelled"
    assert _column(view, 1)["Status"] == "skipped (stopped)"
    assert view.status.text().startswith("Stopped: 0 of 1 run ended ok")
    assert view.run_button.isEnabled()


def test_the_screenshot_scene_can_show_a_comparison(window: MainWindow, run: Run) -> None:
    """`workbench gui --screenshot F --run --skill S --view compare --posture local`."""
    view = _open_without_hardened(window, "workspace-report")
    view.postures.boxes[PostureId.QUICKJS].setChecked(True)
    scene = Scene("workspace-report", posture=PostureId.LOCAL, view="compare", run=True)
    run(stage(window, scene))
    assert window.pages.currentWidget() is view
    assert [r.posture for r in view.records()] == ["quickjs", "local"]
    assert _column(view, 1)["Status"] == "Finished"
    assert "RLIMIT" not in _column(view, 1)["Controls"]
    assert _column(view, 1)["Warnings"].startswith("⚠ DANGER: NO SANDBOX")


def test_ctrl_return_on_the_compare_page_compares_and_does_not_run(
    window: MainWindow, run: Run, qtbot: Any
) -> None:
    view = _open_without_hardened(window, "workspace-report")
    view.postures.boxes[PostureId.QUICKJS].setChecked(True)
    activate(window, run)
    view.command.setFocus()
    qtbot.keyClick(view.command, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert view.stop_button.isEnabled() and not window.run_panel.is_running()
    run(until(lambda: len(view.records()) == 1 and not view.stop_button.isEnabled()))
    assert view.records()[0].posture == "quickjs"


def test_ctrl_period_on_the_compare_page_stops_the_comparison(
    window: MainWindow, run: Run, qtbot: Any
) -> None:
    view = _open_without_hardened(window, "workspace-report")
    view.postures.boxes[PostureId.LOCAL].setChecked(True)
    view.command.setText("sleep 30")

    async def start() -> "asyncio.Task[None] | None":
        return view.start()  # what Compare does once local is confirmed

    task = run(start())
    assert task is not None
    run(until(lambda: cell(view.table, 0, 0).text() == "running…"))
    activate(window, run)
    qtbot.keyClick(view.table, Qt.Key.Key_Period, Qt.KeyboardModifier.ControlModifier)
    run(task)
    assert _column(view, 0)["Status"] == "Cancelled" and not window.run_panel.is_running()
