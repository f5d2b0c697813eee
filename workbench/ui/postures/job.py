"""`PostureJobPage`: the part the Compare and Lab pages share, a job run over the postures
the user ticked.

Run (Ctrl+Return) starts the job (after asking, with `.open()`, when `local` is ticked), Stop
(Ctrl+.) cancels it through its `CancelToken`, `shutdown()` stops it and waits for it to clean
up, a job's `WorkbenchError` shows in the status line (its other errors go through `Tasks` to
the message bar), and activating a table cell opens its run (the run id is the cell's `RUN_ID`
data). Subclasses build the widgets named below and say what they run (`_job`), what the
question asks (`LOCAL_QUESTION`) and when Run is possible (`_update_buttons`).
"""

import asyncio
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

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._cancel: CancelToken | None = None
        self.tasks = Tasks(self, explain=self.on_tasks_explain)  # the job in progress
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

    # For subclasses ---------------------------------------------------------------------

    def _connect_job_signals(self) -> None:
        """Connect Run, Stop, their shortcuts, the table's cells and the posture choices."""
        self.run_button.clicked.connect(self.on_run_button_clicked)
        self.stop_button.clicked.connect(self.on_stop_button_clicked)
        self._run_shortcut.activated.connect(self.on_run_button_clicked)
        self._stop_shortcut.activated.connect(self.on_stop_button_clicked)
        self.table.itemActivated.connect(self.on_table_item_activated)
        self.postures.changed.connect(self._update_buttons)
        self.tasks.busy_changed.connect(self.on_tasks_busy_changed)

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

    def _show(self, text: str, status: str) -> None:
        self.status.setText(text)
        set_status(self.status, status)
