"""The probe lab view: what does each posture really stop, shown as a scoreboard.

`LabView` (a `PostureJobPage`) runs the probe lab (`run_lab`) under the ticked postures and shows a
table of probes by postures, each cell in words and colour (`cell_text`): contained, not contained
as documented, n/a, or a leak the posture does not admit, marked "!"; the tool tip gives the control
or evidence, `summary_sentence` counts each kind, and activating a cell opens its run in the
history.
"""

import asyncio
import re
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.executors.types import CancelToken
from workbench.postures.description import POSTURE_INFO
from workbench.postures.model import PostureId
from workbench.probes.catalogue import PROBE_BY_ID, ProbeId
from workbench.probes.lab import Cell, Scoreboard, run_lab
from workbench.probes.verdict import Verdict
from workbench.runs.record import plain_text
from workbench.runs.service import RunService
from workbench.ui.common.text import plural, tooltip
from workbench.ui.common.widgets import plain_label, set_status
from workbench.ui.postures.checks import PostureChecks
from workbench.ui.postures.job import RUN_ID, Job, PostureJobPage
from workbench.ui.theme import status_colors

DOCUMENTED_LEAK = "not contained (as documented)"
UNDOCUMENTED_LEAK = "NOT CONTAINED"
UNEXPECTED_MARK = " !"
_HINT = "Double-click a cell (or press Enter) to open its run in the history."


class LabView(PostureJobPage):
    """Posture choices and Run / Stop above, the scoreboard below, progress at the bottom.

    Signals:
        run_activated(str): the user opened the run with this id from a cell.
        lab_finished(object): the `Scoreboard` of a lab that ended (also when stopped).
    """

    lab_finished = Signal(object)

    LOCAL_QUESTION = (
        "Run the probes without a sandbox?",
        "The lab includes the local posture: there the probes run as you. They are small "
        "and bounded and touch only what the lab plants, but nothing stops them from "
        "reaching your files, your network and the secrets in your environment.",
        "Run the lab, local included",
    )
    STOPPING = "Stopping… (the lab removes what it planted)"
    FAILED = "The lab did not run"

    def __init__(
        self, service: RunService, parent: QWidget | None = None, lab_parent: Path | None = None
    ) -> None:
        super().__init__(service, parent)
        self._lab_parent = lab_parent
        self._board: Scoreboard | None = None
        self._columns: list[PostureId] = []
        self._done = 0

        self.run_button = QPushButton("Run the lab", self)
        self.run_button.setToolTip("Run every probe under every ticked posture")
        self.stop_button = QPushButton("Stop", self)
        self.stop_button.setToolTip("Stop the probe in progress and skip the rest")
        self.postures = PostureChecks("Probe", self)
        self.table = QTableWidget(len(ProbeId), 0, self)
        self.table.setAccessibleName("Probe lab scoreboard")
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        for row, probe in enumerate(ProbeId):
            header = QTableWidgetItem(PROBE_BY_ID[probe].question)
            header.setToolTip(tooltip(f"Probe {probe.value}"))
            self.table.setVerticalHeaderItem(row, header)
        self.progress = plain_label("", self)
        self.status = plain_label(
            "Each probe is a small, bounded experiment run as a recorded run. Tick postures and "
            "press Run the lab. " + _HINT,
            self,
            wrap=True,
        )
        set_status(self.status, "muted")

        buttons_row = QHBoxLayout()
        buttons_row.addWidget(self.run_button)
        buttons_row.addWidget(self.stop_button)
        buttons_row.addWidget(self.progress)
        buttons_row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.postures)
        layout.addLayout(buttons_row)
        layout.addWidget(self._results(), 1)
        layout.addWidget(self.status)
        self._connect_signals()
        self._update_buttons()

    def _connect_signals(self) -> None:
        self._connect_job_signals()

    # Public API -------------------------------------------------------------------------

    def scoreboard(self) -> Scoreboard | None:
        """The scoreboard of the last lab that ended, if any."""
        return self._board

    def _job(self, cancel: CancelToken) -> Job:
        """Every probe under every ticked posture."""
        return self._run(self.chosen(), cancel)

    # Internals --------------------------------------------------------------------------

    async def _run(self, postures: list[PostureId], cancel: CancelToken) -> None:
        self._board = None
        self._columns = postures
        self._done = 0
        self.table.clearContents()
        self.table.setColumnCount(len(postures))
        self.table.setHorizontalHeaderLabels([POSTURE_INFO[p].title for p in postures])
        self._fit_table()
        self._show_progress()
        self._show(f"Probing under {plural(len(postures), 'posture')}…", "muted")
        board = await run_lab(
            postures, self._service, cancel=cancel, on_cell=self._on_cell, parent=self._lab_parent
        )
        self._board = board
        history = self._service.history
        ids = [cell.run_id for cell in board.cells]
        self._run_records = await asyncio.to_thread(lambda: {i: history.get(i) for i in ids})
        self._show_record()
        unexpected = len(board.unexpected())
        summary = f"{summary_sentence(board)} {_HINT}"
        self._show(
            f"Stopped: {summary}" if board.interrupted else summary,
            "warning" if unexpected else "muted",
        )
        self.lab_finished.emit(board)

    def _on_cell(self, cell: Cell) -> None:
        self._done += 1
        self._show_progress()
        colors = status_colors(self.palette())
        item = QTableWidgetItem(cell_text(cell))
        item.setData(RUN_ID, cell.run_id)
        title = POSTURE_INFO[cell.posture].title
        lines = [f"{title}: {PROBE_BY_ID[cell.probe].question}", f"Verdict: {cell.verdict.value}"]
        lines.append(plain_text(cell.explanation()))
        if cell.unexpected:
            lines.append(f"Differs from the posture's description, which promises: {cell.expected}")
            font = QFont(item.font())
            font.setBold(True)
            item.setFont(font)
        if cell.verdict is Verdict.NOT_CONTAINED:
            item.setForeground(colors.danger if cell.unexpected else colors.warning)
        elif cell.unexpected:
            item.setForeground(colors.warning)
        elif cell.verdict is Verdict.CONTAINED:
            item.setForeground(colors.ok)
        else:
            item.setForeground(colors.muted)
        lines.append(f"Run {cell.run_id}: double-click or press Enter to open it")
        item.setToolTip(tooltip("\n".join(lines)))
        row = list(ProbeId).index(cell.probe)
        self.table.setItem(row, self._columns.index(cell.posture), item)

    def _show_progress(self) -> None:
        total = len(self._columns) * len(ProbeId)
        self.progress.setText(f"cell {self._done} of {total}")

    def _update_buttons(self) -> None:
        running = self.is_running()
        self.run_button.setEnabled(bool(self.chosen()) and not running)
        self.stop_button.setEnabled(running)


