"""One file's text diff: unified or side by side, or a placeholder saying why there is none.

The diff itself comes from `workbench.workspace.diff.text_diff` (caps, binary detection and
the diff algorithm live there); this widget only draws it. Layout "Auto" shows the two sides
split when the view is wide enough and one unified column when it is narrow. A placeholder for
a large text file offers "Show anyway" (the `show_anyway` signal), a binary one does not.
Diff text is file content: it goes into plain-text editors only.
"""

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFontDatabase, QResizeEvent, QTextBlockFormat, QTextCursor
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.ui.common.widgets import plain_label, set_status
from workbench.ui.theme import status_colors

SPLIT_MIN_WIDTH = 900
AUTO, UNIFIED, SPLIT = "Auto", "Unified", "Side by side"

Row = tuple[str | None, str | None]  # left and right text of one split row; None is padding


def split_rows(unified: str) -> list[Row]:
    """The rows of a side-by-side view of a unified diff: removals paired with additions."""
    rows: list[Row] = []
    removed: list[str] = []
    added: list[str] = []

    def pair() -> None:
        for i in range(max(len(removed), len(added))):
            rows.append(
                (removed[i] if i < len(removed) else None, added[i] if i < len(added) else None)
            )
        removed.clear()
        added.clear()

    for line in unified.splitlines():
        if line.startswith(("--- ", "+++ ")) and not rows and not removed and not added:
            continue  # the file header
        if line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith("+"):
            added.append(line[1:])
        elif line.startswith("\\"):
            continue  # "\ No newline at end of file"
        else:
            pair()
            text = line if line.startswith("@@") else line[1:]
            rows.append((text, text))
    pair()
    return rows


class DiffView(QWidget):
    """The diff of the selected change.

    Signals:
        show_anyway(): the user asked to diff a file that is over the size caps.
    """

    show_anyway = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._unified_text = ""
        self.title = plain_label("Select a changed file to see its diff.", self)
        self.layout_choice = QComboBox(self)
        self.layout_choice.addItems([AUTO, UNIFIED, SPLIT])
        self.layout_choice.setAccessibleName("Diff layout")
        self.layout_choice.setToolTip("Auto: side by side when the view is wide")
        self.placeholder = plain_label("", self, wrap=True)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        set_status(self.placeholder, "muted")
        self.show_anyway_button = QPushButton("Show anyway", self)
        self.show_anyway_button.setAccessibleName("Show the large diff anyway")
        self.unified = _editor(self, "Unified diff")
        self.left = _editor(self, "Before (left side of the diff)")
        self.right = _editor(self, "After (right side of the diff)")

        placeholder_page = QWidget(self)
        page = QVBoxLayout(placeholder_page)
        page.addStretch(1)
        page.addWidget(self.placeholder)
        page.addWidget(self.show_anyway_button, 0, Qt.AlignmentFlag.AlignCenter)
        page.addStretch(1)
        sides = QSplitter(Qt.Orientation.Horizontal, self)
        sides.addWidget(self.left)
        sides.addWidget(self.right)
        self.pages = QStackedWidget(self)
        for widget in (placeholder_page, self.unified, sides):
            self.pages.addWidget(widget)
        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.addWidget(self.title, 1)
        head.addWidget(self.layout_choice)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(head)
        layout.addWidget(self.pages, 1)
        self.show_placeholder("", "Select a changed file to see its diff.")
        self._connect_signals()

    def _connect_signals(self) -> None:
        self.layout_choice.currentTextChanged.connect(self.on_layout_choice_changed)
        self.show_anyway_button.clicked.connect(self.show_anyway)
        left_bar, right_bar = self.left.verticalScrollBar(), self.right.verticalScrollBar()
        left_bar.valueChanged.connect(right_bar.setValue)
        right_bar.valueChanged.connect(left_bar.setValue)

    # Public API -------------------------------------------------------------------------

    def show_placeholder(self, title: str, sentence: str, *, offer_full: bool = False) -> None:
        """Say why there is no diff; `offer_full` adds "Show anyway"."""
        self.title.setText(title)
        self._unified_text = ""
        self.placeholder.setText(sentence)
        self.show_anyway_button.setVisible(offer_full)
        self.pages.setCurrentIndex(0)

    def show_diff(self, title: str, unified: str) -> None:
        """Show a unified diff's text in the current layout."""
        self.title.setText(title)
        self._unified_text = unified
        self._render()

    def is_split(self) -> bool:
        """Whether the diff is shown side by side right now."""
        return self.pages.currentIndex() == 2

    # Slots and events -------------------------------------------------------------------

    def on_layout_choice_changed(self, _text: str) -> None:
        if self._unified_text:
            self._render()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        crossed = (event.oldSize().width() >= SPLIT_MIN_WIDTH) != (
            event.size().width() >= SPLIT_MIN_WIDTH
        )
        if crossed and self._unified_text and self.layout_choice.currentText() == AUTO:
            self._render()

    # Internals --------------------------------------------------------------------------

    def _render(self) -> None:
        choice = self.layout_choice.currentText()
        split = choice == SPLIT or (choice == AUTO and self.width() >= SPLIT_MIN_WIDTH)
        colours = status_colors(self.palette())
        added, removed = _tint(colours.ok), _tint(colours.danger)
        if not split:
            self.unified.setPlainText(self._unified_text)
            marks = {"+": added, "-": removed}
            _paint(
                self.unified,
                [
                    marks.get(line[:1]) if not line.startswith(("+++ ", "--- ")) else None
                    for line in self._unified_text.splitlines()
                ],
            )
            self.pages.setCurrentIndex(1)
            return
        rows = split_rows(self._unified_text)
        self.left.setPlainText("\n".join(left or "" for left, _ in rows))
        self.right.setPlainText("\n".join(right or "" for _, right in rows))
        padding = _tint(self.palette().placeholderText().color(), 30)
        changed = [left != right or left is None for left, right in rows]
        _paint(
            self.left,
            [
                (removed if left is not None else padding) if c else None
                for (left, _), c in zip(rows, changed, strict=True)
            ],
        )
        _paint(
            self.right,
            [
                (added if right is not None else padding) if c else None
                for (_, right), c in zip(rows, changed, strict=True)
            ],
        )
        self.pages.setCurrentIndex(2)


def _editor(parent: QWidget, name: str) -> QPlainTextEdit:
    editor = QPlainTextEdit(parent)
    editor.setReadOnly(True)
    editor.setUndoRedoEnabled(False)
    editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
    editor.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    editor.setAccessibleName(name)
    return editor


def _tint(colour: QColor, alpha: int = 50) -> QTextBlockFormat:
    shade = QColor(colour)
    shade.setAlpha(alpha)
    block = QTextBlockFormat()
    block.setBackground(shade)
    return block


def _paint(editor: QPlainTextEdit, marks: list[QTextBlockFormat | None]) -> None:
    """Give line i the background `marks[i]`; one call per run of equal marks, not per line."""
    document = editor.document()
    start = 0
    for i in range(1, len(marks) + 1):
        if i < len(marks) and marks[i] is marks[start]:
            continue
        mark = marks[start]
        if mark is not None:
            cursor = QTextCursor(document.findBlockByNumber(start))
            end = document.findBlockByNumber(i - 1)
            cursor.setPosition(end.position(), QTextCursor.MoveMode.KeepAnchor)
            cursor.setBlockFormat(mark)
        start = i
