"""The newcomer test: what a person trying the workbench for the first time would do.

Open the app on the bundled examples, pick the Python example, run it under two postures
(`local`, confirming the warning, and `hardened`), watch samples arrive in the charts, see the
changed file and its diff, restore the workspace, and export a report from the history. The
data folder is world-traversable: the hardened posture runs the command as a throwaway user
that must reach its workspace (pytest's tmp_path is private to its owner).
"""

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog, QMessageBox

from tests.ui.conftest import PROBE, Run, items, menu
from tests.waiting import until
from workbench.executors import build_executor
from workbench.platform.paths import example_skills_dir
from workbench.postures.model import PostureId
from workbench.runs.history import RunHistory
from workbench.runs.layout import DataLayout
from workbench.runs.service import CompletedRun, RunService
from workbench.skills import discover, load_skill
from workbench.ui.mainwindow import MainWindow
from workbench.ui.services import Services

pytestmark = pytest.mark.slow


@pytest.fixture
def open_root() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="workbench-newcomer-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def services(open_root: Path) -> Services:
    """The real services on the bundled examples, with the data folder in `open_root`."""
    layout = DataLayout(open_root / "data")
    return Services(
        roots=(example_skills_dir(),),
        discover=discover,
        load_skill=load_skill,
        probe_postures=lambda: PROBE,
        runs=RunService(layout, RunHistory(layout.history_path), build_executor),
    )


def _click(box: QMessageBox | None, role: QMessageBox.ButtonRole) -> None:
    assert box is not None and box.isVisible()
    (button,) = [b for b in box.buttons() if box.buttonRole(b) == role]
    button.click()


def _run_example(window: MainWindow, run: Run) -> CompletedRun:
    """Press Run (with a pause after the script, so the monitor samples it) and wait."""
    panel = window.run_panel
    panel.command.setText(f"{panel.command.text()} && sleep 0.6")
    finished: list[CompletedRun] = []
    panel.run_finished.connect(finished.append)
    panel.run_button.click()
    assert panel.is_running()
    run(until(lambda: panel.charts.memory.point_count() > 0))  # samples arrive during the run
    run(until(lambda: finished and not panel.is_running()))
    panel.run_finished.disconnect(finished.append)
    run(panel.changes.settle())
    return finished[0]


def _check_changes(window: MainWindow, done: CompletedRun) -> None:
    assert done.record.outcome == "ok", done.record.cause
    assert [c.path for c in done.result.changes] == ["report.md"]
    changes = window.run_panel.changes
    assert items(changes.tree)[0].text(0) == "report.md"
    assert "report.md" in changes.diff.title.text()
    assert "+# Workspace report" in changes.diff.unified.toPlainText()
    assert (done.record.workspace / "report.md").is_file()


def test_a_newcomer_runs_the_python_example_under_two_postures(
    window: MainWindow, run: Run, open_root: Path
) -> None:
    skill = next(s for s in window.browser.skills() if s.name == "workspace-report")
    assert window.browser.select_path(skill.path)
    assert window.postures.chosen() is PostureId.HARDENED  # the strongest available

    window.postures.choose(PostureId.LOCAL)
    assert window.postures.chosen() is PostureId.HARDENED  # not before the user confirms
    _click(window.postures.confirmation_box(), QMessageBox.ButtonRole.AcceptRole)
    assert window.postures.chosen() is PostureId.LOCAL
    local = _run_example(window, run)
    assert local.record.posture == "local"
    _check_changes(window, local)

    window.postures.choose(PostureId.HARDENED)
    hardened = _run_example(window, run)
    assert hardened.record.posture == "hardened"
    _check_changes(window, hardened)
    assert window.run_panel.charts.cpu.point_count() > 0

    window.run_panel.changes.restore_button.click()
    _click(window.run_panel.changes.confirmation_box(), QMessageBox.ButtonRole.AcceptRole)
    run(window.run_panel.changes.settle())
    assert list(hardened.record.workspace.iterdir()) == []  # as before the run: empty

    view_menu = menu(window, "&View")
    next(a for a in view_menu.actions() if a.text() == "History").trigger()
    assert window.pages.currentWidget() is window.history
    history = window.history
    run(until(lambda: history.runs.topLevelItemCount() == 2))
    assert history.select_run(hardened.record.run_id)
    history.export_button.click()
    dialog = history.export_dialog()
    assert isinstance(dialog, QFileDialog) and dialog.isVisible()
    report = open_root / "report.html"
    dialog.selectFile(str(report))
    dialog.accept()
    run(until(report.exists))
    text = report.read_text(encoding="utf-8")
    assert hardened.record.run_id in text and "report.md" in text and "hardened" in text
