"""The authoring loop in the window: create a skill, break it in the editor and see the
diagnostic on its line, fix it, save, run it (hardened), package it and re-import it
identically; unsaved edits survive a skill switch; an external edit refreshes the views.

The temporary folder is world-traversable: the hardened posture runs the command as a
throwaway uid, which cannot enter pytest's 0700 tmp_path.
"""

import stat
import zipfile
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication, QMessageBox

from tests.ui.conftest import Run, items, modal
from tests.waiting import until
from workbench.postures.model import PostureId
from workbench.skills import Code, Skill
from workbench.ui.authoring.newskill import NewSkillDialog
from workbench.ui.mainwindow import MainWindow


@pytest.fixture
def tmp_path(traversable_tmp_path: Path) -> Path:
    """A world-traversable temporary folder (skills, workspaces and packages go inside)."""
    return traversable_tmp_path


def _tree(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(path.relative_to(folder)): (
            stat.S_IMODE(path.stat().st_mode),
            path.read_bytes() if path.is_file() else b"",
        )
        for path in sorted(folder.rglob("*"))
    }


def _edit_line(window: MainWindow, line: int, text: str) -> None:
    block = window.editor.text.document().findBlockByNumber(line - 1)
    cursor = window.editor.text.textCursor()
    cursor.setPosition(block.position())
    cursor.setPosition(block.position() + block.length() - 1, cursor.MoveMode.KeepAnchor)
    cursor.insertText(text)


def _selected(window: MainWindow) -> Skill:
    skill = window.browser.current_skill()
    assert skill is not None
    return skill


def _editing(window: MainWindow) -> Skill:
    skill = window.editor.skill()
    assert skill is not None
    return skill


async def _save(window: MainWindow) -> None:
    window.authoring.save_action.trigger()
    await until(lambda: "writes hello.txt" in _selected(window).description)


async def _run_skill(window: MainWindow) -> None:
    panel = window.run_panel
    panel.set_posture(PostureId.HARDENED)
    task = panel.start()
    assert task is not None
    await task
    await panel.changes.settle()
    await until(panel.output.is_idle)  # the pane draws the last output on its next ticks


def test_create_break_fix_save_run_package_and_reimport(
    window: MainWindow, run: Run, extra_root: Path, tmp_path: Path, qtbot
) -> None:
    folder = run(
        window.authoring.create(extra_root, "hello-skill", "Says hello.", frozenset({"scripts"}))
    )
    run(window.tasks.settle())  # the window lists and opens it
    assert _selected(window).path == folder
    assert window.view.tabs().currentWidget() is window.editor
    editor = window.editor
    assert editor.text.document().findBlockByNumber(1).text() == "name: hello-skill"
    assert editor.diagnostics() == ()

    _edit_line(window, 2, "name: Hello-Skill")
    run(until(lambda: any(d.code is Code.NAME_CASE for d in editor.diagnostics())))
    assert {d.line for d in editor.diagnostics()} == {2}
    assert "capital letters" in " ".join(editor.text.line_messages(2))
    assert window.editor.is_modified()

    _edit_line(window, 2, "name: hello-skill")
    run(until(lambda: editor.diagnostics() == ()))
    _edit_line(window, 3, "description: Says hello, and writes hello.txt.")
    run(_save(window))
    assert not editor.is_modified()
    assert "writes hello.txt" in (folder / "SKILL.md").read_text(encoding="utf-8")

    run(_run_skill(window))
    panel = window.run_panel
    assert panel.banner.sentence.text() == "Finished: exited with code 0", (
        panel.output.text.toPlainText()
    )
    assert "Wrote hello.txt" in panel.output.text.toPlainText()

    package = run(window.authoring.export(folder, tmp_path / "hello.skill"))
    elsewhere = tmp_path / "imported"
    imported = run(window.authoring.import_package(package, elsewhere))
    run(window.tasks.settle())
    assert imported == elsewhere / "hello-skill"
    assert _tree(imported) == _tree(folder)
    assert _selected(window).path == imported


def test_switching_skill_with_unsaved_edits_asks_and_can_stay(
    window: MainWindow, run: Run, extra_root: Path, write_skill, qtbot
) -> None:
    first = write_skill(extra_root, "first", "name: first\ndescription: First.")
    second = write_skill(extra_root, "second", "name: second\ndescription: Second.")
    run(window.reload_catalog())
    assert window.browser.select_path(first)
    _edit_line(window, 3, "description: Edited.")
    window.browser.select_path(second)
    qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox))
    modal(QMessageBox).button(QMessageBox.StandardButton.Cancel).click()
    qtbot.waitUntil(lambda: _selected(window).path == first)
    assert _editing(window).path == first
    assert window.editor.text.document().findBlockByNumber(2).text() == "description: Edited."

    window.browser.select_path(second)
    qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox))
    modal(QMessageBox).button(QMessageBox.StandardButton.Save).click()
    qtbot.waitUntil(lambda: _editing(window).path == second)
    assert "description: Edited." in (first / "SKILL.md").read_text(encoding="utf-8")


