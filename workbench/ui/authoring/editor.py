"""The SKILL.md editor: highlighted text, inline diagnostics as you type, a live preview, and saving
that never loses the user's text.

`SkillEditor` validates the buffer in memory, debounced (`skill_with_text`), shows the preview and
budget meter, and saves atomically, refusing to overwrite a SKILL.md that changed on disk since it
was loaded and offering Reload, Keep mine or Show disk version instead.
"""

import stat
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from workbench.authoring.template import write_atomic
from workbench.skills import Code, Diagnostic, Skill, skill_with_text
from workbench.skills.budget import Budget, budget
from workbench.skills.reading import read_skill_md
from workbench.ui.authoring.highlighter import SkillTextEdit
from workbench.ui.common.messagebar import AlertFrame
from workbench.ui.common.text import badge_text, plural, tooltip
from workbench.ui.common.widgets import plain_label, set_status
from workbench.ui.skills.view import MarkdownView
from workbench.ui.skills.watch import Fingerprint, fingerprint

VALIDATE_DELAY_MS = 300
LINE_ROLE = Qt.ItemDataRole.UserRole + 1
_LOSSY = frozenset({Code.INVALID_UTF8, Code.SKILL_MD_TOO_LARGE})


class SkillEditor(QWidget):
    """Edits one skill's SKILL.md beside its rendered preview.

    Signals:
        saved(object): the `Path` of the skill folder whose SKILL.md was just saved.
        modified_changed(bool): the buffer gained or lost unsaved edits.
        status_message(str): a short message for the status bar.
    """

    saved = Signal(object)
    modified_changed = Signal(bool)
    status_message = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._skill: Skill | None = None
        self._loaded: Fingerprint | None = None
        self._checked: Skill | None = None
        self._saved_here = False  # saved since loaded: the state says "Saved", else "Unchanged"
        self.text = SkillTextEdit(self)
        self.text.setAccessibleName("SKILL.md editor")
        self.preview = MarkdownView(self)
        self.preview.setAccessibleName("Preview of the SKILL.md body")
        self.budget = plain_label("", self, wrap=True)
        self.budget.setAccessibleName("Context budget of the text")
        self.problems = QListWidget(self)
        self.problems.setAccessibleName("Problems in the editor")
        self.problems.setMaximumHeight(72)
        self.problems.setWordWrap(True)
        self.problems.setMinimumHeight(24)  # the window's minimum size must not grow
        self.text.setMinimumHeight(36)
        self.disk_text = QPlainTextEdit(self)
        self.disk_text.setReadOnly(True)
        self.disk_text.setAccessibleName("SKILL.md as it is on disk")
        self.disk_text.setFont(self.text.font())
        self.disk_text.hide()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(VALIDATE_DELAY_MS)

        self.conflict_bar = AlertFrame(self)
        self._conflict_text = plain_label("", self.conflict_bar, wrap=True)
        set_status(self._conflict_text, "warning")
        self.reload_button = QPushButton("Reload", self.conflict_bar)
        self.keep_button = QPushButton("Keep mine", self.conflict_bar)
        self.compare_button = QPushButton("Show disk version", self.conflict_bar)
        bar = QHBoxLayout(self.conflict_bar)
        bar.setContentsMargins(8, 4, 8, 4)
        bar.addWidget(self._conflict_text, 1)
        for button in (self.reload_button, self.keep_button, self.compare_button):
            bar.addWidget(button)
        self.conflict_bar.hide()

        self._state = plain_label("", self)
        self.save_button = QPushButton("Save", self)
        self.save_button.setToolTip("Save SKILL.md (Ctrl+S)")
        status_row = QHBoxLayout()
        status_row.addWidget(self._state, 1)
        status_row.addWidget(self.save_button)

        left = QWidget(self)
        column = QVBoxLayout(left)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(self.text, 1)
        column.addWidget(self.problems)
        self._splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self._splitter.setChildrenCollapsible(False)
        right = QWidget(self)
        pane = QVBoxLayout(right)
        pane.setContentsMargins(0, 0, 0, 0)
        pane.setSpacing(2)
        pane.addWidget(self.preview, 1)
        pane.addWidget(self.budget)
        pane.addLayout(status_row)
        for stretch, widget in ((3, left), (2, right), (2, self.disk_text)):
            self._splitter.addWidget(widget)
            self._splitter.setStretchFactor(self._splitter.indexOf(widget), stretch)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.conflict_bar)
        layout.addWidget(self._splitter, 1)
        self._connect_signals()
        self.setEnabled(False)

    def _connect_signals(self) -> None:
        self.text.textChanged.connect(self.on_text_text_changed)
        self.text.modificationChanged.connect(self.on_text_modification_changed)
        self._timer.timeout.connect(self.on_timer_timeout)
        self.problems.itemActivated.connect(self.on_problems_item_activated)
        self.save_button.clicked.connect(self.on_save_button_clicked)
        self.reload_button.clicked.connect(self.on_reload_button_clicked)
        self.keep_button.clicked.connect(self.on_keep_button_clicked)
        self.compare_button.clicked.connect(self.on_compare_button_clicked)

    # Public API -------------------------------------------------------------------------

    def show_skill(self, skill: Skill | None) -> None:
        """Edit `skill`'s SKILL.md; the same skill keeps the buffer unless it changed on disk
        and has no unsaved edits."""
        previous, self._skill = self._skill, skill
        kept = (
            skill is not None
            and previous is not None
            and skill.path == previous.path
            and (self.is_modified() or fingerprint(skill.skill_md) == self._loaded)
        )
        if not kept:
            self._load()

    def skill(self) -> Skill | None:
        """The skill being edited."""
        return self._skill

    def is_modified(self) -> bool:
        """Whether the buffer holds edits that are not on disk."""
        return self.text.document().isModified()

    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """The problems found in the buffer at the last check."""
        return self._checked.diagnostics if self._checked is not None else ()

    def validate_now(self) -> None:
        """Check the buffer at once instead of after the typing pause."""
        self._timer.stop()
        self._validate()

    def save(self, force: bool = False) -> bool:
        """Write the buffer to SKILL.md; without `force`, refuse when the file changed on disk
        since it was loaded (the "changed on disk" bar then offers the choices)."""
        if self._skill is None or self.text.isReadOnly():
            return False
        if not force and fingerprint(self._skill.skill_md) != self._loaded:
            self._show_conflict("SKILL.md changed on disk since you opened it; nothing was saved.")
            return False
        try:
            _save_text(self._skill.skill_md, self.text.toPlainText())
        except OSError as error:
            self.status_message.emit(f"Could not save {self._skill.skill_md}: {error}")
            return False
        self._loaded = fingerprint(self._skill.skill_md)
        self._saved_here = True
        self.text.document().setModified(False)
        self.conflict_bar.hide()
        self.disk_text.hide()
        self.status_message.emit(f"Saved {self._skill.skill_md}")
        self.saved.emit(self._skill.path)
        return True

    def on_disk_changed(self) -> None:
        """The skill changed on disk: reload an unedited buffer, warn about an edited one."""
        if self._skill is None or fingerprint(self._skill.skill_md) == self._loaded:
            return
        if self.is_modified():
            self._show_conflict("SKILL.md changed on disk while you were editing it.")
        else:
            self._load()

    def request_leave(self, proceed: Callable[[], None]) -> None:
        """Call `proceed` once unsaved edits are saved or discarded; ask first if there are any.

        Cancel (or a save that did not happen) leaves everything as it is.
        """
        if not self.is_modified():
            proceed()
            return
        name = self._skill.name if self._skill is not None else "this skill"
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Unsaved changes",
            f"SKILL.md of {name} has unsaved changes.",
            QMessageBox.StandardButton.Save
            | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setInformativeText("Save them before leaving?")

        def on_finished(_result: int) -> None:
            button = box.standardButton(box.clickedButton())
            if button == QMessageBox.StandardButton.Save and self.save():
                proceed()
            elif button == QMessageBox.StandardButton.Discard:
                self.text.document().setModified(False)
                proceed()

        box.finished.connect(on_finished)
        box.finished.connect(box.deleteLater)
        box.open()

    # Slots ------------------------------------------------------------------------------

    def on_text_text_changed(self) -> None:
        self._timer.start()

    def on_timer_timeout(self) -> None:
        self._validate()

    def on_text_modification_changed(self, modified: bool) -> None:
        self._show_state()
        self.modified_changed.emit(modified)

    def on_problems_item_activated(self, item: QListWidgetItem) -> None:
        line = item.data(LINE_ROLE)
        if isinstance(line, int):
            block = self.text.document().findBlockByNumber(line - 1)
            cursor = self.text.textCursor()
            cursor.setPosition(block.position())
            self.text.setTextCursor(cursor)
            self.text.setFocus(Qt.FocusReason.OtherFocusReason)

    def on_save_button_clicked(self) -> None:
        self.save()

    def on_reload_button_clicked(self) -> None:
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            "Reload SKILL.md",
            "Reload SKILL.md from disk and discard your edits?",
            QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.button(QMessageBox.StandardButton.Discard).setText("Discard and reload")

        def on_finished(_result: int) -> None:
            if box.standardButton(box.clickedButton()) == QMessageBox.StandardButton.Discard:
                self._load()

        box.finished.connect(on_finished)
        box.finished.connect(box.deleteLater)
        box.open()

    def on_keep_button_clicked(self) -> None:
        self.save(force=True)

    def on_compare_button_clicked(self) -> None:
        if self._skill is None:
            return
        disk = read_skill_md(self._skill.path).text or ""
        self.disk_text.setPlainText(disk)
        self.disk_text.show()
        QApplication.clipboard().setText(disk)
        self.status_message.emit("The disk version is beside your text and on the clipboard.")

    # Internals --------------------------------------------------------------------------

    def _load(self) -> None:
        self._timer.stop()
        self.conflict_bar.hide()
        self.disk_text.hide()
        skill = self._skill
        self.setEnabled(skill is not None)
        if skill is None:
            self._loaded, self._checked = None, None
            self.text.setPlainText("")
            return
        read = read_skill_md(skill.path)
        self._loaded = fingerprint(read.path)
        self._saved_here = False
        lossy = [d for d in read.diagnostics if d.code in _LOSSY]  # saving would lose bytes
        editable = read.text is not None and not lossy
        self.text.setReadOnly(not editable)
        self.save_button.setEnabled(editable)
        self.text.setPlainText(read.text or "")
        self.text.document().setModified(False)
        self._validate()
        if not editable:
            reason = (lossy or read.diagnostics)[0].message if read.diagnostics else "unreadable"
            self._state.setText(f"Read only: {reason}")
            set_status(self._state, "danger")

    def _validate(self) -> None:
        if self._skill is None:
            return
        checked = skill_with_text(self._skill, self.text.toPlainText())
        self._checked = checked
        self.preview.set_markdown(checked.body)
        self._show_budget(budget(checked))
        self.text.show_diagnostics(checked.diagnostics)
        self._list_problems(checked.diagnostics)
        self._show_state()

    def _list_problems(self, diagnostics: tuple[Diagnostic, ...]) -> None:
        self.problems.clear()
        for problem in diagnostics:
            where = f"Line {problem.line}" if problem.line else "SKILL.md"
            text = f"{where}: {problem.severity}: {' '.join(problem.message.split())}"
            item = QListWidgetItem(text)
            item.setData(LINE_ROLE, problem.line)
            item.setToolTip(tooltip(problem.message))
            self.problems.addItem(item)
        self.problems.setVisible(bool(diagnostics))  # "valid" on the state line says the rest

    def _show_state(self) -> None:
        """Whether the text is unchanged, saved or edited, and the verdict on it as the
        header's badge words it ("Unchanged · 1 error")."""
        if self.text.isReadOnly() or self._checked is None:
            return
        errors = sum(1 for d in self.diagnostics() if str(d.severity) == "error")
        edited = self.is_modified()
        saved = "Unsaved changes" if edited else "Saved" if self._saved_here else "Unchanged"
        self._state.setText(f"{saved} · {badge_text(self._checked)}")
        valid = self._checked.valid and not edited
        set_status(self._state, "danger" if errors else "ok" if valid else "warning")

    def _show_budget(self, meter: Budget) -> None:
        over = meter.metadata_over or meter.body_over
        self.budget.setText(
            f"Budget: metadata about {plural(meter.metadata_tokens, 'token')} of "
            f"{meter.advised_metadata_tokens} advised · body {plural(meter.body_lines, 'line')} "
            f"of {meter.advised_body_lines}, about {plural(meter.body_tokens, 'token')} of "
            f"{meter.advised_body_tokens:,}"
            + "".join(f"\n{' '.join(advice.split())}" for advice in meter.advice)
        )
        set_status(self.budget, "warning" if over else "muted")

    def _show_conflict(self, message: str) -> None:
        self._conflict_text.setText(
            message + " Reload discards your edits; Keep mine saves over the disk version."
        )
        self.conflict_bar.show()


def _save_text(path: Path, text: str) -> None:
    """Replace SKILL.md (the file a link inside the skill names) atomically, keeping its mode."""
    target = path.resolve() if path.is_symlink() else path
    write_atomic(target, text.encode("utf-8"), stat.S_IMODE(target.stat().st_mode))
