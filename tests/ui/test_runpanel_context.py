"""What the run page's results belong to: the run's own line when another skill is selected,
runs in the user's folder (asked once, restorable), and a search or a vanished skill never
leaving the command aimed at a skill the user does not see."""

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QMessageBox

from tests.ui.conftest import Run
from tests.waiting import until
from workbench.postures.model import PostureId
from workbench.runs.service import CompletedRun
from workbench.ui.mainwindow import MainWindow
from workbench.ui.run.controls import WORKSPACE_FRESH, WorkspaceChoice
from workbench.ui.run.panel import RunPanel


def _select(window: MainWindow, name: str) -> None:
    skill = next(s for s in window.browser.skills() if s.name == name)
    assert window.browser.select_path(skill.path)


def _finished(panel: RunPanel, run: Run) -> CompletedRun:
    """Wait for the run in progress to end; its result."""
    assert panel.is_running()
    run(until(lambda: not panel.is_running()))
    assert panel.last_run is not None
    return panel.last_run


def _accept(box: QMessageBox) -> None:
    accept = next(
        b for b in box.buttons() if box.buttonRole(b) == QMessageBox.ButtonRole.AcceptRole
    )
    accept.click()


def test_the_results_name_their_run_when_another_skill_is_selected_and_restore_that_run(
    window: MainWindow, run: Run
) -> None:
    _select(window, "workspace-report")
    panel = window.run_panel
    panel.set_posture(PostureId.LOCAL)
    panel.command.setText("echo made > made.txt")
    assert not panel.run_title.isVisible()
    panel.start()
    done = _finished(panel, run)
    made = done.record.workspace / "made.txt"
    assert made.is_file()
    title = panel.run_title.text()
    assert title.startswith("Last run: workspace-report · Local (no sandbox) · ")
    assert title.endswith(" · in a fresh folder"), title
    assert panel.run_title.property("status") == "muted"

    _select(window, "runaway")
    title = panel.run_title.text()
    assert title.startswith("Last run: workspace-report · "), title
    assert title.endswith(" · not the selected skill"), title
    assert panel.run_title.property("status") == "warning"
    assert panel.changes.restore_button.isEnabled()
    panel.changes.restore_button.click()
    box = panel.changes.confirmation_box()
    assert box is not None and str(done.record.workspace) in box.text()
    _accept(box)
    run(panel.changes.settle())
    assert panel.changes.restore_status.text().startswith("Restored")
    assert not made.exists()

    _select(window, "workspace-report")
    assert not panel.run_title.text().endswith("not the selected skill")


@pytest.mark.parametrize("confirm", [True, False])
def test_a_run_in_the_users_folder_asks_once_and_can_be_restored(
    window: MainWindow, run: Run, tmp_path: Path, confirm: bool
) -> None:
    folder = tmp_path / "my project"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    _select(window, "workspace-report")
    panel = window.run_panel
    panel.set_posture(PostureId.LOCAL)
    assert panel.workspace.combo.currentText() == WORKSPACE_FRESH
    panel.workspace.choose(folder)
    panel.command.setText("echo changed > notes.txt; echo new > new.txt")

    assert panel.start() is None  # asked first
    box = panel.workspace.question()
    assert box is not None
    assert f"change, add and delete files in {folder}" in box.text()
    if not confirm:
        box.button(QMessageBox.StandardButton.Cancel).click()
        assert not panel.is_running()
        assert (folder / "notes.txt").read_text() == "mine\n"
        assert not (folder / "new.txt").exists()
        return
    _accept(box)
    done = _finished(panel, run)
    assert done.record.workspace == folder
    assert (folder / "notes.txt").read_text() == "changed\n"
    assert panel.run_title.text().endswith(f" · in {folder}")
    assert panel.changes.counts.text() == "2 changes: 1 added · 1 modified"

    panel.changes.restore_now()
    run(panel.changes.settle())
    assert panel.changes.restore_status.text().startswith("Restored")
    assert (folder / "notes.txt").read_text() == "mine\n"
    assert not (folder / "new.txt").exists()

    assert panel.start() is not None  # the folder was confirmed: no second question
    again = _finished(panel, run)
    assert again.record.workspace == folder and panel.workspace.question() is None


