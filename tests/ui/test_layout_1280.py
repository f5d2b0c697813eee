"""Every main view at 1280x800 shows its key widgets whole: the chosen posture card, the command
and Run, the banner and the output on the Run page (for a JavaScript skill, a 1,068-character
description and each posture chosen in turn too), the list, record, filters and Keep setting
on History, the table, command and record on Compare and Lab. A widget cut by the window's
edge, scrolled out of its column or squeezed to nothing fails the test."""

import asyncio
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QRect, QSettings, QSize
from PySide6.QtWidgets import QWidget

from tests.ui.conftest import Run
from workbench.platform.paths import example_skills_dir
from workbench.postures.model import Availability, PostureId
from workbench.ui.mainwindow import MainWindow
from workbench.ui.services import PostureProbe, Services

WriteSkill = Callable[..., Path]
SIZE = QSize(1280, 800)
MIN_OUTPUT_LINES = 10


def whole(widget: QWidget, window: MainWindow) -> bool:
    """Whether `widget` is shown and every pixel of it is inside the window and not clipped
    by a scroll area or a parent."""
    if not widget.isVisible() or widget.width() <= 1 or widget.height() <= 1:
        return False
    where = QRect(widget.mapTo(window, widget.rect().topLeft()), widget.size())
    return window.rect().contains(where) and widget.visibleRegion().boundingRect() == widget.rect()


def cut(window: MainWindow, widgets: dict[str, QWidget]) -> list[str]:
    return [name for name, widget in widgets.items() if not whole(widget, window)]


def _settle(run: Run, window: MainWindow) -> None:
    run(asyncio.sleep(0.1))  # the layouts, then the picker scrolling its chosen card into view
    assert window.size() == SIZE


def _run_page(window: MainWindow) -> dict[str, QWidget]:
    chosen = window.postures.chosen()
    assert chosen is not None
    card = window.postures.card(chosen)
    panel = window.run_panel
    return {
        "chosen card's title": card.radio,
        "chosen card's availability": card.availability,
        "command": panel.command,
        "Run": panel.run_button,
        "Stop": panel.stop_button,
        "banner": panel.banner,
        "output": panel.output.text,
        "skill name": window.view._name,
        "SKILL.md": window.view.body_view(),
    }


def test_the_run_page_holds_at_1280_by_800_for_a_js_skill(window: MainWindow, run: Run) -> None:
    window.resize(SIZE)
    assert window.browser.select_path(example_skills_dir() / "csv-to-markdown")
    _settle(run, window)
    assert window.postures.chosen() is PostureId.QUICKJS  # the card the issue found off-screen
    assert cut(window, _run_page(window)) == []
    output = window.run_panel.output.text
    assert output.viewport().height() >= MIN_OUTPUT_LINES * output.fontMetrics().lineSpacing()
    assert not window.view.body_view().horizontalScrollBar().isVisible()  # no stray scroll bar


def test_a_long_description_leaves_the_run_page_whole(
    window: MainWindow, run: Run, extra_root: Path, write_skill: WriteSkill
) -> None:
    long = "Does a great many things. " * 41  # 1,066 characters and more
    folder = write_skill(extra_root, "wordy", f"name: wordy\ndescription: {long}")
    run(window.reload_catalog())
    window.resize(SIZE)
    assert window.browser.select_path(folder)
    _settle(run, window)
    assert cut(window, _run_page(window)) == []
    description = window.view._description
    assert description.is_elided() and window.view.more_button.isVisible()
    window.view.more_button.click()
    _settle(run, window)
    assert description.text() == " ".join(long.split())  # the whole text, on demand
    run(window.reload_catalog())  # as the folder watcher does: the skill is read again
    assert window.view.more_button.isChecked() and not description.is_elided()


def test_every_posture_chosen_in_turn_keeps_its_card_in_view(
    services: Services, settings: QSettings, qtbot: Any, run: Run
) -> None:
    every = {
        p: Availability(True, "Available here, with a reason long enough to wrap.")
        for p in PostureId
    }
    probe = PostureProbe(availability=every, docker_runtimes=frozenset({"runc", "runsc"}))
    window = MainWindow(replace(services, probe_postures=lambda: probe), settings)
    qtbot.addWidget(window)
    window.resize(SIZE)
    window.show()
    run(window.load())
    assert window.browser.select_path(example_skills_dir() / "workspace-report")
    for posture_id in PostureId:
        window.postures.choose(posture_id)
        box = window.postures.confirmation_box()
        if box is not None:  # local asks first
            box.accept()
            window.postures.on_confirm_finished(0)
            window.postures.choose(posture_id)
            continue
        _settle(run, window)
        assert window.postures.chosen() is posture_id
        assert cut(window, _run_page(window)) == [], posture_id
    run(window.shutdown())


def test_history_compare_and_lab_hold_at_1280_by_800(window: MainWindow, run: Run) -> None:
    window.resize(SIZE)
    pages = {
        window.history: {
            "runs": window.history.runs,
            "record": window.history.details,
            "filters": window.history.filters,
            "Keep": window.history.keep,
            "Re-run": window.history.rerun_button,
            "Restore": window.history.restore_button,
        },
        window.compare: {
            "command": window.compare.command,
            "Compare": window.compare.run_button,
            "table": window.compare.table,
            "record": window.compare.record,
        },
        window.lab: {
            "Run the lab": window.lab.run_button,
            "table": window.lab.table,
            "record": window.lab.record,
        },
    }
    for page, widgets in pages.items():
        window.pages.setCurrentWidget(page)
        _settle(run, window)
        assert cut(window, widgets) == [], page
    assert window.minimumSizeHint().width() <= SIZE.width()
    assert window.minimumSizeHint().height() <= SIZE.height()