def test_an_external_edit_refreshes_the_browser_and_the_editor(
    window: MainWindow, run: Run, extra_root: Path, write_skill, qtbot
) -> None:
    folder = write_skill(extra_root, "outside", "name: outside\ndescription: Before.")
    run(window.reload_catalog())
    assert window.browser.select_path(folder)
    (folder / "SKILL.md").write_text("---\nname: Outside\ndescription: After.\n---\n")

    run(until(lambda: "After." in window.editor.text.toPlainText()))
    run(until(lambda: not _selected(window).valid))
    assert _selected(window).description == "After."
    assert any(d.code is Code.NAME_CASE for d in window.editor.diagnostics())


def test_the_capability_preview_is_labelled_a_prediction_and_names_what_is_blocked(
    window: MainWindow, run: Run, extra_root: Path, write_skill
) -> None:
    folder = write_skill(extra_root, "fetcher", "name: fetcher\ndescription: Fetches.")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "fetch.py").write_text(
        'import urllib.request\nurllib.request.urlopen("https://example.com/<b>x</b>")\n'
    )
    run(window.reload_catalog())
    assert window.browser.select_path(folder)
    tree = window.view._capabilities
    assert tree.topLevelItemCount() == 0  # read only when its tab is shown
    window.view.tabs().setCurrentWidget(window.view._capabilities_page)
    assert window.view._prediction.text().startswith("PREDICTION, NOT A SECURITY CONTROL")
    rows = {group.text(0): [line.text(0) for line in items(group)] for group in items(tree)}
    docker = next(children for title, children in rows.items() if title.startswith("Docker c"))
    assert any(line.startswith("blocked:") and "network" in line for line in docker)
    found = next(children for title, children in rows.items() if title.startswith("What the"))
    assert any("scripts/fetch.py:2" in line for line in found)
    other = next(s for s in window.browser.skills() if s.name == "workspace-report")
    assert window.browser.select_path(other.path)  # the tab stays; the preview follows the skill
    texts = [line.text(0) for group in items(tree) for line in items(group)]
    assert texts and not any("fetch.py" in text for text in texts)


def test_closing_with_unsaved_edits_asks_and_cancel_keeps_the_window(
    window: MainWindow, run: Run, extra_root: Path, write_skill, qtbot
) -> None:
    folder = write_skill(extra_root, "kept", "name: kept\ndescription: Kept.")
    run(window.reload_catalog())
    assert window.browser.select_path(folder)
    _edit_line(window, 3, "description: Not yet saved.")
    window.close()
    qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox))
    modal(QMessageBox).button(QMessageBox.StandardButton.Cancel).click()
    assert window.isVisible() and window.editor.is_modified()
    window.close()
    qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox))
    modal(QMessageBox).button(QMessageBox.StandardButton.Discard).click()
    qtbot.waitUntil(lambda: not window.isVisible())
    assert "Not yet saved" not in (folder / "SKILL.md").read_text(encoding="utf-8")


def test_a_hostile_package_is_refused_in_the_message_bar_and_writes_nothing(
    window: MainWindow, run: Run, extra_root: Path, tmp_path: Path
) -> None:
    package = tmp_path / "evil.skill"
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("evil/SKILL.md", "---\nname: evil\ndescription: E.\n---\n")
        archive.writestr("evil/../../escaped.txt", "gotcha")
    before = sorted(extra_root.rglob("*"))

    async def attempt() -> None:
        window.authoring.tasks.spawn(window.authoring.import_package(package, extra_root))
        await until(window.message_bar.isVisible)

    run(attempt())
    assert "evil/../../escaped.txt" in window.message_bar.text()
    assert sorted(extra_root.rglob("*")) == before
    assert not (tmp_path / "escaped.txt").exists()


def test_file_new_skill_creates_lists_and_opens_it_in_the_editor(
    window: MainWindow, run: Run, extra_root: Path, qtbot
) -> None:
    window.authoring.new_action.trigger()
    qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), NewSkillDialog))
    dialog = modal(NewSkillDialog)
    dialog.add_root(extra_root)
    dialog.name.setText("from-the-menu")
    dialog.description.setText("Made with File > New Skill.")

    async def create() -> None:
        dialog.create_button.click()
        await until(
            lambda: (skill := window.editor.skill()) is not None and skill.name == "from-the-menu"
        )

    run(create())
    assert (extra_root / "from-the-menu" / "scripts" / "run.py").is_file()
    assert window.view.tabs().currentWidget() is window.editor
    edit_tab = window.view.tabs().indexOf(window.editor)
    _edit_line(window, 3, "description: Changed.")
    assert window.view.tabs().tabText(edit_tab) == "Edit •"
    assert window.editor.save()
    assert window.view.tabs().tabText(edit_tab) == "Edit"