# A number and the word after it ("1 s", "1.5 s") stay on one line of a narrow cell.
_NUMBER_AND_UNIT = re.compile(r"(\d) (?=\w)")


def cell_text(cell: Cell) -> str:
    """A cell's answer to its row's question, e.g. "contained", "stopped: RLIMIT_CPU 1 s",
    "not contained (as documented)", "n/a: about display, not the posture", "NOT CONTAINED !"."""
    if cell.verdict is Verdict.NOT_APPLICABLE:
        text = f"n/a: {plain_text(cell.note or cell.detail)}"
    elif cell.verdict is Verdict.CONTAINED and cell.probe is ProbeId.CPU:
        text = "stopped: " + _NUMBER_AND_UNIT.sub("\\1\u00a0", plain_text(cell.detail))
    elif cell.verdict is Verdict.CONTAINED:
        text = "contained"
    else:
        text = UNDOCUMENTED_LEAK if cell.unexpected else DOCUMENTED_LEAK
    return text + (UNEXPECTED_MARK if cell.unexpected else "")


def summary_sentence(board: Scoreboard) -> str:
    """`52 cells in 33.4 s: 40 contained, 8 not contained as their postures document, 4 n/a;
    every verdict is the one its posture's description gives.`"""
    counts = {
        verdict: sum(1 for c in board.cells if c.verdict is verdict and not c.unexpected)
        for verdict in Verdict
    }
    unexpected = len(board.unexpected())
    parts = [f"{counts[Verdict.CONTAINED]} contained"]
    if counts[Verdict.NOT_CONTAINED]:
        parts.append(f"{counts[Verdict.NOT_CONTAINED]} not contained as their postures document")
    if counts[Verdict.NOT_APPLICABLE]:
        parts.append(f"{counts[Verdict.NOT_APPLICABLE]} n/a")
    if unexpected:
        parts.append(
            f"{unexpected} not as the posture's description says (marked !)"
            if unexpected == 1
            else f"{unexpected} not as the postures' descriptions say (marked !)"
        )
    lead = f"{plural(len(board.cells), 'cell')} in {board.seconds:.1f} s: {', '.join(parts)}"
    if unexpected or not board.cells:
        return f"{lead}."
    return f"{lead}; every verdict is the one its posture's description gives."
