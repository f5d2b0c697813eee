"""The live output of a run: stdout and stderr in arrival order, coloured, capped, never stalling.

`OutputView` queues the run's chunks and draws them on a timer within a time budget per tick,
skipping the oldest when the backlog is too large and pausing colours when output is fast, each
stream through its own `AnsiDecoder` (SGR colours only) into a plain-text widget, so nothing is ever
read as HTML, and marks a failed run's evidence line (`highlight`); `LogViewer` shows the tail of
a full log when no desktop program opens it.
"""

import time
from collections import deque
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, QUrl
from PySide6.QtGui import (
    QColor,
    QDesktopServices,
    QFont,
    QFontDatabase,
    QGuiApplication,
    QTextCharFormat,
    QTextCursor,
)
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from workbench.ansi import AnsiDecoder, Piece, Style
from workbench.executors.types import OutputChunk, Stream
from workbench.runs.diagnosis import Evidence
from workbench.ui.common.text import format_size
from workbench.ui.common.widgets import ElidedLabel, plain_label, set_status
from workbench.ui.theme import status_colors

MAX_BLOCKS = 20_000
MAX_LINE = 4_000
FLUSH_MS = 50
BUDGET_S = 0.02
SLICE_BYTES = 8 * 1024
MAX_BACKLOG = 1024 * 1024
FAST_BYTES_PER_S = 512 * 1024
RATE_WINDOW_S = 1.0
MAX_VIEWED = 4 * 1024 * 1024


