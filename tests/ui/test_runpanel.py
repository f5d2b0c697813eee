"""The run panel: suggested command, live plain-text output, outcome and cause, Stop."""

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from workbench.postures import PostureId
from workbench.ui.mainwindow import MainWindow

Run = Callable[[Coroutine[Any, Any, Any]], Any]


def _select(window: MainWindow, name: str) -> None:
    skill = next(s for s in window.browser.skills() if s.name == name)
    assert window.browser.select_path(skill.path)


def test_command_is_prefilled_from_the_skill(window: MainWindow) -> None:
    _select(window, "workspace-report")
    assert window.run_panel.command.text() == 'python3 "$SKILL_DIR/scripts/report.py"'
    assert window.run_panel.posture_label.text() == "Hardened local:"
    assert window.run_panel.run_button.isEnabled()


def test_run_streams_plain_text_and_reports_the_outcome(window: MainWindow, run: Run) -> None:
    _select(window, "workspace-report")
    panel = window.run_panel
    panel.set_posture(PostureId.LOCAL)  # hardened's throwaway uid cannot enter pytest's tmp
    panel.command.setText("echo '<b>out</b>'; printf '\\033[31mred\\033[0m\\n' >&2; exit 3")
    task = panel.start()
    assert task is not None and panel.is_running()
    assert not panel.run_button.isEnabled() and panel.stop_button.isEnabled()
    run(task)
    assert not panel.is_running() and not panel.stop_button.isEnabled()
    text = panel.output.toPlainText()
    assert "<b>out</b>" in text, panel.outcome.text()
    assert "red" in text and "\x1b" not in text
    assert panel.outcome.text().startswith("✘ failed:")
    assert "3" in panel.outcome.text()


def test_stop_ends_the_run(window: MainWindow, run: Run) -> None:
    _select(window, "workspace-report")
    panel = window.run_panel
    panel.set_posture(PostureId.LOCAL)
    panel.command.setText("echo started; sleep 30")

    async def start_then_stop() -> None:
        task = panel.start()
        assert task is not None
        while "started" not in panel.output.toPlainText():
            await asyncio.sleep(0.05)
        panel.stop_button.click()
        await task

    run(start_then_stop())
    assert panel.outcome.text().startswith("✘ cancelled:")


def test_an_unavailable_executor_is_reported_not_raised(window: MainWindow, run: Run) -> None:
    _select(window, "workspace-report")
    window.run_panel.set_posture(PostureId.GVISOR)
    task = window.run_panel.start()
    assert task is not None
    run(task)
    assert window.run_panel.outcome.text().startswith("Not run:")


def test_suggested_command_does_not_overwrite_an_edit_on_reselect(window: MainWindow) -> None:
    _select(window, "workspace-report")
    window.run_panel.command.setText("ls")
    current = window.browser.current_skill()
    assert current is not None
    window.run_panel.set_skill(current)
    assert window.run_panel.command.text() == "ls"
    assert Path(current.path).is_dir()
