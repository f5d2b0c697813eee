"""The SKILL.md editor: inline diagnostics as you type, preview, atomic saves that keep the mode,
and a file changed on disk is never overwritten silently."""

import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from PySide6.QtGui import QTextCharFormat
from PySide6.QtWidgets import QApplication, QMessageBox

from workbench.skills import Code, load_skill
from workbench.ui.authoring.editor import SkillEditor

WriteSkill = Callable[..., Path]
GOOD = "---\nname: demo\ndescription: A demo skill.\n---\n# Demo\n\nSay <b>hello</b>.\n"


@pytest.fixture
def folder(tmp_path: Path, write_skill: WriteSkill) -> Path:
    return write_skill(tmp_path, "demo", "name: demo\ndescription: A demo skill.", "# Demo\n")


@pytest.fixture
def editor(qtbot, folder: Path) -> SkillEditor:
    widget = SkillEditor()
    qtbot.addWidget(widget)
    widget.resize(900, 500)
    widget.show()
    widget.show_skill(load_skill(folder))
    return widget


def _replace_all(editor: SkillEditor, text: str) -> None:
    """Replace the buffer as typing would (an undoable edit that marks it modified)."""
    cursor = editor.text.textCursor()
    cursor.select(cursor.SelectionType.Document)
    cursor.insertText(text)


def _message_box(qtbot) -> QMessageBox:
    qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox))
    box = QApplication.activeModalWidget()
    assert isinstance(box, QMessageBox)
    return box


def test_an_uppercase_name_is_marked_on_its_line_and_the_file_is_untouched(
    editor: SkillEditor, folder: Path
) -> None:
    before = (folder / "SKILL.md").read_bytes()
    assert editor.diagnostics() == ()
    _replace_all(editor, GOOD.replace("name: demo", "name: Demo"))
    editor.validate_now()
    codes = {(d.code, d.line) for d in editor.diagnostics()}
    assert (Code.NAME_CASE, 2) in codes
    assert editor.text.line_messages(2) and not editor.text.line_messages(3)
    underlined = [
        s
        for s in editor.text.extraSelections()
        if s.format.underlineStyle() == QTextCharFormat.UnderlineStyle.WaveUnderline
    ]
    assert {s.cursor.blockNumber() for s in underlined} == {1}
    assert underlined[0].cursor.selectedText() == "name: Demo"
    assert editor.problems.item(0).text().startswith("Line 2: error:")
    assert (folder / "SKILL.md").read_bytes() == before
    assert editor.is_modified()


def test_typing_revalidates_after_a_pause_and_previews_html_literally(
    editor: SkillEditor, qtbot
) -> None:
    _replace_all(editor, GOOD)
    qtbot.waitUntil(lambda: "Say <b>hello</b>." in editor.preview.toPlainText())
    cursor = editor.text.textCursor()
    cursor.setPosition(editor.text.document().findBlockByNumber(1).position() + len("name: "))
    editor.text.setTextCursor(cursor)
    qtbot.keyClicks(editor.text, "X")
    qtbot.waitUntil(lambda: any(d.code is Code.NAME_CASE for d in editor.diagnostics()))


def test_save_writes_atomically_and_keeps_the_mode(
    editor: SkillEditor, folder: Path, qtbot
) -> None:
    skill_md = folder / "SKILL.md"
    skill_md.chmod(0o640)
    editor.show_skill(load_skill(folder))
    _replace_all(editor, GOOD)
    with qtbot.waitSignal(editor.saved) as saved:
        assert editor.save()
    assert saved.args == [folder]
    assert skill_md.read_text(encoding="utf-8") == GOOD
    assert stat.S_IMODE(skill_md.stat().st_mode) == 0o640
    assert sorted(p.name for p in folder.iterdir()) == ["SKILL.md"]  # no temporary file left
    assert not editor.is_modified()


def test_a_file_changed_on_disk_is_not_overwritten(
    editor: SkillEditor, folder: Path, qtbot
) -> None:
    skill_md = folder / "SKILL.md"
    theirs = GOOD.replace("A demo skill.", "Their version.")
    mine = GOOD.replace("A demo skill.", "My version.")
    _replace_all(editor, mine)
    skill_md.write_text(theirs, encoding="utf-8")
    editor.on_disk_changed()
    assert editor.conflict_bar.isVisibleTo(editor)
    assert editor.text.toPlainText() == mine
    assert not editor.save()
    assert skill_md.read_text(encoding="utf-8") == theirs

    editor.compare_button.click()
    assert editor.disk_text.isVisibleTo(editor)
    assert editor.disk_text.toPlainText() == theirs
    assert QApplication.clipboard().text() == theirs

    editor.keep_button.click()
    assert skill_md.read_text(encoding="utf-8") == mine
    assert not editor.conflict_bar.isVisibleTo(editor) and not editor.is_modified()


