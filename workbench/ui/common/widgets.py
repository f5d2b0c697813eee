"""Tiny widget helpers shared by the views: literal labels, one-line elided labels, labels that
change many times a second, status colouring, questions, and splitters that remember their
sizes."""

from collections.abc import Callable

from PySide6.QtCore import QByteArray, QEvent, QSettings, QSize, Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QMessageBox, QSplitter, QWidget

from workbench.ui.common.text import tooltip
from workbench.ui.theme import apply_status

MIN_ELIDED_CHARS = 12  # an elided label never gets narrower than this many characters


def plain_label(text: str = "", parent: QWidget | None = None, wrap: bool = False) -> QLabel:
    """A label that shows `text` literally (QLabel's default AutoText may render HTML)."""
    label = QLabel(parent)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(wrap)
    label.setText(text)
    return label


class LiveLabel(QLabel):
    """One line of plain text that changes while a run goes (a countdown, the current CPU),
    fixed in size and only ever widened, to its widest text, until `restart`: Qt passes a
    label's every change of size up the layouts to the window, and each tab widget on the way
    repaints all it holds, where a fixed-size label repaints itself alone."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.restart(text)

    def setText(self, text: str) -> None:  # QLabel's, for Python callers (setNum skips it)
        super().setText(text)
        self.setFixedSize(super().sizeHint())  # QLabel's hint is never below its size

    def restart(self, text: str) -> None:
        """Show `text` at its own size, forgetting the wider texts shown before (a new run,
        an empty countdown): the window is laid out once."""
        super().setText(text)
        self.setMinimumSize(0, 0)
        self.setFixedSize(super().sizeHint())

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self.restart(self.text())


def set_status(widget: QWidget, status: str) -> None:
    """Colour `widget` as `danger`, `warning`, `ok` or `muted`, or as it was ("")."""
    widget.setProperty("status", status)
    apply_status(widget)


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


def remember_sizes(splitter: QSplitter, settings: QSettings, key: str) -> None:
    """Give `splitter` the sizes saved under `key` (if any), and save them whenever the user
    moves it."""
    state = settings.value(key)
    if isinstance(state, QByteArray):
        splitter.restoreState(state)
    splitter.splitterMoved.connect(lambda *_: settings.setValue(key, splitter.saveState()))


class ElidedLabel(QLabel):
    """One line of plain text, elided to the label's width, the whole text in its tool tip;
    or, once `set_wrapped(True)`, the whole text wrapped over as many lines as it needs.

    Signals:
        elided_changed(bool): whether the text shown is cut short, when that changes.
    """

    elided_changed = Signal(bool)

    def __init__(self, mode: Qt.TextElideMode, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self._mode = mode
        self._full = ""
        self._was_elided = False
        self._wrapped = False

    def set_full_text(self, text: str) -> None:
        """Show `text`, elided when it does not fit."""
        self._full = " ".join(text.split())  # one line, whatever the skill wrote
        self.setToolTip(tooltip(text))
        self.updateGeometry()
        self._elide()

    def full_text(self) -> str:
        """The text before eliding."""
        return self._full

    def is_elided(self) -> bool:
        """Whether the text shown is cut short."""
        return self.text() != self._full

    def set_wrapped(self, wrapped: bool) -> None:
        """Show the whole text wrapped (True) or one elided line (False)."""
        self._wrapped = wrapped
        self.setWordWrap(wrapped)
        self.updateGeometry()
        self._elide()

    def sizeHint(self) -> QSize:
        if self._wrapped:
            return super().sizeHint()
        margins = self.contentsMargins()
        width = self.fontMetrics().horizontalAdvance(self._full) + margins.left() + margins.right()
        return QSize(width + 2, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        if self._wrapped:
            return super().minimumSizeHint()
        width = self.fontMetrics().averageCharWidth() * MIN_ELIDED_CHARS
        return QSize(min(width, self.sizeHint().width()), super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        room = self.contentsRect().width()
        shown = self._full if self._wrapped else self._elided(room)
        if self.text() != shown:
            self.setText(shown)
        if self.is_elided() != self._was_elided:
            self._was_elided = self.is_elided()
            self.elided_changed.emit(self._was_elided)

    def _elided(self, room: int) -> str:
        return self.fontMetrics().elidedText(self._full, self._mode, room)
