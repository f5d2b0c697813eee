"""The compare view, the teaching view: one command under several postures, side by side.

`CompareView` (a `PostureJobPage`) runs the command the user edits under each ticked posture in
turn, each in a fresh workspace with the skill's built environment for the posture (`run_compare`),
and fills one table column per posture as its run ends: status and cause, the difference (for a
run that failed where another ran it ok, the control that made it fail, redone as each run
ends), time, peaks, changed files, the controls the effective card says were held, and the
posture's warnings. Activating a cell opens that run in the history.
"""

import asyncio
from dataclasses import replace

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.environments.resolve import built_for
from workbench.errors import WorkbenchError
from workbench.executors.types import CancelToken, RunStatus
from workbench.postures.description import POSTURE_INFO
from workbench.postures.model import DEFAULT_LIMITS, Availability, Posture, PostureId
from workbench.runs.compare import (
    SKILL_ITSELF,
    CompareRequest,
    compare_row,
    default_postures,
    run_compare,
    shell_command,
)
from workbench.runs.record import RunRecord
from workbench.runs.service import RunService
from workbench.skills import Skill
from workbench.ui.common.text import format_size, plural
from workbench.ui.common.widgets import plain_label, set_status
from workbench.ui.history.rows import cause_text, status_colour, status_word
from workbench.ui.postures.checks import PostureChecks
from workbench.ui.postures.job import RUN_ID, Job, PostureJobPage
from workbench.ui.theme import status_colors

FIGURES = (
    "Status",
    "Cause",
    "Difference",
    "Wall time",
    "Peak memory",
    "Peak processes",
    "Changed files",
    "Controls",
    "Warnings",
)

HINT = (
    "Tick postures and press Compare. Double-click a cell (or press Enter) to open its run in "
    "the history."
)