class OutputView(QWidget):
    """The output pane with its "colour paused" badge and the open-full-log buttons."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._pending: deque[OutputChunk] = deque()
        self._pending_bytes = 0
        self._skipped = 0
        self._arrivals: deque[tuple[float, int]] = deque()
        self._window_bytes = 0
        self._decoders = {stream: AnsiDecoder() for stream in Stream}
        self._formats: dict[tuple[Style, Stream], QTextCharFormat] = {}
        self._line_len = 0
        self._line_capped = False
        self._finishing = False
        self._logs: dict[Stream, Path | None] = {Stream.STDOUT: None, Stream.STDERR: None}
        self._evidence: Evidence | None = None  # to highlight once everything is drawn
        self.colour_paused = False
        self._timer = QTimer(self)
        self._timer.setInterval(FLUSH_MS)

        self.text = QPlainTextEdit(self)
        self.text.setReadOnly(True)
        self.text.setUndoRedoEnabled(False)
        self.text.setMaximumBlockCount(MAX_BLOCKS)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setPlaceholderText("The command's output appears here; stderr is tinted.")
        self.text.setAccessibleName("Run output")
        self.badge = ElidedLabel(Qt.TextElideMode.ElideRight, self)  # never widens the pane
        set_status(self.badge, "warning")
        self.badge.hide()
        self.open_stdout = QPushButton("Open full stdout log", self)
        self.open_stdout.setAccessibleName("Open the full stdout log")
        self.open_stderr = QPushButton("Open full stderr log", self)
        self.open_stderr.setAccessibleName("Open the full stderr log")
        for button in (self.open_stdout, self.open_stderr):
            button.setEnabled(False)
            button.setToolTip("Available after a run: the complete log file, uncapped")

        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.badge, 1)
        bar.addStretch(0)
        bar.addWidget(self.open_stdout)
        bar.addWidget(self.open_stderr)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.text, 1)
        layout.addLayout(bar)
        self._connect_signals()

    def _connect_signals(self) -> None:
        self._timer.timeout.connect(self.on_timer_timeout)
        self.open_stdout.clicked.connect(self.on_open_stdout_clicked)
        self.open_stderr.clicked.connect(self.on_open_stderr_clicked)

    # Public API -------------------------------------------------------------------------

    def begin(self) -> None:
        """Clear the pane for a new run and start drawing."""
        self.text.clear()
        self._pending.clear()
        self._pending_bytes = self._skipped = self._window_bytes = self._line_len = 0
        self._arrivals.clear()
        self._decoders = {stream: AnsiDecoder() for stream in Stream}
        self._formats.clear()  # the palette may have switched between light and dark
        self._line_capped = self._finishing = False
        self._evidence = None
        self.text.setExtraSelections([])
        self.set_logs(None, None)
        self._set_colour_paused(False)
        self._timer.start()

    def append(self, chunk: OutputChunk) -> None:
        """Queue a chunk (the run's output sink); it is drawn on the next tick."""
        now = time.monotonic()
        size = len(chunk.data)
        if size <= SLICE_BYTES:
            self._pending.append(chunk)
        else:  # big reads are drawn in slices, so one tick's budget can stop between them
            for start in range(0, size, SLICE_BYTES):
                piece = chunk.data[start : start + SLICE_BYTES]
                self._pending.append(OutputChunk(chunk.stream, piece, chunk.t))
        self._pending_bytes += size
        self._arrivals.append((now, size))
        self._window_bytes += size
        while self._pending_bytes > MAX_BACKLOG and len(self._pending) > 1:
            dropped = self._pending.popleft()
            self._pending_bytes -= len(dropped.data)
            self._skipped += len(dropped.data)

    def finish(self) -> None:
        """The run ended: draw what is left (over the next ticks), then stop the timer."""
        self._finishing = True
        if not self._timer.isActive():
            self._timer.start()

    def highlight(self, evidence: Evidence | None) -> None:
        """Mark the line `evidence` quotes (the last line of the output that starts with its
        text) and scroll to it, now or once everything received is drawn."""
        self._evidence = evidence if evidence is not None and evidence.line is not None else None
        if self.is_idle():
            self._mark_evidence()

    def highlighted(self) -> str:
        """The text of the highlighted line ("" when none is)."""
        selections = self.text.extraSelections()
        return selections[0].cursor.block().text() if selections else ""

    def is_idle(self) -> bool:
        """Whether everything received has been drawn."""
        return not self._pending and not self._timer.isActive()

    def set_logs(self, stdout: Path | None, stderr: Path | None) -> None:
        """Offer the full log files of the finished run."""
        self._logs = {Stream.STDOUT: stdout, Stream.STDERR: stderr}
        for button, path in ((self.open_stdout, stdout), (self.open_stderr, stderr)):
            button.setEnabled(path is not None and path.is_file())
            if path is not None:
                button.setToolTip(str(path))

    # Slots ------------------------------------------------------------------------------

    def on_open_stdout_clicked(self) -> None:
        self._open_log(Stream.STDOUT)

    def on_open_stderr_clicked(self) -> None:
        self._open_log(Stream.STDERR)

    def on_timer_timeout(self) -> None:
        self._update_rate()
        if self._pending or self._skipped:
            self._draw()
        if self._finishing and not self._pending:
            self._timer.stop()
            self._finishing = False
            cursor = self._end_cursor()
            for stream, decoder in self._decoders.items():
                self._insert(cursor, decoder.flush(), stream)
            self._mark_evidence()

    # Internals --------------------------------------------------------------------------

    def _draw(self) -> None:
        scrollbar = self.text.verticalScrollBar()
        at_bottom = scrollbar.value() >= scrollbar.maximum() - 4
        cursor = self._end_cursor()
        cursor.beginEditBlock()
        if self._skipped:
            notice = (
                f"\n[… {format_size(self._skipped)} of output skipped here to keep up; "
                "the full log has all of it …]\n"
            )
            self._insert(cursor, [Piece(notice)], Stream.STDERR)
            self._skipped = 0
        deadline = time.monotonic() + BUDGET_S
        colour = not self.colour_paused
        while self._pending and time.monotonic() < deadline:
            chunk = self._pending.popleft()
            self._pending_bytes -= len(chunk.data)
            pieces = self._decoders[chunk.stream].feed(chunk.data, colour=colour)
            self._insert(cursor, pieces, chunk.stream)
        cursor.endEditBlock()
        if at_bottom:
            scrollbar.setValue(scrollbar.maximum())

    def _mark_evidence(self) -> None:
        evidence, self._evidence = self._evidence, None
        if evidence is None:
            return
        block = self.text.document().lastBlock()
        while block.isValid() and not block.text().strip().startswith(evidence.text):
            block = block.previous()
        if not block.isValid():
            return
        mark = QTextEdit.ExtraSelection()
        mark.format.setBackground(_tint(status_colors(self.palette()).warning))
        mark.format.setProperty(QTextCharFormat.Property.FullWidthSelection, True)
        mark.cursor = QTextCursor(block)
        self.text.setExtraSelections([mark])
        self.text.setTextCursor(QTextCursor(block))
        self.text.centerCursor()

    def _insert(self, cursor: QTextCursor, pieces: list[Piece], stream: Stream) -> None:
        for piece in pieces:
            if piece.rewrite and self._line_len:  # a new line: what \r would overwrite stays
                cursor.insertText("\n")
                self._line_len, self._line_capped = 0, False
            elif piece.text:
                cursor.insertText(self._capped(piece.text), self._format(piece.style, stream))

    def _capped(self, text: str) -> str:
        """`text` with every line cut at `MAX_LINE` characters (one ellipsis per cut line)."""
        if "\n" not in text and self._line_len + len(text) <= MAX_LINE:
            self._line_len += len(text)
            return text
        parts = []
        for i, line in enumerate(text.split("\n")):
            if i:
                parts.append("\n")
                self._line_len, self._line_capped = 0, False
            room = MAX_LINE - self._line_len
            if len(line) <= room:
                parts.append(line)
                self._line_len += len(line)
            elif not self._line_capped:
                parts.append(line[:room] + "…")
                self._line_len, self._line_capped = MAX_LINE, True
        return "".join(parts)

    def _format(self, style: Style, stream: Stream) -> QTextCharFormat:
        key = (style, stream)
        found = self._formats.get(key)
        if found is None:
            found = QTextCharFormat()
            if style.fg is not None:
                found.setForeground(QColor(style.fg))
            elif stream is Stream.STDERR:
                found.setForeground(status_colors(self.palette()).danger)
            if style.bg is not None:
                found.setBackground(QColor(style.bg))
            if style.bold:
                found.setFontWeight(QFont.Weight.Bold)
            found.setFontItalic(style.italic)
            found.setFontUnderline(style.underline)
            self._formats[key] = found
        return found

    def _end_cursor(self) -> QTextCursor:
        cursor = QTextCursor(self.text.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _update_rate(self) -> None:
        now = time.monotonic()
        while self._arrivals and self._arrivals[0][0] < now - RATE_WINDOW_S:
            self._window_bytes -= self._arrivals.popleft()[1]
        rate = self._window_bytes / RATE_WINDOW_S
        if not self.colour_paused and rate > FAST_BYTES_PER_S:
            self._set_colour_paused(True)
        elif self.colour_paused and rate < FAST_BYTES_PER_S / 2:
            self._set_colour_paused(False)

    def _set_colour_paused(self, paused: bool) -> None:
        self.colour_paused = paused
        sentence = "Colour paused: output is arriving faster than 0.5 MB/s, shown as plain text"
        self.badge.set_full_text(sentence if paused else "")
        self.badge.setAccessibleName(sentence if paused else "")  # whole, where it is elided
        self.badge.setVisible(paused)

    def _open_log(self, stream: Stream) -> None:
        path = self._logs[stream]
        if path is not None and not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
            LogViewer(path, self).show()


class LogViewer(QDialog):
    """A log file shown read-only, for desktops with no program set up to open it."""

    def __init__(self, path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path = path
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowTitle(f"{path.name} — Skill Workbench")
        self.where = plain_label(
            f"No program is set up here to open log files, so the log is shown below. "
            f"The file: {path}",
            self,
            wrap=True,
        )
        self.where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text = QPlainTextEdit(self)
        self.text.setReadOnly(True)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setAccessibleName("Log file contents")
        self.text.setPlainText(_log_text(path))
        self.copy_path = QPushButton("Copy Path", self)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.addButton(self.copy_path, QDialogButtonBox.ButtonRole.ActionRole)
        layout = QVBoxLayout(self)
        layout.addWidget(self.where)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)
        self.resize(820, 520)
        buttons.rejected.connect(self.close)
        self.copy_path.clicked.connect(self.on_copy_path_clicked)

    def on_copy_path_clicked(self) -> None:
        QGuiApplication.clipboard().setText(str(self.path))


def _tint(colour: QColor) -> QColor:
    """`colour`, faint enough to put behind text."""
    tint = QColor(colour)
    tint.setAlpha(70)
    return tint


def _log_text(path: Path) -> str:
    """The last `MAX_VIEWED` bytes of a log as plain text (escapes dropped, `\\r` a new line)."""
    try:
        with path.open("rb") as log:
            skipped = max(0, log.seek(0, 2) - MAX_VIEWED)
            log.seek(skipped)
            data = log.read()
    except OSError as error:
        return f"The log cannot be read: {error.strerror or error}."
    decoder = AnsiDecoder()
    pieces = decoder.feed(data, colour=False) + decoder.flush()
    text = "".join("\n" if piece.rewrite else piece.text for piece in pieces)
    if skipped:
        return f"[… the first {format_size(skipped)} are not shown; the file has them …]\n{text}"
    return text