def test_the_workspace_choice_is_remembered_per_skill(window: MainWindow, tmp_path: Path) -> None:
    panel = window.run_panel
    _select(window, "workspace-report")
    panel.workspace.choose(tmp_path)
    _select(window, "runaway")
    assert panel.workspace.folder() is None
    assert panel.workspace.combo.findData(str(tmp_path)) > 0  # offered, not chosen
    _select(window, "workspace-report")
    assert panel.workspace.folder() == tmp_path
    assert str(tmp_path) in panel.workspace.combo.toolTip()
    assert panel.workspace.combo.accessibleName() == "Workspace folder"


def test_a_chosen_folder_that_is_gone_is_not_made_again(
    window: MainWindow, tmp_path: Path, run: Run
) -> None:
    folder = tmp_path / "gone"
    folder.mkdir()
    _select(window, "workspace-report")
    panel = window.run_panel
    panel.set_posture(PostureId.LOCAL)
    panel.workspace.choose(folder)
    assert panel.start() is None
    box = panel.workspace.question()
    assert box is not None
    folder.rmdir()
    _accept(box)
    run(until(lambda: not panel.is_running()))
    assert panel.banner.sentence.text().startswith(f"Not run: The workspace folder {folder} is")
    assert not folder.exists()


def test_a_search_matching_nothing_leaves_no_command_and_esc_brings_the_skill_back(
    window: MainWindow, qtbot: Any
) -> None:
    _select(window, "runaway")
    panel = window.run_panel
    window.browser.focus_search()
    qtbot.keyClicks(window.browser._search, "s19zzz")
    assert window.browser.visible_skills() == []
    assert panel.command.text() == ""
    assert not panel.run_button.isEnabled()
    qtbot.keyClick(window.browser._search, Qt.Key.Key_Escape)
    assert window.browser._search.text() == ""
    current = window.browser.current_skill()
    assert current is not None and current.name == "runaway"
    assert panel.command.text() == 'python3 "$SKILL_DIR/scripts/runaway.py" cpu'


def test_a_vanished_skill_is_named_in_the_message_bar(
    window: MainWindow, run: Run, extra_root: Path, write_skill: Callable[..., Path]
) -> None:
    folder = write_skill(extra_root, "zz-leaving", "name: zz-leaving\ndescription: Leaves.")
    run(window.reload_catalog())
    assert window.browser.select_path(folder)
    assert not window.message_bar.isVisible()
    shutil.rmtree(folder)
    run(window.reload_catalog())
    shown = window.browser.current_skill()
    assert shown is not None and shown.name != "zz-leaving"
    assert window.message_bar.isVisible()
    assert window.message_bar.text() == (
        f"zz-leaving is gone from disk ({folder}); showing {shown.name}."
    )
    assert window.run_panel.command.text() == (shown.command or "")


def test_a_skill_named_like_a_setting_keeps_the_folders_of_the_others(
    qtbot: Any, settings: QSettings, tmp_path: Path
) -> None:
    choice = WorkspaceChoice(settings)
    qtbot.addWidget(choice)
    first, second = tmp_path / "first", tmp_path / "second"
    choice.set_skill("x")
    choice.choose(first)
    for name in ("recent", "confirmed"):
        choice.set_skill(name)
        choice.choose(second)
    choice.set_skill("x")
    assert choice.folder() == first.absolute()
    choice.set_skill("y")
    assert choice.folder() is None
    offered = [choice.combo.itemData(i) for i in range(1, choice.combo.count())]
    assert offered == [str(second.absolute()), str(first.absolute())]
