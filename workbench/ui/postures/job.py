"""`PostureJobPage`: the part the Compare and Lab pages share, a job run over the postures
the user ticked.

Run (Ctrl+Return) starts the job (after asking, with `.open()`, when `local` is ticked), Stop
(Ctrl+.) cancels it through its `CancelToken`, `shutdown()` stops it and waits for it to clean
up, a job's `WorkbenchError` shows in the status line (its other errors go through `Tasks` to
the message bar), and activating a table cell opens its run (the run id is the cell's `RUN_ID`
data). Below the table (`_results()`, a splitter that gives the table the height of its
rows), the record of the selected cell's run reads as in the history, once the subclass has
put it in `_run_records`. Subclasses build the widgets named below and say what they run
(`_job`), what the question asks (`LOCAL_QUESTION`) and when Run is possible
(`_update_buttons`).
"""

import asyncio
from collections.abc import Coroutine
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.executors.types import CancelToken
from workbench.postures.model import Availability, PostureId
from workbench.runs.record import RunRecord
from workbench.runs.reports import ExportFormat, export_record
from workbench.runs.service import RunService
from workbench.ui.common.tasks import Tasks
from workbench.ui.common.widgets import ask, set_status
from workbench.ui.postures.checks import PostureChecks

RUN_ID = Qt.ItemDataRole.UserRole

Job = Coroutine[Any, Any, None]


