"""`PostureJobPage`: the part the Compare and Lab pages share, a job run over the postures
the user ticked.

Run (Ctrl+Return) starts the job (after asking, with `.open()`, when `local` is ticked), Stop
(Ctrl+.) cancels it through its `CancelToken`, `shutdown()` stops it and waits for it to clean
up, a job's `WorkbenchError` shows in the status line, and activating a table cell opens its
run (the run id is the cell's `RUN_ID` data). Subclasses build the widgets named below and say
what they run (`_job`), what the question asks (`LOCAL_QUESTION`) and when Run is possible
(`_update_buttons`).
"""

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QLabel,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.executors.types import CancelToken
from workbench.postures.model import Availability, PostureId
from workbench.ui.common.widgets import set_status
from workbench.ui.history.view import ask
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

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._cancel: CancelToken | None = None
        self._task: asyncio.Task[None] | None = None
        self._question: QMessageBox | None = None
        self._run_shortcut = QShortcut(QKeySequence("Ctrl+Return"), self)
        self._stop_shortcut = QShortcut(QKeySequence("Ctrl+."), self)

    def set_availability(self, availability: dict[PostureId, Availability]) -> None:
        """Offer the postures that can run here (see `PostureChecks`)."""
        self.postures.set_availability(availability)
        self._update_buttons()

    def chosen(self) -> list[PostureId]:
        """The ticked postures, strongest first."""
        return self.postures.chosen()

    def question(self) -> QMessageBox | None:
        """The open "run without a sandbox?" question, if one is open."""
        return self._question

    def stop(self) -> None:
        """Stop the job in progress."""
        if self._cancel is not None and not self._cancel.cancelled:
            self._cancel.cancel()
            self._show(self.STOPPING, "muted")

    async def shutdown(self, grace_s: float = 15.0) -> None:
        """Stop the job in progress and wait (at most `grace_s`) for it to clean up."""
        if self._task is not None:
            self.stop()
            await asyncio.wait([self._task], timeout=grace_s)

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

    # For subclasses ---------------------------------------------------------------------

    def _connect_job_signals(self) -> None:
        """Connect Run, Stop, their shortcuts, the table's cells and the posture choices."""
        self.run_button.clicked.connect(self.on_run_button_clicked)
        self.stop_button.clicked.connect(self.on_stop_button_clicked)
        self._run_shortcut.activated.connect(self.on_run_button_clicked)
        self._stop_shortcut.activated.connect(self.on_stop_button_clicked)
        self.table.itemActivated.connect(self.on_table_item_activated)
        self.postures.changed.connect(self._update_buttons)

    def start(self) -> "asyncio.Task[None] | None":
        """Start the job (what Run does, after `local` was confirmed); None when it cannot."""
        if not self.run_button.isEnabled():
            return None
        cancel = CancelToken()
        job = self._job(cancel)
        if job is None:
            return None
        self._cancel = cancel
        self._task = asyncio.ensure_future(job)
        self._task.add_done_callback(self._on_task_done)
        self._update_buttons()
        return self._task

    def _job(self, cancel: CancelToken) -> Job | None:
        """The job to run now, watching `cancel`; None (with the reason shown) when none."""
        raise NotImplementedError

    def _update_buttons(self) -> None:
        raise NotImplementedError

    def _on_task_done(self, task: "asyncio.Task[None]") -> None:
        self._task = None
        self._cancel = None
        self._update_buttons()
        if task.cancelled() or (error := task.exception()) is None:
            return
        if isinstance(error, WorkbenchError):
            self._show(f"{self.FAILED}: {error}", "danger")
        else:
            sys.excepthook(type(error), error, error.__traceback__)

    def _show(self, text: str, status: str) -> None:
        self.status.setText(text)
        set_status(self.status, status)
