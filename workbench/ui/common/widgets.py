"""Tiny widget helpers shared by the views: literal labels and status colouring."""

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget


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