class CompareView(PostureJobPage):
    """Posture choices and the command above, the side-by-side table below.

    Signals:
        run_activated(str): the user opened the run with this id from a cell.
        compare_finished(object): the list of `RunRecord`s of a comparison that ended.
    """

    compare_finished = Signal(object)

    LOCAL_QUESTION = (
        "Run without a sandbox?",
        "The comparison includes the local posture: there the command runs as you, with "
        "access to all your files, your network and every secret in your environment.",
        "Compare, local included",
    )
    FAILED = "Not compared"

    def __init__(self, service: RunService, parent: QWidget | None = None) -> None:
        super().__init__(service, parent)
        self._skill: Skill | None = None
        self._records: list[RunRecord] = []

        self.skill_label = plain_label("No skill selected", self)
        self.command = QLineEdit(self)
        self.command.setAccessibleName("Command to compare")
        self.command.setPlaceholderText("Command to run under each posture (sh -c)")
        self.timeout = QDoubleSpinBox(self)
        self.timeout.setRange(1, 3600)
        self.timeout.setDecimals(0)
        self.timeout.setSuffix(" s timeout")
        self.timeout.setValue(DEFAULT_LIMITS.timeout_s)
        self.timeout.setAccessibleName("Timeout in seconds for each run")
        self.run_button = QPushButton("Compare", self)
        self.run_button.setToolTip("Run the command under every ticked posture (Ctrl+Return)")
        self.stop_button = QPushButton("Stop", self)
        self.stop_button.setToolTip("Stop the run in progress and skip the rest (Ctrl+.)")
        self.postures = PostureChecks("Compare under", self)
        self.table = QTableWidget(len(FIGURES), 0, self)
        self.table.setAccessibleName("Comparison results")
        self.table.setVerticalHeaderLabels(list(FIGURES))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.status = plain_label(HINT, self, wrap=True)
        set_status(self.status, "muted")

        command_row = QHBoxLayout()
        command_row.addWidget(self.skill_label)
        command_row.addWidget(self.command, 1)
        command_row.addWidget(self.timeout)
        command_row.addWidget(self.run_button)
        command_row.addWidget(self.stop_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(command_row)
        layout.addWidget(self.postures)
        layout.addWidget(self._results(), 1)
        layout.addWidget(self.status)
        self._connect_signals()
        self._update_buttons()

    def _connect_signals(self) -> None:
        self._connect_job_signals()
        self.command.textChanged.connect(self._update_buttons)
        self.command.returnPressed.connect(self.on_run_button_clicked)

    # Public API -------------------------------------------------------------------------

    def set_availability(self, availability: dict[PostureId, Availability]) -> None:
        """Offer the postures that can run here, ticking those that can run the command."""
        super().set_availability(availability)
        self._tick_defaults()

    def set_skill(self, skill: Skill | None) -> None:
        """Compare commands of `skill` from now on; the command field takes its suggestion,
        the postures that can run it are ticked when it differs in kind (.js or not), and the
        last comparison (another skill's) is cleared unless it is still running."""
        if skill is not None and (self._skill is None or skill.path != self._skill.path):
            was_js = self._runs_js()
            self.command.setText(skill.command or "")
            self.command.setCursorPosition(0)
            if self._skill is None or self._runs_js() != was_js:
                self._tick_defaults()
            if not self.is_running():  # another skill's comparison is not this one's
                self._records = []
                self.table.setColumnCount(0)
                self._show(HINT, "muted")
        self._skill = skill
        self.skill_label.setText(f"{skill.name}:" if skill is not None else "No skill selected")
        self._update_buttons()

    def records(self) -> list[RunRecord]:
        """The records of the last comparison so far."""
        return list(self._records)

    def _job(self, cancel: CancelToken) -> Job | None:
        """The comparison of the command under every ticked posture."""
        if self._skill is None:
            return None
        try:
            text = self.command.text().strip()
            runs = tuple(
                (Posture(p).with_limits(timeout_s=self.timeout.value()), shell_command(p, text))
                for p in self.chosen()
            )
        except WorkbenchError as error:
            self._show(str(error), "danger")
            return None
        request = CompareRequest(self._skill.name, self._skill.path, runs)
        return self._compare(request, cancel)

    # Internals --------------------------------------------------------------------------

    def _argv(self) -> tuple[str, ...]:
        """The command as QuickJS would split it (empty when its quoting is broken)."""
        try:
            return shell_command(PostureId.QUICKJS, self.command.text().strip())
        except WorkbenchError:
            return ()

    def _runs_js(self) -> bool:
        argv = self._argv()
        return bool(argv) and argv[0].endswith(".js")

    def _tick_defaults(self) -> None:
        self.postures.tick(default_postures(self.postures.usable(), self._argv()))

    async def _compare(self, request: CompareRequest, cancel: CancelToken) -> None:
        self._records = []
        self.table.setColumnCount(len(request.runs))
        titles = [POSTURE_INFO[posture.id].title for posture, _ in request.runs]
        self.table.setHorizontalHeaderLabels(titles)
        for column in range(len(request.runs)):
            for row in range(len(FIGURES)):
                self.table.setItem(row, column, _cell("waiting…" if row == 0 else ""))
        if self._skill is not None:
            store = self._service.layout.environment_store()
            postures = [posture for posture, _ in request.runs]
            environments = await asyncio.to_thread(built_for, self._skill, postures, store)
            request = replace(request, environments=environments)
        self._set_head(0, "running…")
        self._fit_table()
        self._show(f"Comparing under {plural(len(request.runs), 'posture')}…", "muted")
        records = await run_compare(self._service, request, cancel, self._on_record)
        stopped = len(records) < len(request.runs)
        for column in range(len(records), len(request.runs)):
            self._set_head(column, "skipped (stopped)")
        ok = sum(1 for r in records if r.outcome == RunStatus.OK)
        self._show(
            f"{'Stopped: ' if stopped else ''}{ok} of {plural(len(records), 'run')} ended ok. "
            "Double-click a cell (or press Enter) to open its run in the history.",
            "muted",
        )
        self.compare_finished.emit(records)

    def _on_record(self, record: RunRecord) -> None:
        column = len(self._records)
        self._records.append(record)
        self._run_records[record.run_id] = record
        row = compare_row(record, self._records)
        wall = "-" if not row.wall_seconds else f"{row.wall_seconds:.2f} s"
        memory = "-" if not row.peak_rss_bytes else format_size(row.peak_rss_bytes)
        processes = str(row.peak_processes) if row.peak_processes else "-"
        if wall != "-" and not row.peak_processes:  # it ran, but the host cannot count them
            processes = "not visible from the host"
        result = record.result or {}
        checks = (result.get("card") or {}).get("checks") or []
        controls = "\n".join(f"{'✓' if held else '✗'} {text}" for text, held in checks)
        said = "\n".join(_warning_line(w) for w in result.get("warnings") or [])
        values = (
            status_word(record),
            cause_text(record),
            row.difference,
            wall,
            memory,
            processes,
            str(row.changes),
            controls or "none",
            said,
        )
        for index, value in enumerate(values):
            item = _cell(value)
            item.setData(RUN_ID, row.run_id)
            item.setToolTip(f"Run {row.run_id}: double-click or press Enter to open it")
            if index == 0:
                item.setForeground(status_colour(record, status_colors(self.palette())))
            self.table.setItem(index, column, item)
        if column + 1 < self.table.columnCount():
            self._set_head(column + 1, "running…")
        self._show_differences()
        self._fit_table()

    def _set_head(self, column: int, text: str) -> None:
        """Say `text` in the first row of `column` (a posture waiting, running or skipped)."""
        item = self.table.item(0, column)
        if item is not None:
            item.setText(text)

    def _show_differences(self) -> None:
        """The difference row again: a run that ends ok can explain the failures before it."""
        line = FIGURES.index("Difference")
        colours = status_colors(self.palette())
        for column, record in enumerate(self._records):
            item = self.table.item(line, column)
            if item is None:
                continue
            text = compare_row(record, self._records).difference
            item.setText(text)
            control = bool(text) and text != SKILL_ITSELF
            item.setForeground(colours.danger if control else self.palette().text().color())

    def _update_buttons(self) -> None:
        running = self.is_running()
        ready = (
            self._skill is not None and bool(self.chosen()) and bool(self.command.text().strip())
        )
        self.run_button.setEnabled(ready and not running)
        self.stop_button.setEnabled(running)
        self.command.setReadOnly(running)
        self.timeout.setEnabled(not running)


def _cell(text: str) -> QTableWidgetItem:
    """A cell whose lines read from its top left, as a card's do."""
    item = QTableWidgetItem(text)
    item.setTextAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
    return item


def _warning_line(warning: dict[str, str]) -> str:
    """A posture warning as the posture card shows it: `ℹ text`, `⚠ CAUTION: text`."""
    if warning["severity"] == "info":
        return f"ℹ {warning['text']}"
    return f"⚠ {warning['severity'].upper()}: {warning['text']}"
