"""Fixtures for the GUI tests: offscreen Qt, one qasync loop, fake posture probe, a window.

The window gets the real catalog (bundled examples plus a temporary root the test fills) and
a posture probe that answers at once: local, hardened and quickjs available, no Docker engine.
A test fails when a background task of the window failed unexpectedly (`task_errors`). The
helpers at the end find what a test reads (tree items, table cells and headers, the modal
dialog, a menu); a lookup that finds nothing fails the test there.
"""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import asyncio
import gc
import logging
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import qasync
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import (
    QApplication,
    QMainWindow,
    QMenu,
    QTableWidget,
    QTableWidgetItem,
    QTreeWidget,
    QTreeWidgetItem,
    QWidget,
)

from tests.waiting import until
from workbench.executors import build_executor
from workbench.platform.paths import example_skills_dir
from workbench.postures.model import Availability, PostureId
from workbench.runs.history import RunHistory
from workbench.runs.layout import DataLayout
from workbench.runs.service import RunService
from workbench.skills import discover, load_skill
from workbench.ui.common import tasks
from workbench.ui.mainwindow import MainWindow
from workbench.ui.services import PostureProbe, Services

Run = Callable[[Awaitable[Any]], Any]
W = TypeVar("W", bound=QWidget)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Qt's offscreen platform warns that it cannot propagate size hints; that is not a bug."""
    for item in items:
        if Path(item.path).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.qt_log_ignore("does not support propagateSizeHints"))


class _Keep(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.ERROR)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(autouse=True)
def task_errors() -> Iterator[list[logging.LogRecord]]:
    """The unexpected errors the window's background tasks logged. The test fails on any it
    leaves in this list (a test that expects one takes it out), as it fails on an exception
    raised in a slot."""
    records: list[logging.LogRecord] = []
    keep = _Keep(records)
    logger = logging.getLogger(tasks.__name__)
    logger.addHandler(keep)
    yield records
    logger.removeHandler(keep)
    if records:
        pytest.fail("A background task failed:\n" + "\n".join(map(keep.format, records)))


class _TestLoop(qasync.QEventLoop):  # type: ignore[misc]  # qasync has no type hints
    """qasync's loop, which asyncio sees as running between the test's `run` calls too.

    qasync's `run_until_complete` turns the Qt events once more after it has cleared the running
    loop, and pytest-qt turns them after each phase of a test: a task step they dispatch would
    find no running loop (RuntimeError). In the app the loop runs for good.
    """

    def run_forever(self) -> None:
        try:
            super().run_forever()
        finally:
            asyncio.events._set_running_loop(self)


def pytest_runtest_logfinish() -> None:
    """Free each GUI test's garbage on the GUI thread, once pytest has let go of its fixtures.

    A closed loop lingers in a reference cycle, with the `QtBot` the test's request holds. If
    a garbage collection that happens to run in a worker thread (`asyncio.to_thread`) frees the
    loop, even in a later test of another folder, its timer QObject is deleted off its thread:
    Qt warns that it cannot stop that object's timers, and the next timer event can crash the
    process (segmentation fault in QTimerInfoList::activateTimers).
    """
    gc.collect()


@pytest.fixture
def loop(qapp: QApplication) -> Iterator[qasync.QEventLoop]:
    """A qasync loop on the test's QApplication, set as the current (and running) asyncio loop
    (`pytest_runtest_logfinish` frees it)."""
    event_loop = _TestLoop(qapp)
    asyncio.set_event_loop(event_loop)
    asyncio.events._set_running_loop(event_loop)
    yield event_loop
    asyncio.events._set_running_loop(None)
    asyncio.set_event_loop(None)
    event_loop.close()


@pytest.fixture
def run(loop: qasync.QEventLoop) -> Run:
    """Run a coroutine (or wait for a task) on the Qt loop until it finishes (10 s at most)."""

    def run_coroutine(awaitable: Awaitable[Any]) -> Any:
        return loop.run_until_complete(asyncio.wait_for(awaitable, 10))

    return run_coroutine


@pytest.fixture
def extra_root(tmp_path: Path) -> Path:
    """An extra catalog root for skills a test writes."""
    root = tmp_path / "extra-skills"
    root.mkdir()
    return root


