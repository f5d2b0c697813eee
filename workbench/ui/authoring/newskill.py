"""Authoring in the window: the New Skill dialog and the File menu actions that go with it.

`NewSkillDialog` asks for a new skill's name, description, folders and root, checking name and
description as they are typed by the catalog's own rules (`name_problems`); `AuthoringActions` owns
New Skill, Save, Export, Import and the skill watcher, guards unsaved edits, and tells the window
what happened through signals. Dialogs open with `.open()`, never `exec()`; blocking work goes
through `asyncio.to_thread`.
"""

import asyncio
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workbench.authoring.package import SUFFIX, export_skill, import_skill
from workbench.authoring.template import DEFAULT_FOLDERS, FOLDERS, create_skill
from workbench.platform.paths import example_skills_dir
from workbench.skills import Skill
from workbench.skills.reading import find_skill_md
from workbench.skills.rules import check_front_matter
from workbench.ui.authoring.editor import SkillEditor
from workbench.ui.common.tasks import Tasks
from workbench.ui.common.widgets import plain_label, set_status
from workbench.ui.skills.watch import SkillWatcher


def name_problems(root: Path, name: str, description: str) -> list[str]:
    """What the validator says against this name and description, and a folder in the way."""
    fields = {"name": name, "description": description}
    problems = check_front_matter(fields, {}, Path(name or "skill"), Path("SKILL.md"))
    messages = [problem.message for problem in problems if problem.is_error]
    if name and (root / name).exists():
        messages.append(f"{root / name} already exists; choose another name.")
    return messages


class NewSkillDialog(QDialog):
    """Asks for a new skill's name, description, folders and root.

    Signals:
        create_requested(object, str, str, object): the root `Path`, the name, the
            description and the `frozenset` of folders, when the user pressed Create.
    """

    create_requested = Signal(object, str, str, object)

    def __init__(self, roots: list[Path], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("New Skill")
        self.setMinimumWidth(520)
        self.name = QLineEdit(self)
        self.name.setPlaceholderText("lower-case-with-hyphens")
        self.name.setAccessibleName("Skill name")
        self.description = QLineEdit(self)
        self.description.setPlaceholderText("What the skill does and when to use it")
        self.description.setAccessibleName("Skill description")
        self.folders = {folder: QCheckBox(f"{folder}/", self) for folder in FOLDERS}
        for folder, box in self.folders.items():
            box.setChecked(folder in DEFAULT_FOLDERS)
        self.root = QComboBox(self)
        self.root.setAccessibleName("Folder to create the skill in")
        for root in roots:
            self.root.addItem(str(root), root)
        self._choose = QPushButton("Choose…", self)
        self.problems = plain_label("", self, wrap=True)
        set_status(self.problems, "danger")
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        self.create_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.create_button.setText("Create")

        folder_row = QHBoxLayout()
        for box in self.folders.values():
            folder_row.addWidget(box)
        folder_row.addStretch(1)
        root_row = QHBoxLayout()
        root_row.addWidget(self.root, 1)
        root_row.addWidget(self._choose)
        form = QFormLayout()
        form.addRow("Name:", self.name)
        form.addRow("Description:", self.description)
        form.addRow("Folders:", folder_row)
        form.addRow("Create in:", root_row)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.problems)
        layout.addWidget(self.buttons)
        self._connect_signals()
        self.on_fields_changed()

    def _connect_signals(self) -> None:
        self.name.textChanged.connect(self.on_fields_changed)
        self.description.textChanged.connect(self.on_fields_changed)
        self.root.currentIndexChanged.connect(self.on_fields_changed)
        self._choose.clicked.connect(self.on_choose_clicked)
        self.buttons.accepted.connect(self.on_buttons_accepted)
        self.buttons.rejected.connect(self.reject)

    def chosen_root(self) -> Path | None:
        """The root the skill will be written into."""
        root = self.root.currentData()
        return root if isinstance(root, Path) else None

    def add_root(self, root: Path) -> None:
        """Offer `root` (if new) and choose it."""
        index = self.root.findData(root)
        if index < 0:
            self.root.addItem(str(root), root)
            index = self.root.count() - 1
        self.root.setCurrentIndex(index)

    def on_fields_changed(self) -> None:
        root = self.chosen_root()
        problems = name_problems(root or Path(), self.name.text(), self.description.text())
        if root is None:
            problems.append("Choose a folder to create the skill in.")
        untouched = not self.name.text() and not self.description.text()
        self.problems.setText("" if untouched else "\n".join(problems))
        self.create_button.setEnabled(not problems)

    def on_choose_clicked(self) -> None:
        dialog = QFileDialog(self, "Create the skill in")
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        dialog.fileSelected.connect(lambda path: self.add_root(Path(path)))
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()

    def on_buttons_accepted(self) -> None:
        root = self.chosen_root()
        if root is None or not self.create_button.isEnabled():
            return
        folders = frozenset(name for name, box in self.folders.items() if box.isChecked())
        self.create_requested.emit(root, self.name.text(), self.description.text(), folders)
        self.accept()


