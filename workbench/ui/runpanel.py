"""The run panel: run the selected skill's command under the chosen posture and watch it.

The command field starts with the skill's suggested command (`metadata.command`), run with
`sh -c` in a fresh workspace (for QuickJS: a .js file and its arguments). Output streams into
a read-only plain-text view: chunks are buffered and flushed every 50 ms, escape sequences
are dropped, lines and the number of blocks are capped, stderr is tinted. The outcome line
gives the run's status and the cause that ended it. Run is Ctrl+Return, Stop is Ctrl+.
"""

import asyncio
import re
import shlex
import sys
from collections import deque

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase, QKeySequence, QShortcut, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workbench.errors import UsageError, WorkbenchError
from workbench.executors.types import CancelToken, OutputChunk, RunStatus, Stream
from workbench.postures import DEFAULT_LIMITS, POSTURE_INFO, Posture, PostureId
from workbench.runs.record import new_run_id
from workbench.runs.service import CompletedRun, RunPlan, RunService
from workbench.skills import Skill
from workbench.ui.text import format_size, plural
from workbench.ui.theme import status_colors
from workbench.ui.widgets import plain_label, set_status

MAX_BLOCKS = 20_000
MAX_LINE = 4_000
FLUSH_MS = 50
_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")


class RunPanel(QWidget):
    """Command, timeout, Run/Stop, live output and the outcome of the last run.

    Signals:
        run_finished(object): the `CompletedRun` of a run that ended (any status).
    """

    run_finished = Signal(object)

    def __init__(self, service: RunService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._service = service
        self._skill: Skill | None = None
        self._posture: PostureId | None = None
        self._cancel: CancelToken | None = None
        self._task: asyncio.Task[None] | None = None
        self._pending: deque[OutputChunk] = deque()
        self._flush_timer = QTimer(self)
        self._flush_timer.setInterval(FLUSH_MS)

        self.posture_label = plain_label("No posture", self)
        self.posture_label.setToolTip("The posture the next run uses (choose it on the right)")
        self.command = QLineEdit(self)
        self.command.setPlaceholderText("Command to run in the workspace (sh -c)")
        self.command.setAccessibleName("Command")
        self.timeout = QDoubleSpinBox(self)
        self.timeout.setRange(1, 3600)
        self.timeout.setDecimals(0)
        self.timeout.setSuffix(" s timeout")
        self.timeout.setValue(DEFAULT_LIMITS.timeout_s)
        self.timeout.setAccessibleName("Timeout in seconds")
        self.run_button = QPushButton("Run", self)
        self.run_button.setToolTip("Run the command (Ctrl+Return)")
        self.stop_button = QPushButton("Stop", self)
        self.stop_button.setToolTip("Stop the run and everything it started (Ctrl+.)")
        self.stop_button.setEnabled(False)
        self._run_shortcut = QShortcut(QKeySequence("Ctrl+Return"), self)
        self._stop_shortcut = QShortcut(QKeySequence("Ctrl+."), self)

        self.output = QPlainTextEdit(self)
        self.output.setReadOnly(True)
        self.output.setUndoRedoEnabled(False)
        self.output.setMaximumBlockCount(MAX_BLOCKS)
        self.output.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.output.setPlaceholderText("The command's output appears here.")
        self.output.setAccessibleName("Run output")
        self.outcome = plain_label("No run yet.", self, wrap=True)
        self.outcome.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        set_status(self.outcome, "muted")

        controls = QHBoxLayout()
        controls.setSpacing(6)
        controls.addWidget(self.posture_label)
        controls.addWidget(self.command, 1)
        controls.addWidget(self.timeout)
        controls.addWidget(self.run_button)
        controls.addWidget(self.stop_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 6, 0, 0)
        layout.setSpacing(6)
        layout.addLayout(controls)
        layout.addWidget(self.output, 1)
        layout.addWidget(self.outcome)
        self._connect_signals()
        self._update_buttons()

    def _connect_signals(self) -> None:
        self.run_button.clicked.connect(self.on_run_button_clicked)
        self.stop_button.clicked.connect(self.on_stop_button_clicked)
        self._run_shortcut.activated.connect(self.on_run_button_clicked)
        self._stop_shortcut.activated.connect(self.on_stop_button_clicked)
        self.command.returnPressed.connect(self.on_run_button_clicked)
        self.command.textChanged.connect(self._update_buttons)
        self._flush_timer.timeout.connect(self.on_flush_timer_timeout)

    # Public API -------------------------------------------------------------------------

    def set_skill(self, skill: Skill | None) -> None:
        """Run commands of `skill` from now on; the command field takes its suggestion."""
        if skill is not None and (self._skill is None or skill.path != self._skill.path):
            self.command.setText(skill.command or "")
            self.command.setCursorPosition(0)  # show the start of a long command
            self.command.setPlaceholderText(
                "Command to run in the workspace (sh -c)"
                if skill.command
                else "This skill suggests no command: type one to run in the workspace (sh -c)"
            )
        self._skill = skill
        self._update_buttons()

    def set_posture(self, posture_id: PostureId | None) -> None:
        """Run under `posture_id` from the next run on."""
        self._posture = posture_id
        title = POSTURE_INFO[posture_id].title if posture_id is not None else "No posture"
        self.posture_label.setText(f"{title}:")
        set_status(self.posture_label, "danger" if posture_id is PostureId.LOCAL else "")
        self._update_buttons()

    def is_running(self) -> bool:
        """Whether a run is in progress."""
        return self._task is not None

    def start(self) -> "asyncio.Task[None] | None":
        """Start running the command (what Run does); None when nothing can run now."""
        skill, posture_id = self._skill, self._posture
        if not self.run_button.isEnabled() or skill is None or posture_id is None:
            return None
        self._cancel = CancelToken()
        self._task = asyncio.ensure_future(
            self._run(skill, posture_id, self.command.text().strip(), self._cancel)
        )
        self._task.add_done_callback(self._on_task_done)
        self._update_buttons()
        return self._task

    def stop(self) -> None:
        """Stop the run in progress (the executor kills everything it started)."""
        if self._cancel is not None and not self._cancel.cancelled:
            self._cancel.cancel()
            self.outcome.setText("Stopping…")

    async def shutdown(self, grace_s: float = 15.0) -> None:
        """Stop the run in progress and wait (at most `grace_s`) until it has been cleaned up."""
        task = self._task
        if task is None:
            return
        self.stop()
        await asyncio.wait([task], timeout=grace_s)

    # Slots ------------------------------------------------------------------------------

    def on_run_button_clicked(self) -> None:
        self.start()

    def on_stop_button_clicked(self) -> None:
        self.stop()

    def on_flush_timer_timeout(self) -> None:
        if not self._pending:
            return
        cursor = QTextCursor(self.output.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        plain = QTextCharFormat()
        tinted = QTextCharFormat()
        tinted.setForeground(status_colors(self.palette()).danger)
        while self._pending:
            chunk = self._pending.popleft()
            text = _clean(chunk.data.decode("utf-8", errors="replace"))
            cursor.insertText(text, tinted if chunk.stream is Stream.STDERR else plain)
        self.output.ensureCursorVisible()
        scrollbar = self.output.verticalScrollBar()
        scrollbar.setValue(scrollbar.maximum())

    # Internals --------------------------------------------------------------------------

    async def _run(
        self, skill: Skill, posture_id: PostureId, text: str, cancel: CancelToken
    ) -> None:
        self.output.clear()
        self._pending.clear()
        self._flush_timer.start()
        self.outcome.setText(f"Running under {posture_id}…")
        set_status(self.outcome, "muted")
        try:
            plan = _plan(skill, posture_id, text, self.timeout.value(), self._service)
            done = await self._service.run_once(plan, self._pending.append, cancel)
        except WorkbenchError as error:
            self.outcome.setText(f"Not run: {error}")
            set_status(self.outcome, "danger")
        else:
            self._show_outcome(done)
            self.run_finished.emit(done)
        finally:
            self._flush_timer.stop()
            self.on_flush_timer_timeout()

    def _on_task_done(self, task: "asyncio.Task[None]") -> None:
        self._task = None
        self._cancel = None
        self._update_buttons()
        if not task.cancelled() and (error := task.exception()) is not None:
            sys.excepthook(type(error), error, error.__traceback__)

    def _update_buttons(self) -> None:
        running = self._task is not None
        ready = self._skill is not None and self._posture is not None
        self.run_button.setEnabled(not running and ready and bool(self.command.text().strip()))
        self.stop_button.setEnabled(running)
        self.command.setReadOnly(running)
        self.timeout.setEnabled(not running)

    def _show_outcome(self, done: CompletedRun) -> None:
        result = done.result
        ok = result.status is RunStatus.OK
        parts = [f"{'✔' if ok else '✘'} {result.status.value}: {result.cause}"]
        parts.append(f"{result.wall_seconds:.1f} s")
        if result.peak_rss_bytes:
            parts.append(f"peak memory {format_size(result.peak_rss_bytes)}")
        parts.append(
            f"{plural(len(result.changes), 'file')} changed in workspace {done.record.workspace}"
        )
        if result.leftover_processes:
            parts.append(f"{plural(result.leftover_processes, 'process')} left over")
        self.outcome.setText(" · ".join(parts))
        set_status(self.outcome, "ok" if ok else "danger")


def _plan(
    skill: Skill, posture_id: PostureId, text: str, timeout: float, service: RunService
) -> RunPlan:
    posture = Posture(posture_id).with_limits(timeout_s=timeout)
    if posture_id is PostureId.QUICKJS:
        try:
            argv = tuple(shlex.split(text))
        except ValueError as error:
            message = f"Cannot split the command into a script and arguments: {error}."
            raise UsageError(message) from None
    else:
        argv = ("sh", "-c", text)
    run_id = new_run_id()
    workspace = service.layout.fresh_workspace(run_id)
    return RunPlan(skill.name, skill.path, posture, argv, workspace, run_id=run_id)


def _clean(text: str) -> str:
    """Drop terminal escape sequences, turn lone carriage returns into new lines, cap lines."""
    text = _ESCAPES.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    return "\n".join(line if len(line) <= MAX_LINE else line[:MAX_LINE] + "…" for line in lines)
