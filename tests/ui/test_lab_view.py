"""The probe lab view: posture choices, the scoreboard the headless lab gives, links to runs."""

import asyncio
from typing import Any

import pytest
import qasync
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from tests.ui.conftest import Run, activate, cell, headers, menu
from tests.waiting import until
from workbench.postures.description import POSTURE_INFO
from workbench.postures.model import PostureId
from workbench.probes.catalogue import ProbeId
from workbench.probes.lab import LAB_LIMITS, Cell, Scoreboard
from workbench.probes.verdict import Verdict
from workbench.ui.lab.view import LabView, cell_text, summary_sentence
from workbench.ui.mainwindow import MainWindow


def _open_lab(window: MainWindow) -> LabView:
    (lab_action,) = [a for a in menu(window, "&View").actions() if a.text() == "Lab"]
    assert lab_action.shortcut().toString() == "Ctrl+4"
    lab_action.trigger()
    assert window.pages.currentWidget() is window.lab
    return window.lab


def test_offers_available_postures_and_asks_before_probing_local(window: MainWindow) -> None:
    view = _open_lab(window)
    assert view.chosen() == [PostureId.HARDENED, PostureId.QUICKJS]
    assert (
        view.postures.boxes[PostureId.LOCAL].isEnabled()
        and not view.postures.boxes[PostureId.LOCAL].isChecked()
    )
    assert not view.postures.boxes[PostureId.DOCKER].isEnabled()
    assert "No engine." in view.postures.boxes[PostureId.DOCKER].toolTip()
    view.postures.boxes[PostureId.LOCAL].setChecked(True)
    view.run_button.click()
    box = view.question()
    assert box is not None and box.isVisible() and "local posture" in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert view.question() is None
    assert not view.stop_button.isEnabled() and view.run_button.isEnabled()
    for box_widget in view.postures.boxes.values():
        box_widget.setChecked(False)
    assert not view.run_button.isEnabled()


@pytest.mark.slow
def test_shows_the_scoreboard_and_a_cell_opens_its_run(
    window: MainWindow, loop: qasync.QEventLoop, qtbot: Any
) -> None:
    view = _open_lab(window)
    finished: list[Scoreboard] = []
    view.lab_finished.connect(finished.append)
    task = view.start()
    assert task is not None and view.stop_button.isEnabled() and not view.run_button.isEnabled()
    loop.run_until_complete(asyncio.wait_for(task, 120))

    board = view.scoreboard()
    assert board is not None and finished == [board]
    assert board.postures == (PostureId.HARDENED, PostureId.QUICKJS)
    assert len(board.cells) == 2 * len(ProbeId) and not board.interrupted
    assert view.progress.text() == f"cell {len(board.cells)} of {len(board.cells)}"
    assert headers(view.table) == [
        POSTURE_INFO[PostureId.HARDENED].title,
        POSTURE_INFO[PostureId.QUICKJS].title,
    ]
    for probe_cell in board.cells:
        row = list(ProbeId).index(probe_cell.probe)
        item = cell(view.table, row, board.postures.index(probe_cell.posture))
        assert item.text() == cell_text(probe_cell)
        assert probe_cell.run_id in item.toolTip()
    # What the postures promise and the headless lab finds: hardened reads host files,
    # QuickJS has no host file API.
    hardened = board.cell(PostureId.HARDENED, ProbeId.READ_OUTSIDE)
    quickjs = board.cell(PostureId.QUICKJS, ProbeId.READ_OUTSIDE)
    assert hardened is not None and hardened.verdict is Verdict.NOT_CONTAINED
    assert quickjs is not None and quickjs.verdict is Verdict.CONTAINED
    row = list(ProbeId).index(ProbeId.READ_OUTSIDE)
    assert cell(view.table, row, 0).text() == "not contained (as documented)"  # it warns so
    assert cell(view.table, row, 1).text() == "contained"
    cpu = list(ProbeId).index(ProbeId.CPU)
    assert cell(view.table, cpu, 1).text().startswith("stopped: ")  # what stops a busy loop
    escape = list(ProbeId).index(ProbeId.ESCAPE)
    assert cell(view.table, escape, 1).text() == "n/a: about display, not the posture"
    assert view.status.text().startswith(f"{summary_sentence(board)} ")
    assert not board.unexpected() and "every verdict is the one" in view.status.text()

    view.table.setCurrentCell(row, 1)
    view.table.setFocus()
    qtbot.keyClick(view.table, Qt.Key.Key_Return)

    opened = until(lambda: window.history.current_record() is not None)
    loop.run_until_complete(asyncio.wait_for(opened, 10))
    assert window.pages.currentWidget() is window.history
    record = window.history.current_record()
    assert record is not None
    assert record.run_id == quickjs.run_id and record.posture == "quickjs"


def _cell(probe: ProbeId, verdict: Verdict, expected: Verdict, detail: str, note: str) -> Cell:
    return Cell(probe, PostureId.DOCKER, verdict, detail, note, expected, "run-1", "ok")


def test_cells_answer_their_question_and_the_summary_counts_each_kind() -> None:
    contained = _cell(ProbeId.LOOPBACK, Verdict.CONTAINED, Verdict.CONTAINED, "refused", "net")
    busy = _cell(ProbeId.CPU, Verdict.CONTAINED, Verdict.CONTAINED, "RLIMIT_CPU 1 s", "cpu")
    warned = _cell(ProbeId.DISK, Verdict.NOT_CONTAINED, Verdict.NOT_CONTAINED, "wrote", "No size")
    leak = _cell(ProbeId.READ_HOME, Verdict.NOT_CONTAINED, Verdict.CONTAINED, "read it", "")
    display = _cell(
        ProbeId.ESCAPE, Verdict.NOT_APPLICABLE, Verdict.NOT_APPLICABLE, "raw", "display"
    )
    assert [cell_text(c) for c in (contained, busy, warned, leak, display)] == [
        "contained",
        "stopped: RLIMIT_CPU 1\u00a0s",  # the number and its unit never split over two lines
        "not contained (as documented)",
        "NOT CONTAINED !",
        "n/a: display",
    ]

    def board(*cells: Cell) -> Scoreboard:
        postures = (PostureId.DOCKER,)
        return Scoreboard(postures, tuple(ProbeId), cells, LAB_LIMITS, True, False, 2.0)

    assert summary_sentence(board(contained, busy, warned, display)) == (
        "4 cells in 2.0 s: 2 contained, 1 not contained as their postures document, 1 n/a; "
        "every verdict is the one its posture's description gives."
    )
    assert summary_sentence(board(contained, leak)) == (
        "2 cells in 2.0 s: 1 contained, 1 not as the posture's description says (marked !)."
    )


def test_ctrl_return_runs_the_lab_and_ctrl_period_stops_it(
    window: MainWindow, loop: qasync.QEventLoop, run: Run, qtbot: Any
) -> None:
    view = _open_lab(window)
    view.postures.tick([PostureId.QUICKJS])
    activate(window, run)
    qtbot.keyClick(view.table, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert view.stop_button.isEnabled() and not window.run_panel.is_running()
    qtbot.keyClick(view.table, Qt.Key.Key_Period, Qt.KeyboardModifier.ControlModifier)
    assert view.status.text().startswith("Stopping")

    ended = until(lambda: not view.stop_button.isEnabled())
    loop.run_until_complete(asyncio.wait_for(ended, 60))
    board = view.scoreboard()
    assert board is not None and board.interrupted and len(board.cells) < len(ProbeId)
    assert view.status.text().startswith("Stopped: ")
