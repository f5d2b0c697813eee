"""The main window: the catalog list, search, the skill view, hostile text, folders, layout."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QMimeData, QPointF, QSettings, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QMenuBar, QScrollBar, QTabBar, QWidget

from tests.ui.conftest import Run, activate, items
from tests.waiting import until
from workbench.platform.paths import example_skills_dir
from workbench.skills import discover
from workbench.ui.common.text import diagnostic_counts
from workbench.ui.mainwindow import MainWindow
from workbench.ui.services import Services

WriteSkill = Callable[..., Path]


def test_lists_every_bundled_example(window: MainWindow) -> None:
    bundled = {skill.path for skill in discover([example_skills_dir()])}
    assert bundled, "the bundled example skills are missing"
    assert bundled <= {skill.path for skill in window.browser.skills()}
    assert window.browser.current_skill() is not None


def test_search_filters_by_name_and_description(window: MainWindow) -> None:
    everything = window.browser.visible_skills()
    window.browser.set_search_text("CSV")
    shown = window.browser.visible_skills()
    assert shown and len(shown) < len(everything)
    assert all("csv" in f"{s.name} {s.description}".lower() for s in shown)
    window.browser.set_search_text("no skill is called this")
    assert window.browser.visible_skills() == []
    window.browser.set_search_text("")
    assert window.browser.visible_skills() == everything


def test_ctrl_f_focuses_the_search_field(window: MainWindow, run: Run, qtbot: Any) -> None:
    activate(window, run)
    window.view.tabs().setFocus()
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.focusWidget() is window.browser._search


def test_selecting_a_skill_shows_body_front_matter_diagnostics_and_files(
    window: MainWindow,
) -> None:
    skill = next(s for s in window.browser.skills() if s.name == "workspace-report")
    assert window.browser.select_path(skill.path)
    view = window.view
    assert view.skill() is skill
    assert "Workspace report" in view.body_view().toPlainText()
    assert "```" not in view.body_view().toPlainText()  # rendered, not raw Markdown
    assert view.diagnostics_view().topLevelItemCount() >= 1
    files = view.files_view()
    names = [item.text(0) for item in items(files.tree())]
    assert "SKILL.md" in names and "scripts" in names
    assert files.select_relative(Path("SKILL.md"))
    assert files.preview_text().startswith("---\nname: workspace-report")
    assert "500" in view._budget.text() and "5,000" in view._budget.text()
    assert window.windowTitle().startswith("workspace-report")


def test_a_skill_with_errors_opens_on_its_diagnostics(
    window: MainWindow, extra_root: Path, run: Run, write_skill: WriteSkill
) -> None:
    folder = write_skill(extra_root, "broken", "name: broken\ndescription: [unclosed")
    run(window.reload_catalog())
    assert window.browser.select_path(folder)
    view = window.view
    assert view.tabs().currentIndex() == view.tabs().indexOf(view._diagnostics_page)
    first = items(view.diagnostics_view())[0]
    assert first.text(0).startswith("SKILL.md:")
    assert first.text(2) == "yaml-syntax"
    assert (
        view.tabs().tabText(view.tabs().indexOf(view._diagnostics_page)).startswith("Diagnostics (")
    )
    assert "with errors" in window.status_line.count_label.text()


def test_a_spec_violation_is_an_error_on_the_badge_and_in_the_list(
    window: MainWindow, extra_root: Path, run: Run, write_skill: WriteSkill
) -> None:
    folder = write_skill(extra_root, "wordy", f"name: wordy\ndescription: {'x' * 1068}")
    run(window.reload_catalog())
    assert window.browser.select_path(folder)
    badge = window.view._badge
    assert (badge.text(), badge.property("status")) == ("1 error", "danger")
    skill = window.browser.current_skill()
    assert skill is not None and diagnostic_counts(skill) == (1, 0)  # the list's red count
    first = items(window.view.diagnostics_view())[0]
    assert first.text(2) == "description-too-long"
    assert ": error: " in first.data(0, Qt.ItemDataRole.AccessibleTextRole)


def test_hostile_text_is_shown_literally(
    window: MainWindow, extra_root: Path, run: Run, write_skill: WriteSkill
) -> None:
    hostile = "<b>bold</b><img src=x>"
    folder = write_skill(
        extra_root,
        "hostile",
        f'name: hostile\ndescription: "{hostile}"',
        "# Hi\n\n<b>html</b> <script>alert(1)</script>\n\n![pic](/etc/hostname)\n",
    )
    run(window.reload_catalog())
    assert window.browser.select_path(folder)
    description = window.view._description
    assert description.textFormat() == Qt.TextFormat.PlainText
    assert description.text() == hostile
    body = window.view.body_view()
    assert "<b>html</b>" in body.toPlainText()
    assert "<script>alert(1)</script>" in body.toPlainText()
    assert body.loadResource(0, QUrl("/etc/hostname")) is None
    skill = window.browser.current_skill()
    assert skill is not None and skill.description == hostile


def test_open_folder_adds_the_skill_and_remembers_it(
    window: MainWindow, tmp_path: Path, run: Run, write_skill: WriteSkill
) -> None:
    folder = write_skill(tmp_path / "elsewhere", "added", "name: added\ndescription: Added.")
    run(window.open_folders([folder]))
    current = window.browser.current_skill()
    assert current is not None and current.path == folder
    recent = [action.data() for action in window.recent.menu.actions()]
    assert str(folder) in recent


def test_dropping_a_skill_folder_adds_it(
    window: MainWindow, tmp_path: Path, run: Run, write_skill: WriteSkill
) -> None:
    folder = write_skill(tmp_path / "dropped", "dropped", "name: dropped\ndescription: Dropped.")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(folder))])
    position = QPointF(window.width() / 2, window.height() / 2)
    action = Qt.DropAction.CopyAction
    button, modifier = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    enter = QDragEnterEvent(position.toPoint(), action, mime, button, modifier)
    window.dragEnterEvent(enter)
    assert enter.isAccepted()
    window.dropEvent(QDropEvent(position, action, mime, button, modifier))

    run(until(lambda: folder in {skill.path for skill in window.browser.skills()}))
    current = window.browser.current_skill()
    assert current is not None and current.name == "dropped"


def test_every_focusable_widget_has_an_accessible_name(window: MainWindow) -> None:
    unnamed = [
        f"{type(widget).__name__} {widget.objectName()!r}"
        for widget in window.findChildren(QWidget)
        if widget.isVisible()
        and widget.focusPolicy() != Qt.FocusPolicy.NoFocus
        and not widget.accessibleName()
        and not (hasattr(widget, "text") and callable(widget.text) and widget.text())
        and not isinstance(widget, QTabBar | QScrollBar | QMenuBar)
    ]
    assert unnamed == []


def test_a_folder_without_skills_shows_an_error(
    window: MainWindow, tmp_path: Path, run: Run
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    run(window.open_folders([empty]))
    assert window.message_bar.isVisible()
    assert "No skill found" in window.message_bar.text()


def test_window_layout_is_saved_and_restored(
    window: MainWindow, services: Services, settings: QSettings, qtbot
) -> None:
    window.resize(760, 600)
    window.close()
    again = MainWindow(services, settings)
    qtbot.addWidget(again)
    again.restore_state()
    assert (again.width(), again.height()) == (760, 600)
