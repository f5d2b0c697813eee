"""The window fits small screens and long names; the skill view reads well at its default size:
an elided header, a first launch cut to the screen, room for SKILL.md and its editor, broken
front matter explained where the fields would be; what a run updates while it goes never lays
the window out again."""

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, QSettings

from tests.ui.conftest import Run, items
from tests.waiting import until
from workbench.executors.types import OutputChunk, Stream
from workbench.monitor.sample import ResourceSample
from workbench.platform.paths import example_skills_dir
from workbench.postures.model import MIB
from workbench.ui.mainwindow import FIRST_SIZE, MainWindow
from workbench.ui.services import Services

WriteSkill = Callable[..., Path]
LONG_NAME = "a-very-long-skill-name-that-goes-on-and-on-" + "and-on-" * 6 + "past-any-width"


def test_a_long_name_is_elided_in_the_header_and_never_widens_the_window(
    window: MainWindow, extra_root: Path, run: Run, write_skill: WriteSkill
) -> None:
    folder = write_skill(extra_root, LONG_NAME, f"name: {LONG_NAME}\ndescription: Long.")
    run(window.reload_catalog())
    window.resize(1000, 700)
    assert window.browser.select_path(folder)
    run(_settle())
    name = window.view._name
    assert name.full_text() == LONG_NAME
    assert name.text().endswith("…") and name.text() != LONG_NAME
    assert LONG_NAME in name.toolTip()
    assert name.width() <= window.view.width()
    path = window.view._path
    assert "…" in path.text() and str(folder) in path.toolTip()
    # the skill view is no longer what sets the window's minimum width
    assert window.view.minimumSizeHint().width() < window.run_panel.minimumSizeHint().width()
    assert window.view.minimumSizeHint().width() < 400
    assert window.minimumSizeHint().width() <= 1024  # a 1024-px screen holds the window
    run(window.shutdown())  # ends a reload a watched folder's change may have started


def test_the_first_launch_fits_the_screen(
    services: Services, settings: QSettings, qtbot: Any
) -> None:
    window = MainWindow(services, settings)
    qtbot.addWidget(window)
    window.restore_state()  # nothing saved yet
    free = window.screen().availableGeometry().size()
    assert free.width() < FIRST_SIZE.width()  # the offscreen screen is smaller than the default
    assert window.size() == FIRST_SIZE.boundedTo(free)


def test_skill_md_and_its_editor_get_room_at_1280_by_800(window: MainWindow, run: Run) -> None:
    window.resize(1280, 800)
    assert window.browser.select_path(example_skills_dir() / "workspace-report")
    run(_settle())
    body = window.view.body_view()
    assert body.viewport().height() >= 10 * body.fontMetrics().lineSpacing()
    window.view.tabs().setCurrentWidget(window.editor)
    run(_settle())
    text = window.editor.text
    assert text.viewport().height() >= 8 * text.fontMetrics().lineSpacing()
    run(window.shutdown())  # ends a reload a watched folder's change may have started


def test_broken_front_matter_is_explained_in_its_tab(
    window: MainWindow, extra_root: Path, run: Run, write_skill: WriteSkill
) -> None:
    folder = write_skill(extra_root, "brokenyaml", "name: brokenyaml\ndescription: [unclosed")
    run(window.reload_catalog())
    assert window.browser.select_path(folder)
    view = window.view
    view.tabs().setCurrentWidget(view._front_page)
    message = view._front_message
    assert message.isVisible() and not view._front.isVisible()
    assert message.text().startswith("Line 3: The front matter is not valid YAML:")
    assert message.property("status") == "danger"

    view.tabs().setCurrentWidget(view._diagnostics_page)
    assert view.diagnostics_view().wordWrap()  # the message wraps instead of being cut
    first = items(view.diagnostics_view())[0]
    assert "not valid YAML" in first.toolTip(1)

    assert window.browser.select_path(example_skills_dir() / "workspace-report")
    view.tabs().setCurrentWidget(view._front_page)
    assert view._front.isVisible() and not message.isVisible()
    assert items(view._front)[0].text(0) == "name"
    run(window.shutdown())  # ends a reload a watched folder's change may have started


class _LayoutRequests(QObject):
    """Counts the times the watched widget is asked to lay itself out again."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        self.count += event.type() == QEvent.Type.LayoutRequest
        return False


def test_repeated_live_numbers_and_the_colour_badge_leave_the_window_layout_alone(
    window: MainWindow, run: Run
) -> None:
    window.resize(1280, 800)
    assert window.browser.select_path(example_skills_dir() / "workspace-report")
    panel, charts = window.run_panel, window.run_panel.charts
    charts.reset(memory_limit=512 * MIB)
    run(_settle())
    narrowest = panel.minimumSizeHint().width()
    live = (charts.cpu_label, charts.memory_label, charts.processes_label, panel.countdown)

    def tick(n: int) -> None:  # what a run's samples and its countdown timer change
        sample = ResourceSample(t=n / 10, cpu_percent=n * 9.0, rss_bytes=n * 7 * MIB, processes=n)
        charts.add_sample(sample)
        panel._started, panel._timeout = time.monotonic() - n / 10, 60.0 - n
        panel.on_countdown_timer_timeout()
        run(_settle())
        for label in live:  # never cut short
            assert label.width() >= label.fontMetrics().horizontalAdvance(label.text())

    for n in range(1, 20):  # a label may widen, once to each wider text
        tick(n)
    sizes = window._splitter.sizes()
    requests = _LayoutRequests()
    window.installEventFilter(requests)
    for n in range(1, 20):  # the same texts again: none is wider
        tick(n)
    assert requests.count == 0
    window.removeEventFilter(requests)
    panel.countdown.restart("")  # as a run ends
    charts.reset(memory_limit=512 * MIB)  # as the next one starts
    run(_settle())
    assert panel.minimumSizeHint().width() == narrowest  # wider texts are forgotten
    panel.output.begin()
    panel.output.append(OutputChunk(Stream.STDOUT, b"x" * 1_000_000 + b"\n", 0.0))
    run(until(lambda: panel.output.colour_paused))
    run(_settle())
    badge = panel.output.badge
    sentence = badge.fontMetrics().horizontalAdvance(badge.full_text())
    assert badge.isVisible() and panel.output.minimumSizeHint().width() < sentence  # elided
    assert window._splitter.sizes() == sizes
    run(window.shutdown())


async def _settle() -> None:
    """Let the layouts apply the new sizes."""
    await asyncio.sleep(0.05)