def test_reload_asks_before_discarding_edits(editor: SkillEditor, folder: Path, qtbot) -> None:
    theirs = GOOD.replace("A demo skill.", "Their version.")
    _replace_all(editor, GOOD)
    (folder / "SKILL.md").write_text(theirs, encoding="utf-8")
    editor.on_disk_changed()
    editor.reload_button.click()
    _message_box(qtbot).button(QMessageBox.StandardButton.Cancel).click()
    assert editor.text.toPlainText() == GOOD
    editor.reload_button.click()
    _message_box(qtbot).button(QMessageBox.StandardButton.Discard).click()
    assert editor.text.toPlainText() == theirs and not editor.is_modified()


def test_an_external_change_reloads_a_buffer_without_edits(
    editor: SkillEditor, folder: Path
) -> None:
    (folder / "SKILL.md").write_text(GOOD, encoding="utf-8")
    editor.on_disk_changed()
    assert editor.text.toPlainText() == GOOD
    assert not editor.conflict_bar.isVisibleTo(editor)


@pytest.mark.parametrize(
    ("answer", "left", "on_disk"),
    [
        (QMessageBox.StandardButton.Cancel, False, "old"),
        (QMessageBox.StandardButton.Discard, True, "old"),
        (QMessageBox.StandardButton.Save, True, "new"),
    ],
)
def test_leaving_with_unsaved_edits_asks_first(
    editor: SkillEditor, folder: Path, qtbot, answer, left: bool, on_disk: str
) -> None:
    old = (folder / "SKILL.md").read_text(encoding="utf-8")
    calls: list[bool] = []
    editor.request_leave(lambda: calls.append(True))
    assert calls == [True]  # nothing to save: no question
    _replace_all(editor, GOOD)
    editor.request_leave(lambda: calls.append(True))
    _message_box(qtbot).button(answer).click()
    assert calls == [True, True] if left else calls == [True]
    assert (folder / "SKILL.md").read_text(encoding="utf-8") == (GOOD if on_disk == "new" else old)


def test_an_unreadable_skill_md_opens_read_only(
    qtbot, tmp_path: Path, write_skill: WriteSkill
) -> None:
    folder = write_skill(tmp_path, "latin", "name: latin\ndescription: Caf\xe9.")
    data = (folder / "SKILL.md").read_bytes().replace("é".encode(), b"\xe9")
    (folder / "SKILL.md").write_bytes(data)
    editor = SkillEditor()
    qtbot.addWidget(editor)
    editor.show_skill(load_skill(folder))
    assert editor.text.isReadOnly() and not editor.save_button.isEnabled()
    assert not editor.save()
    assert (folder / "SKILL.md").read_bytes() == data


def test_the_budget_meter_follows_the_buffer(editor: SkillEditor) -> None:
    assert editor.budget.text().startswith("Budget: metadata about")
    assert "references/" not in editor.budget.text()
    long_body = "".join(f"## Part {n}\n\n" + "Some detail.\n" * 30 for n in range(20))
    _replace_all(editor, GOOD + long_body)
    editor.validate_now()
    assert "of 500" in editor.budget.text()
    assert "references/" in editor.budget.text() and "'## Part 0'" in editor.budget.text()


def test_a_lowercase_skill_md_is_still_editable(
    qtbot, tmp_path: Path, write_skill: WriteSkill
) -> None:
    folder = write_skill(tmp_path, "lower", "name: lower\ndescription: L.")
    (folder / "SKILL.md").rename(folder / "skill.md")
    editor = SkillEditor()
    qtbot.addWidget(editor)
    editor.show_skill(load_skill(folder))
    assert not editor.text.isReadOnly()
    _replace_all(editor, GOOD.replace("demo", "lower"))
    assert editor.save()
    assert (folder / "skill.md").read_text(encoding="utf-8") == GOOD.replace("demo", "lower")


def test_the_state_says_unchanged_saved_or_edited_with_the_badges_words(
    qtbot, tmp_path: Path, write_skill: WriteSkill
) -> None:
    broken = write_skill(tmp_path, "broken", "name: broken\ndescription: [unclosed")
    widget = SkillEditor()
    qtbot.addWidget(widget)
    widget.show_skill(load_skill(broken))
    assert widget._state.text() == "Unchanged · 1 error"  # never edited: not "Saved"
    assert widget._state.property("status") == "danger"
    _replace_all(widget, GOOD.replace("demo", "broken"))
    widget.validate_now()
    assert widget._state.text() == "Unsaved changes · valid"
    assert widget._state.property("status") == "warning"
    assert widget.save()
    assert widget._state.text() == "Saved · valid"
    assert widget._state.property("status") == "ok"