class AuthoringActions(QObject):
    """New Skill, Save, Export and Import, the skill watcher, and the unsaved-edits guard.

    Signals:
        skill_written(object, object): a skill was created or imported: the root `Path` it
            went into and its folder's `Path`.
        skill_changed(object): the `Path` of a skill folder saved here or changed on disk.
        catalog_changed(): a watched root gained or lost a skill.
        select_requested(object): the `Path` of the skill to select (back to the edited one,
            then on once its edits are saved or discarded).
        close_requested(): the edits that held the window open are saved or discarded.
        status_message(str): a short message for the status bar.
        refused(str): why an action cannot be done now.
    """

    skill_written = Signal(object, object)
    skill_changed = Signal(object)
    catalog_changed = Signal()
    select_requested = Signal(object)
    close_requested = Signal()
    status_message = Signal(str)
    refused = Signal(str)

    def __init__(self, editor: SkillEditor, parent: QWidget) -> None:
        super().__init__(parent)
        self._dialog_parent = parent
        self._roots: list[Path] = []
        self._selected: Skill | None = None
        self.editor = editor
        self.tasks = Tasks(self)
        self.watcher = SkillWatcher(self)
        self.new_action = QAction("&New Skill…", self)
        self.new_action.setShortcut(QKeySequence.StandardKey.New)
        self.save_action = QAction("&Save SKILL.md", self)
        self.save_action.setShortcut(QKeySequence.StandardKey.Save)
        self.export_action = QAction(f"&Export Skill as {SUFFIX}…", self)
        self.import_action = QAction(f"&Import {SUFFIX}…", self)
        self._connect_signals()

    def _connect_signals(self) -> None:
        self.new_action.triggered.connect(self.on_new_action_triggered)
        self.save_action.triggered.connect(self.on_save_action_triggered)
        self.export_action.triggered.connect(self.on_export_action_triggered)
        self.import_action.triggered.connect(self.on_import_action_triggered)
        self.editor.saved.connect(self.skill_changed)
        self.watcher.skill_changed.connect(self.skill_changed)
        self.watcher.roots_changed.connect(self.catalog_changed)

    def actions(self) -> list[QAction]:
        """The File menu entries, in order."""
        return [self.new_action, self.save_action, self.export_action, self.import_action]

    def watch_roots(self, roots: list[Path]) -> None:
        """Watch these catalog roots, and offer them for new and imported skills."""
        self._roots = list(roots)
        self.watcher.set_roots(self._roots)

    def writable_roots(self) -> list[Path]:
        """The roots a new skill can go into: folders of skills, not the bundled examples."""
        examples = example_skills_dir()
        return [r for r in self._roots if r != examples and find_skill_md(r) is None]

    def switch_to(self, skill: Skill | None) -> bool:
        """Edit and watch `skill`; False (nothing changes yet) when unsaved edits to another
        skill must be saved or discarded first (the question is open; the switch follows)."""
        current = self.editor.skill()
        back = current.path if current is not None else None
        on = skill.path if skill is not None else None
        if back is not None and on is not None and back != on and self.editor.is_modified():
            # Both deferred, in order: go back to the edited skill now, on once settled.
            QTimer.singleShot(0, lambda: self.select_requested.emit(back))
            self.editor.request_leave(
                lambda: QTimer.singleShot(0, lambda: self.select_requested.emit(on))
            )
            return False
        self._selected = skill
        if skill is not None:
            self.editor.show_skill(skill)
            self.watcher.set_skill(skill.path)
        return True

    def holds_close(self) -> bool:
        """True when unsaved edits keep the window open (the question is open; closing
        follows a Save or Discard); otherwise the watching stops, as the window closes."""
        if not self.editor.is_modified():
            self.watcher.set_roots([])
            self.watcher.set_skill(None)
            return False
        self.editor.request_leave(self.close_requested.emit)
        return True

    async def create(
        self, root: Path, name: str, description: str, folders: frozenset[str]
    ) -> Path:
        """Create a skill from the template (the window then lists and opens it)."""
        folder = await asyncio.to_thread(create_skill, root, name, description, folders)
        self.skill_written.emit(root, folder)
        return folder

    async def export(self, folder: Path, dest: Path) -> Path:
        """Write the skill `folder` as a .skill package at `dest`."""
        target = await asyncio.to_thread(export_skill, folder, dest)
        self.status_message.emit(f"Exported {folder.name} to {target}")
        return target

    async def import_package(self, package: Path, root: Path) -> Path:
        """Unpack a .skill package into `root` (the window then lists and opens the skill)."""
        folder = await asyncio.to_thread(import_skill, package, root)
        self.skill_written.emit(root, folder)
        return folder

    def on_new_action_triggered(self) -> None:
        dialog = NewSkillDialog(self.writable_roots(), self._dialog_parent)
        dialog.create_requested.connect(self.on_dialog_create_requested)
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()

    def on_dialog_create_requested(
        self, root: Path, name: str, description: str, folders: frozenset[str]
    ) -> None:
        self.tasks.spawn(self.create(root, name, description, folders))

    def on_save_action_triggered(self) -> None:
        self.editor.save()

    def on_export_action_triggered(self) -> None:
        skill = self._selected
        if skill is None:
            self.refused.emit("Select a skill to export first.")
            return
        dialog = QFileDialog(self._dialog_parent, "Export Skill")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setNameFilter(f"Skill packages (*{SUFFIX})")
        dialog.setDefaultSuffix(SUFFIX.lstrip("."))
        dialog.selectFile(f"{skill.path.name}{SUFFIX}")
        dialog.fileSelected.connect(
            lambda path: self.tasks.spawn(self.export(skill.path, Path(path)))
        )
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()

    def on_import_action_triggered(self) -> None:
        dialog = QFileDialog(self._dialog_parent, "Import Skill Package")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.setNameFilter(f"Skill packages (*{SUFFIX})")
        dialog.fileSelected.connect(self.on_import_package_selected)
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()

    def on_import_package_selected(self, path: str) -> None:
        roots = self.writable_roots()
        dialog = QFileDialog(self._dialog_parent, "Import the skill into")
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        if roots:
            dialog.setDirectory(str(roots[0]))
        dialog.fileSelected.connect(
            lambda root: self.tasks.spawn(self.import_package(Path(path), Path(root)))
        )
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()
