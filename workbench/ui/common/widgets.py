"""Tiny widget helpers shared by the views: literal labels, status colouring, questions."""

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QMessageBox, QWidget


def plain_label(text: str = "", parent: QWidget | None = None, wrap: bool = False) -> QLabel:
    """A label that shows `text` literally (QLabel's default AutoText may render HTML)."""
    label = QLabel(parent)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(wrap)
    label.setText(text)
    return label


def set_status(widget: QWidget, status: str) -> None:
    """Colour `widget` as `danger`, `warning`, `ok` or `muted` (rules live in `theme`)."""
    widget.setProperty("status", status)
    widget.style().unpolish(widget)
    widget.style().polish(widget)


def ask(
    parent: QWidget, title: str, text: str, accept: str, then: Callable[[], object]
) -> QMessageBox:
    """Ask a question window-modally, opened with `open()` (never `exec()`); `then()` runs
    only if the user clicks `accept` (Cancel is the default and Escape answer)."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle(title)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setText(text)
    yes = box.addButton(accept, QMessageBox.ButtonRole.AcceptRole)
    keep = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(keep)
    box.setEscapeButton(keep)

    def finished(_result: int) -> None:
        box.deleteLater()
        if box.clickedButton() is yes:
            then()

    box.finished.connect(finished)
    box.open()
    return box