@pytest.fixture
def write_skill() -> Callable[..., Path]:
    """`write_skill(root, folder, front_matter, body)` writes a SKILL.md; returns the folder."""

    def write(root: Path, folder: str, front_matter: str, body: str = "# Title\n") -> Path:
        path = root / folder
        path.mkdir(parents=True)
        (path / "SKILL.md").write_text(f"---\n{front_matter}\n---\n{body}", encoding="utf-8")
        return path

    return write


PROBE = PostureProbe(
    availability={
        PostureId.LOCAL: Availability(True, "Always available."),
        PostureId.HARDENED: Availability(True, "Available on this Linux machine."),
        PostureId.BUBBLEWRAP: Availability(False, "Unprivileged user namespaces are refused."),
        PostureId.DOCKER: Availability(False, "No engine."),
        PostureId.GVISOR: Availability(False, "No engine."),
        PostureId.QUICKJS: Availability(True, "The quickjs package is installed."),
    },
    docker_runtimes=None,
)


@pytest.fixture
def services(extra_root: Path, tmp_path: Path) -> Services:
    layout = DataLayout(tmp_path / "data")
    return Services(
        roots=(example_skills_dir(), extra_root),
        discover=discover,
        load_skill=load_skill,
        probe_postures=lambda: PROBE,
        runs=RunService(layout, RunHistory(layout.history_path), build_executor),
    )


@pytest.fixture
def settings(tmp_path_factory: pytest.TempPathFactory) -> QSettings:
    """The window's settings, in pytest's own temporary folder (never a test's `tmp_path`,
    which some tests make a folder of their own that they remove: the window saves its
    settings once more as it goes, and that would make the folder again)."""
    folder = tmp_path_factory.mktemp("settings")
    return QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def make_window(
    qtbot: Any, services: Services, settings: QSettings, run: Run
) -> Iterator[Callable[[], MainWindow]]:
    """Build (but do not load) a shown main window; each one's tasks end with the test, as
    they do when the app quits (a catalog reload the folder watcher started may still run)."""
    windows: list[MainWindow] = []

    def make() -> MainWindow:
        window = MainWindow(services, settings)
        window.resize(1400, 860)
        window.show()
        windows.append(window)
        return window

    yield make
    for window in windows:  # not handed to qtbot, which would delete it before this
        run(window.shutdown())
        window.close()
        window.deleteLater()


@pytest.fixture
def window(make_window: Callable[[], MainWindow], run: Run) -> MainWindow:
    """A shown main window with the catalog loaded and the postures probed."""
    main_window = make_window()
    run(main_window.load())
    return main_window


def items(parent: QTreeWidget | QTreeWidgetItem) -> list[QTreeWidgetItem]:
    """A tree's top-level items, or an item's children, in order."""
    if isinstance(parent, QTreeWidget):
        found = [parent.topLevelItem(i) for i in range(parent.topLevelItemCount())]
    else:
        found = [parent.child(i) for i in range(parent.childCount())]
    return [item for item in found if item is not None]


def cell(table: QTableWidget, row: int, column: int) -> QTableWidgetItem:
    """The item in a table's cell."""
    item = table.item(row, column)
    assert item is not None, f"no item at row {row}, column {column}"
    return item


def headers(table: QTableWidget) -> list[str]:
    """The titles of a table's columns."""
    found = (table.horizontalHeaderItem(i) for i in range(table.columnCount()))
    return [item.text() if item is not None else "" for item in found]


def modal(kind: type[W]) -> W:
    """The modal window on show, which must be a `kind`."""
    widget = QApplication.activeModalWidget()
    assert isinstance(widget, kind), widget
    return widget


def activate(window: QMainWindow, run: Run) -> None:
    """Make `window` the active window, so its shortcuts take keys; safe while tasks run (the
    wait turns the Qt events on the asyncio loop, where a task step finds its loop running)."""
    window.activateWindow()
    run(until(lambda: QApplication.activeWindow() is window))


def menu(window: QMainWindow, title: str) -> QMenu:
    """The menu bar's menu called `title` (with its `&`)."""
    found = next(action.menu() for action in window.menuBar().actions() if action.text() == title)
    assert isinstance(found, QMenu)
    return found
