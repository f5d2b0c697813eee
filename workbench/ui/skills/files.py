"""A skill's file tree with sizes, and a capped plain-text preview of the selected file.

The preview reads at most `PREVIEW_LIMIT` bytes, shows binary files and symbolic links as a
placeholder (links are never followed), and refuses paths that leave the skill folder. File
contents are untrusted: they go into a plain-text widget only.
"""

import os
import stat
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QHeaderView,
    QPlainTextEdit,
    QSplitter,
    QStyle,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.ansi import reveal_bidi
from workbench.skills import FileKind, FileNode, Skill
from workbench.ui.common.text import format_size, tooltip

PREVIEW_LIMIT = 64 * 1024
PATH_ROLE = Qt.ItemDataRole.UserRole + 1


class FileBrowser(QWidget):
    """The file tree of one skill beside a preview of the selected file."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._root: Path | None = None
        self._tree = QTreeWidget(self)
        self._tree.setHeaderLabels(["File", "Size"])
        self._tree.setAccessibleName("Skill files")
        self._tree.setUniformRowHeights(True)
        header = self._tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)

        self._preview = QPlainTextEdit(self)
        self._preview.setReadOnly(True)
        self._preview.setUndoRedoEnabled(False)
        self._preview.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self._preview.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self._preview.setPlaceholderText("Select a file to preview it.")
        self._preview.setAccessibleName("File preview")

        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.addWidget(self._tree)
        splitter.addWidget(self._preview)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        splitter.setSizes([260, 420])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        self._connect_signals()

    def _connect_signals(self) -> None:
        self._tree.currentItemChanged.connect(self.on_tree_current_changed)

    def show_skill(self, skill: Skill | None) -> None:
        """Show `skill`'s files (or nothing)."""
        self._tree.clear()
        self._preview.clear()
        self._root = skill.path if skill is not None else None
        if skill is None:
            return
        for child in skill.files.children:
            self._tree.addTopLevelItem(self._make_item(child, Path(child.name)))
        _add_omitted(self._tree.invisibleRootItem(), skill.files)
        self._tree.expandToDepth(0)
        self.select_relative(Path(skill.skill_md.name))

    def select_relative(self, relative: Path, line: int | None = None) -> bool:
        """Select the file at `relative` (inside the skill) and show `line` of its preview;
        False when it is not listed."""
        items = self._tree.findItems(
            reveal_bidi(relative.name),
            Qt.MatchFlag.MatchStartsWith | Qt.MatchFlag.MatchRecursive,
            0,
        )
        for item in items:
            if item.data(0, PATH_ROLE) == relative:
                self._tree.setCurrentItem(item)
                if line:
                    block = self._preview.document().findBlockByLineNumber(line - 1)
                    cursor = self._preview.textCursor()
                    cursor.setPosition(block.position())
                    self._preview.setTextCursor(cursor)
                    self._preview.centerCursor()
                return True
        return False

    def tree(self) -> QTreeWidget:
        """The tree widget (for keyboard focus and tests)."""
        return self._tree

    def preview_text(self) -> str:
        """The text currently shown in the preview."""
        return self._preview.toPlainText()

    def on_tree_current_changed(self, item: QTreeWidgetItem | None, _previous: object) -> None:
        relative = item.data(0, PATH_ROLE) if item is not None else None
        if self._root is None or not isinstance(relative, Path):
            self._preview.clear()
            return
        self._preview.setPlainText(read_preview(self._root, relative))

    def _make_item(self, node: FileNode, relative: Path) -> QTreeWidgetItem:
        directory = node.kind is FileKind.DIRECTORY
        name = node.name
        if node.kind is FileKind.SYMLINK:
            name = f"{node.name} → {node.link_target}"
        item = QTreeWidgetItem([reveal_bidi(name), format_size(node.size)])
        item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        item.setToolTip(0, tooltip(str(relative)))
        pixmap = _ICONS.get(node.kind, QStyle.StandardPixmap.SP_FileIcon)
        item.setIcon(0, self.style().standardIcon(pixmap))
        if directory:
            for child in node.children:
                item.addChild(self._make_item(child, relative / child.name))
            _add_omitted(item, node)
        else:
            item.setData(0, PATH_ROLE, relative)
        return item


_ICONS = {
    FileKind.DIRECTORY: QStyle.StandardPixmap.SP_DirIcon,
    FileKind.SYMLINK: QStyle.StandardPixmap.SP_FileLinkIcon,
}


def _add_omitted(parent: QTreeWidgetItem, node: FileNode) -> None:
    if node.omitted:
        more = QTreeWidgetItem([f"… {node.omitted:,} more not listed", ""])
        more.setDisabled(True)
        parent.addChild(more)


def read_preview(root: Path, relative: Path) -> str:
    """The first `PREVIEW_LIMIT` bytes of `root / relative` as text, or a placeholder.

    Never follows a symbolic link and never opens anything but a regular file (a FIFO would
    block the reader forever).
    """
    path = root / relative
    try:
        if path.is_symlink():
            return f"[symbolic link to {path.readlink()} — not followed]"
        if not path.resolve().is_relative_to(root.resolve()):
            return "[outside the skill folder — not shown]"
        if not stat.S_ISREG(path.lstat().st_mode):
            return "[not a regular file — not shown]"
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(PREVIEW_LIMIT)
    except OSError as error:
        return f"[cannot read this file: {error.strerror or error}]"
    if b"\0" in data[:8192]:
        return f"[binary file, {format_size(size)} — not shown]"
    text = data.decode("utf-8", errors="replace")
    if size > PREVIEW_LIMIT:
        text += f"\n\n[… preview stops at {format_size(PREVIEW_LIMIT)} of {format_size(size)}]"
    return text
