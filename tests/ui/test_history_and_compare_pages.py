"""The main window's pages (run, history, compare): names for assistive tools, saved state."""

import asyncio

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAccessible, QKeySequence
from PySide6.QtWidgets import QAbstractSpinBox, QLabel, QSplitter, QTabWidget, QWidget

from tests.ui.conftest import Run, menu
from workbench.platform.paths import example_skills_dir
from workbench.postures.model import PostureId
from workbench.ui.mainwindow import MainWindow
from workbench.ui.services import Services


def _accessible_name(widget: QWidget) -> str:
    interface = QAccessible.queryAccessibleInterface(widget)
    return interface.text(QAccessible.Text.Name) if interface is not None else ""


def _unnamed(window: MainWindow, where: str) -> set[str]:
    return {
        f"{where}: {type(widget).__name__} {widget.objectName()!r}"
        for widget in window.findChildren(QWidget)
        if widget.isVisible()
        and widget.focusPolicy() != Qt.FocusPolicy.NoFocus
        and not _accessible_name(widget).strip()
        and not isinstance(widget.parent(), QAbstractSpinBox)
    }


def test_every_focusable_widget_on_every_page_and_tab_has_an_accessible_name(
    window: MainWindow, run: Run
) -> None:
    """Walked after a run, so the run's output, changes and card tabs have content.

    A spin box's own line edit is part of the spin box, which assistive tools name.
    """
    window.run_panel.set_posture(PostureId.LOCAL)  # hardened's uid cannot enter tmp_path
    window.run_panel.command.setText("echo hello > made.txt")
    task = window.run_panel.start()
    assert task is not None
    run(task)
    unnamed: set[str] = set()
    for index in range(window.pages.count()):
        window.pages.setCurrentIndex(index)
        run(asyncio.sleep(0.05))  # the history page reads the history when shown
        page = window.pages.tabText(index)
        unnamed |= _unnamed(window, page)
        for tabs in window.pages.currentWidget().findChildren(QTabWidget):
            for tab in range(tabs.count() if tabs.isVisible() else 0):
                tabs.setCurrentIndex(tab)
                run(asyncio.sleep(0.02))
                unnamed |= _unnamed(window, f"{page} / {tabs.tabText(tab)}")
    assert sorted(unnamed) == []


def test_view_menu_shortcuts_switch_pages(window: MainWindow) -> None:
    view_menu = menu(window, "&View")
    shortcuts = {a.text(): a.shortcut() for a in view_menu.actions()}
    assert shortcuts == {
        "Run": QKeySequence("Ctrl+1"),
        "History": QKeySequence("Ctrl+2"),
        "Compare": QKeySequence("Ctrl+3"),
        "Lab": QKeySequence("Ctrl+4"),
    }
    next(a for a in view_menu.actions() if a.text() == "Compare").trigger()
    assert window.pages.currentWidget() is window.compare


def test_geometry_splitters_and_page_survive_a_restart(
    window: MainWindow, services: Services, settings: QSettings, qtbot, run: Run
) -> None:
    window.resize(780, 600)  # within the offscreen screen (800 x 600)
    splitter = window.findChild(QSplitter, "mainSplitter")
    assert isinstance(splitter, QSplitter)
    splitter.setSizes([150, 460, 150])
    run(asyncio.sleep(0.05))  # let the layout apply the panes' minimum widths
    sizes = splitter.sizes()
    window.pages.setCurrentWidget(window.compare)
    window.close()

    again = MainWindow(services, settings)
    qtbot.addWidget(again)
    again.restore_state()
    again.show()
    run(again.load())
    assert (again.width(), again.height()) == (780, 600)
    assert again.pages.currentWidget() is again.compare
    again.pages.setCurrentIndex(0)  # a hidden splitter has no sizes yet
    restored = again.findChild(QSplitter, "mainSplitter")
    assert isinstance(restored, QSplitter) and restored.sizes() == sizes


def test_status_bar_shows_the_engine_and_the_default_posture(window: MainWindow) -> None:
    window.browser.select_path(example_skills_dir() / "workspace-report")  # not a .js skill
    texts = [label.text() for label in window.statusBar().findChildren(QLabel)]
    assert "Posture: Hardened local" in texts  # the strongest available, chosen by default
    assert "Docker engine: not reachable" in texts  # the test probe has no engine
