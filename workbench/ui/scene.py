"""Staging the window for `workbench gui --screenshot FILE --run SKILL ...`.

A `Scene` names an example to run before the screenshot: the skill, the posture, the command,
the memory limit, which run tab to show, and whether to shoot while it runs (`during_s`
seconds in) or after it ended. `stage()` plays it on a loaded window, so the screenshots in the
README are of the real app doing the real thing.
"""

import asyncio
from dataclasses import dataclass

from PySide6.QtWidgets import QMessageBox

from workbench.errors import UsageError
from workbench.postures.model import PostureId
from workbench.ui.mainwindow import MainWindow
from workbench.ui.run.panel import CARD_TAB, CHANGES_TAB, NETWORK_TAB, OUTPUT_TAB

TABS = {"output": OUTPUT_TAB, "changes": CHANGES_TAB, "card": CARD_TAB, "network": NETWORK_TAB}


@dataclass(frozen=True, slots=True)
class Scene:
    """What to run before the screenshot is taken."""

    skill: str
    posture: PostureId | None = None
    command: str | None = None
    memory_mib: int | None = None
    show: str = "output"
    during_s: float | None = None
    view: str = "run"  # or "history" (the run selected), "compare", "lab" (their results) or
    # "environment" (the run, with the skill's Environment tab on show)
    allow_hosts: tuple[str, ...] = ()  # bubblewrap's allowed hosts


async def stage(window: MainWindow, scene: Scene) -> None:
    """Run `scene` in `window` and leave it in the state to photograph."""
    skill = next((s for s in window.browser.skills() if s.name == scene.skill), None)
    if skill is None or not window.browser.select_path(skill.path):
        raise UsageError(f"No skill named {scene.skill!r} to run for the screenshot.")
    if scene.show not in TABS:
        raise UsageError(f"--show takes one of {', '.join(TABS)}, not {scene.show!r}.")
    if scene.view == "compare":
        await _stage_compare(window, scene)
        return
    if scene.view == "lab":
        await _stage_lab(window)
        return
    panel = window.run_panel
    if scene.posture is not None:
        _choose(window, scene.posture)
    if scene.view == "environment":
        window.view.tabs().setCurrentWidget(window.view.environment)
    if scene.command is not None:
        panel.command.setText(scene.command)
        panel.command.setCursorPosition(0)
    if scene.memory_mib is not None:
        panel.limits.memory.setValue(scene.memory_mib)
    panel.limits.allow_hosts.setText(" ".join(scene.allow_hosts))
    task = panel.start()
    if task is None:
        raise UsageError(f"The {scene.skill} example cannot run here (no posture or command).")
    if scene.during_s is not None:
        await asyncio.wait([task], timeout=scene.during_s)
    else:
        await task
        await panel.changes.settle()
    panel.tabs.setCurrentIndex(TABS[scene.show])
    if scene.view == "environment":
        window.view.environment.refresh()  # after the run: what it ran with
        for _ in range(100):
            if window.view.environment.status() is not None:
                break
            await asyncio.sleep(0.1)
    if scene.view == "history" and panel.last_run is not None:
        window.pages.setCurrentWidget(window.history)
        await window.history.show_run(panel.last_run.record.run_id)
    await asyncio.sleep(0.3)  # let the output pane and the charts draw


async def _stage_compare(window: MainWindow, scene: Scene) -> None:
    """Compare the skill's command under the postures ticked by default (and `--posture`)."""
    if scene.command is not None:
        window.compare.command.setText(scene.command)
    if scene.posture is not None:  # asked for on the command line: `local` needs no question
        window.compare.postures.boxes[scene.posture].setChecked(True)
    window.pages.setCurrentWidget(window.compare)
    task = window.compare.start()
    if task is None:
        raise UsageError(f"The {scene.skill} example cannot be compared here.")
    await task
    await asyncio.sleep(0.3)  # let the table draw


async def _stage_lab(window: MainWindow) -> None:
    """Run the probe lab under the postures ticked by default."""
    window.pages.setCurrentWidget(window.lab)
    task = window.lab.start()
    if task is None:
        raise UsageError("No posture can run the probe lab here.")
    await task
    await asyncio.sleep(0.3)  # let the table draw


def _choose(window: MainWindow, posture: PostureId) -> None:
    """Choose `posture` on its card; `local` was asked for on the command line, so its
    confirmation is answered yes."""
    window.postures.choose(posture)
    box = window.postures.confirmation_box()
    if box is not None:
        accept = QMessageBox.ButtonRole.AcceptRole
        next(b for b in box.buttons() if box.buttonRole(b) == accept).click()
    if window.postures.chosen() is not posture:
        raise UsageError(f"The {posture} posture cannot run here.")