class PostureJobPage(QWidget):
    """See the module doc.

    Signals:
        run_activated(str): the user opened the run with this id from a cell.
    """

    run_activated = Signal(str)

    LOCAL_QUESTION: tuple[str, str, str]  # title, text and confirming button of the question
    STOPPING = "Stopping…"
    FAILED = "Not run"  # how the status line starts when the job raised a WorkbenchError

    run_button: QPushButton
    stop_button: QPushButton
    postures: PostureChecks
    table: QTableWidget
    status: QLabel

    def __init__(self, service: RunService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._service = service
        self._cancel: CancelToken | None = None
        self.tasks = Tasks(self, explain=self.on_tasks_explain)  # the job in progress
        self._run_records: dict[str, RunRecord] = {}  # the runs the table's cells name
        self._question: QMessageBox | None = None
        self.record = QPlainTextEdit(self)
        self.record.setReadOnly(True)
        self.record.setAccessibleName("Record of the selected run")
        self.record.setPlaceholderText(
            "Select a cell to read its run's record here; double-click it (or press Enter) to "
            "open the run in the history."
        )
        self.record.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self._run_shortcut = QShortcut(QKeySequence("Ctrl+Return"), self)
        self._stop_shortcut = QShortcut(QKeySequence("Ctrl+."), self)

    def set_availability(self, availability: dict[PostureId, Availability]) -> None:
        """Offer the postures that can run here (see `PostureChecks`)."""
        self.postures.set_availability(availability)
        self._update_buttons()

    def chosen(self) -> list[PostureId]:
        """The ticked postures, strongest first."""
        return self.postures.chosen()

    def is_running(self) -> bool:
        """Whether a job is in progress."""
        return self.tasks.busy()

    def question(self) -> QMessageBox | None:
        """The open "run without a sandbox?" question, if one is open."""
        return self._question

    def stop(self) -> None:
        """Stop the job in progress."""
        if self._cancel is not None and not self._cancel.cancelled:
            self._cancel.cancel()
            self._show(self.STOPPING, "muted")

    async def shutdown(self, grace_s: float = 15.0) -> None:
        """Stop the job in progress and wait (at most `grace_s`, then cancel it) for it to
        clean up."""
        self.stop()
        await self.tasks.close(grace_s)

    # Slots ------------------------------------------------------------------------------

    def on_run_button_clicked(self) -> None:
        if not self.run_button.isEnabled() or self._question is not None:
            return
        if PostureId.LOCAL not in self.chosen():
            self.start()
            return
        self._question = ask(self, *self.LOCAL_QUESTION, self.start)
        self._question.finished.connect(self.on_question_finished)

    def on_question_finished(self, _result: int) -> None:
        self._question = None

    def on_stop_button_clicked(self) -> None:
        self.stop()

    def on_table_item_activated(self, item: QTableWidgetItem) -> None:
        run_id = item.data(RUN_ID)
        if isinstance(run_id, str):
            self.run_activated.emit(run_id)

    def on_tasks_busy_changed(self, running: bool) -> None:
        if not running:
            self._cancel = None
            self._update_buttons()

    def on_tasks_explain(self, error: WorkbenchError) -> None:
        self._show(f"{self.FAILED}: {error}", "danger")

    def on_table_section_resized(self, *_args: object) -> None:
        self.table.resizeRowsToContents()  # wrapped cells need more or fewer lines

    def on_table_current_item_changed(self, item: QTableWidgetItem | None) -> None:
        self._show_record()

    # For subclasses ---------------------------------------------------------------------

    def _connect_job_signals(self) -> None:
        """Connect Run, Stop, their shortcuts, the table's cells and the posture choices."""
        self.run_button.clicked.connect(self.on_run_button_clicked)
        self.stop_button.clicked.connect(self.on_stop_button_clicked)
        self._run_shortcut.activated.connect(self.on_run_button_clicked)
        self._stop_shortcut.activated.connect(self.on_stop_button_clicked)
        self.table.itemActivated.connect(self.on_table_item_activated)
        self.table.currentItemChanged.connect(self.on_table_current_item_changed)
        self.table.horizontalHeader().sectionResized.connect(self.on_table_section_resized)
        self.postures.changed.connect(self._update_buttons)
        self.tasks.busy_changed.connect(self.on_tasks_busy_changed)

    def _results(self) -> QSplitter:
        """The table above the selected run's record."""
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self.table)
        splitter.addWidget(self.record)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        return splitter

    def showEvent(self, event: QShowEvent) -> None:
        """Fit the table to what it got while the page was hidden."""
        super().showEvent(event)
        self._fit_table()

    def _fit_table(self) -> None:
        """Give the table the height of its rows (at most two thirds of the page), the
        record the rest (on a page on show: a hidden one has no sizes yet)."""
        splitter = self.table.parentWidget()
        if not isinstance(splitter, QSplitter) or not self.isVisible():
            return
        self.table.resizeRowsToContents()
        frame = 2 * self.table.frameWidth()
        scroll = self.table.horizontalScrollBar()
        wanted = self.table.horizontalHeader().height() + self.table.verticalHeader().length()
        wanted += frame + (scroll.height() if scroll.isVisible() else 0)
        total = sum(splitter.sizes())
        table = min(wanted, total * 2 // 3)
        splitter.setSizes([table, total - table])

    def start(self) -> "asyncio.Task[None] | None":
        """Start the job (what Run does, after `local` was confirmed); None when it cannot."""
        if not self.run_button.isEnabled():
            return None
        cancel = CancelToken()
        job = self._job(cancel)
        if job is None:
            return None
        self._cancel = cancel
        task = self.tasks.spawn(job)
        self._update_buttons()
        return task

    def _job(self, cancel: CancelToken) -> Job | None:
        """The job to run now, watching `cancel`; None (with the reason shown) when none."""
        raise NotImplementedError

    def _update_buttons(self) -> None:
        raise NotImplementedError

    def _show_record(self) -> None:
        """The selected cell's run's record in the pane (once it is in `_run_records`)."""
        item = self.table.currentItem()
        record = self._run_records.get(item.data(RUN_ID)) if item is not None else None
        self.record.setPlainText("" if record is None else export_record(record, ExportFormat.TEXT))

    def _show(self, text: str, status: str) -> None:
        self.status.setText(text)
        set_status(self.status, status)
