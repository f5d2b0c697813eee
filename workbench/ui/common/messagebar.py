"""A dismissible bar at the top of the window for errors the user should read.

Errors from background tasks and the excepthook land here instead of in a modal dialog, so
nothing ever blocks the event loop. Messages may quote untrusted text and are plain text.
"""

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPaintEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

from workbench.ui.common.widgets import plain_label
from workbench.ui.theme import icon, paint_panel, status_colors, tint

TINT_ALPHA = 40  # of the danger colour, behind an alert's text


class AlertFrame(QFrame):
    """A frame drawn as an alert: a thin border in the danger colour around a faint tint of it."""

    def paintEvent(self, event: QPaintEvent) -> None:
        del event
        danger = status_colors(self.palette()).danger
        paint_panel(self, danger, tint(danger, TINT_ALPHA), 4)


class MessageBar(AlertFrame):
    """Shows the latest error (with a count of earlier ones) until dismissed."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._count = 0
        self._icon = QLabel(self)
        self._icon.setPixmap(icon("error").pixmap(QSize(18, 18)))
        self._text = plain_label("", self)
        self._text.setWordWrap(True)
        self._text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._close = QToolButton(self)
        self._close.setText("✕")
        self._close.setAutoRaise(True)
        self._close.setToolTip("Dismiss")
        self._close.setAccessibleName("Dismiss error")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 6, 6)
        layout.setSpacing(8)
        layout.addWidget(self._icon, 0, Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self._text, 1)
        layout.addWidget(self._close, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()
        self._connect_signals()

    def _connect_signals(self) -> None:
        self._close.clicked.connect(self.on_close_clicked)

    def show_error(self, message: str) -> None:
        """Show `message`; earlier messages not yet dismissed are counted."""
        self._count += 1
        earlier = self._count - 1
        suffix = f"  ({earlier} earlier error{'s' if earlier > 1 else ''})" if earlier else ""
        self._text.setText(message + suffix)
        self.show()

    def text(self) -> str:
        """The message on show."""
        return self._text.text()

    def on_close_clicked(self) -> None:
        self._count = 0
        self.hide()
