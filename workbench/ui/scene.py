"""Opening the window where `workbench gui --skill/--view/--tab ...` asks, and staging a run
for `workbench gui --screenshot FILE --run`.

A `Scene` names the skill to select, the page and tab to show, the posture, command and memory
limit to set and, with `run`, whether to run the command first (on the Run page, or as a
comparison or a probe-lab run when the page is Compare or Lab) and whether to shoot while it
runs (`during_s` seconds in) or after it ended. `stage()` plays it on a loaded window, so the
screenshots in the README are of the real app doing the real thing.
"""

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtWidgets import QMessageBox, QTabWidget

from workbench.errors import UsageError
from workbench.postures.model import PostureId
from workbench.ui.mainwindow import MainWindow
from workbench.ui.run.panel import CARD_TAB, CHANGES_TAB, NETWORK_TAB, OUTPUT_TAB

RUN_TABS = {"output": OUTPUT_TAB, "changes": CHANGES_TAB, "card": CARD_TAB, "network": NETWORK_TAB}
SKILL_TABS = {
    "skill-md": "SKILL.md",
    "edit": "Edit",
    "front-matter": "Front matter",
    "diagnostics": "Diagnostics",
    "files": "Files",
    "capabilities": "Capabilities",
    "environment": "Environment",
}


@dataclass(frozen=True, slots=True)
class Scene:
    """Where the window opens and, for a screenshot, what runs first."""

    skill: str | None = None  # a skill's name or folder
    view: str = "run"  # or "history" (the run selected), "compare" or "lab"
    tab: str | None = None  # a key of SKILL_TABS or RUN_TABS
    posture: PostureId | None = None
    command: str | None = None
    memory_mib: int | None = None
    run: bool = False
    during_s: float | None = None
    allow_hosts: tuple[str, ...] = ()  # bubblewrap's allowed hosts


async def stage(window: MainWindow, scene: Scene) -> None:
    """Play `scene` in `window` and leave it in the state to photograph."""
    if scene.view not in PAGES:
        raise UsageError(f"--view takes one of {', '.join(PAGES)}, not {scene.view!r}.")
    if scene.tab is not None and scene.tab not in {**SKILL_TABS, **RUN_TABS}:
        raise UsageError(f"There is no tab {scene.tab!r}.")
    if scene.skill is not None:
        _select(window, scene.skill)
    if scene.posture is not None:
        _choose(window, scene.posture)
    if scene.view == "environment":
        window.view.tabs().setCurrentWidget(window.view.environment)
    if scene.command is not None:
        window.run_panel.command.setText(scene.command)
        window.run_panel.command.setCursorPosition(0)
        window.compare.command.setText(scene.command)
    if scene.memory_mib is not None:
        window.run_panel.limits.memory.setValue(scene.memory_mib)
    if scene.allow_hosts:
        window.run_panel.limits.allow_hosts.setText(" ".join(scene.allow_hosts))
    if scene.run:
        await _RUNS[scene.view](window, scene)
    window.pages.setCurrentIndex(PAGES.index(scene.view))
    if scene.tab is not None:
        _open_tab(window, scene.tab)
    await asyncio.sleep(0.3)  # let the output pane, the charts and the tables draw


def _select(window: MainWindow, skill: str) -> None:
    folder = Path(skill).expanduser()
    if folder.is_dir() and window.browser.select_path(folder.absolute()):
        return
    found = next((s for s in window.browser.skills() if skill in (s.name, s.path.name)), None)
    if found is None or not window.browser.select_path(found.path):
        raise UsageError(f"No skill named {skill!r} to open.")


async def _run_here(window: MainWindow, scene: Scene) -> None:
    """Run the skill's command on the Run page (then select its run on the History page)."""
    panel = window.run_panel
    task = panel.start()
    if task is None:
        raise UsageError(f"The {scene.skill} example cannot run here (no posture or command).")
    if scene.during_s is not None:
        await asyncio.wait([task], timeout=scene.during_s)
    else:
        await task
        await panel.changes.settle()
    if scene.tab == "environment":
        window.view.environment.refresh()  # after the run: what it ran with
        for _ in range(100):
            if window.view.environment.status() is not None:
                break
            await asyncio.sleep(0.1)
    if scene.view == "history" and panel.last_run is not None:
        await window.history.show_run(panel.last_run.record.run_id)


async def _run_compare(window: MainWindow, scene: Scene) -> None:
    """Compare the command under the postures ticked by default (and `--posture`)."""
    if scene.posture is not None:  # asked for on the command line: `local` needs no question
        window.compare.postures.boxes[scene.posture].setChecked(True)
    task = window.compare.start()
    if task is None:
        raise UsageError(f"The {scene.skill} example cannot be compared here.")
    await task
    window.compare.table.setCurrentCell(0, 0)  # its run's record shows below the table


async def _run_lab(window: MainWindow, scene: Scene) -> None:
    """Run the probe lab under the postures ticked by default."""
    del scene
    task = window.lab.start()
    if task is None:
        raise UsageError("No posture can run the probe lab here.")
    await task
    window.lab.table.setCurrentCell(0, 0)  # its run's record shows below the table


def _open_tab(window: MainWindow, tab: str) -> None:
    if tab in RUN_TABS:
        window.run_panel.tabs.setCurrentIndex(RUN_TABS[tab])
        return
    tabs: QTabWidget = window.view.tabs()
    index = next(i for i in range(tabs.count()) if tabs.tabText(i).startswith(SKILL_TABS[tab]))
    tabs.setCurrentIndex(index)


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


PAGES = ("run", "history", "compare", "lab")  # in the order of the window's tabs
_RUNS: dict[str, Callable[[MainWindow, Scene], Awaitable[None]]] = {
    "run": _run_here,
    "history": _run_here,
    "compare": _run_compare,
    "lab": _run_lab,
}
