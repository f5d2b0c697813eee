"""The live process tree of a run: PID, name, CPU, memory and command, parent above child.

`ProcessTreeView` is fed the monitor's samples (`add_sample`) and redraws the latest `ProcessTable`
at most every `REFRESH_MS`, in place (`ProcessItem`s keep selection, expansion and sort order); its
status line says what the tree cannot show (capped rows, whose pids, why no process is visible) and,
after the run, what was killed. Names and command lines are shown as plain text.
"""

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QHeaderView,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.executors.types import RunResult, RunStatus
from workbench.monitor.sample import ProcessRow, ProcessTable, ResourceSample
from workbench.ui.common.text import tooltip
from workbench.ui.common.widgets import plain_label, set_status
from workbench.ui.run.charts import format_mib, format_percent

REFRESH_MS = 400
PID, NAME, CPU, MEMORY, COMMAND = range(5)
HEADERS = ("PID", "Name", "CPU", "Memory", "Command")
SORT_ROLE = Qt.ItemDataRole.UserRole
STOPPED = {RunStatus.TIMED_OUT, RunStatus.CANCELLED}  # the workbench killed what was left
SCOPES = {  # what a table of this pid space lists, and whose pids it shows
    "host": ("", "host PIDs"),
    "container": (" in the container", "container PIDs"),  # the run's, not the session's
}


class ProcessItem(QTreeWidgetItem):
    """One process; sorts by the number (or folded text) of the sort column, then by pid."""

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.pid = pid
        self.setTextAlignment(PID, Qt.AlignmentFlag.AlignRight)
        for column in (CPU, MEMORY):
            self.setTextAlignment(column, Qt.AlignmentFlag.AlignRight)

    def show_row(self, row: ProcessRow) -> None:
        """Show `row`'s values (items render text literally; the tool tip is escaped)."""
        values = (
            (str(row.pid), row.pid),
            (row.name, row.name.casefold()),
            (format_percent(row.cpu_percent), row.cpu_percent),
            (format_mib(row.rss_bytes), row.rss_bytes),
            (row.cmdline, row.cmdline.casefold()),
        )
        for column, (text, key) in enumerate(values):
            if self.text(column) != text:
                self.setText(column, text)
                self.setData(column, SORT_ROLE, key)
        self.setToolTip(COMMAND, tooltip(row.cmdline))

    def __lt__(self, other: QTreeWidgetItem) -> bool:
        tree = self.treeWidget()
        column = tree.sortColumn() if tree is not None else PID
        mine, theirs = self.data(column, SORT_ROLE), other.data(column, SORT_ROLE)
        if mine != theirs and mine is not None and theirs is not None:
            return bool(mine < theirs)
        return self.pid < getattr(other, "pid", 0)


class ProcessTreeView(QWidget):
    """The process tree of the current run, with a status line above it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.status = plain_label("Processes: no run yet", self, wrap=True)
        self.status.setContentsMargins(0, 0, 0, 2)
        self.status.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.tree = QTreeWidget(self)
        self.tree.setAccessibleName("Processes of the run")
        self.tree.setColumnCount(len(HEADERS))
        self.tree.setHeaderLabels(HEADERS)
        self.tree.setUniformRowHeights(True)
        # At the window's smallest, the header alone (the splitter above gives it more room).
        self.tree.setMinimumHeight(self.tree.header().sizeHint().height() + 4)
        self.tree.setAlternatingRowColors(True)
        self.tree.setSortingEnabled(True)
        self.tree.sortByColumn(PID, Qt.SortOrder.AscendingOrder)
        header = self.tree.header()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # keep a command's end
        self.tree.setIndentation(14)
        advance = self.fontMetrics().horizontalAdvance
        widths = {
            PID: advance("8888888") + 3 * 14,  # the pid, a root's branch and two levels
            NAME: advance("python3.11") + 16,
            CPU: advance("100 %") + 16,
            MEMORY: advance("888 MiB") + 16,
        }
        for column, width in widths.items():
            self.tree.setColumnWidth(column, width)
        self._items: dict[int, ProcessItem] = {}
        self._table: ProcessTable | None = None  # the one shown
        self._table_t = 0.0  # when it was taken, seconds into the run
        self._pending: tuple[ProcessTable, float] | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(REFRESH_MS)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.status)
        layout.addWidget(self.tree, 1)
        self._connect_signals()

    def _connect_signals(self) -> None:
        self._timer.timeout.connect(self.on_timer_timeout)

    # Public API -------------------------------------------------------------------------

    def reset(self) -> None:
        """Empty the tree for a new run."""
        self._timer.stop()
        self._pending = None
        self._table = None
        self._items.clear()
        self.tree.clear()
        self.tree.show()
        self.status.setText("Processes: waiting for the first sample")
        set_status(self.status, "muted")

    def add_sample(self, sample: ResourceSample) -> None:
        """Take the process table `sample` carries, if any; redrawn at a calm rate."""
        if sample.tree is None:
            return
        self._pending = (sample.tree, sample.t)
        if not self._timer.isActive():
            self.on_timer_timeout()

    def finish(self, result: RunResult) -> None:
        """After the run: keep the last tree, say it is the last one and what became of it."""
        self._timer.stop()
        self._flush()
        table = self._table
        if table is None:
            self.status.setText("Processes: the run ended before a process table was taken.")
        elif not table.hidden:
            gap = max(0.0, result.wall_seconds - self._table_t)
            text = f"At the end ({gap:.1f} s before the run ended): {self._summary(table)}."
            if result.status in STOPPED and table.rows:
                cause = result.cause[:1].upper() + result.cause[1:]
                text += f" {cause}: the workbench killed the run's processes still running."
            self.status.setText(text)

    def item(self, pid: int) -> ProcessItem | None:
        """The item of the process shown with `pid`, if it is in the tree."""
        return self._items.get(pid)

    def item_count(self) -> int:
        """How many processes the tree shows."""
        return len(self._items)

    # Slots ------------------------------------------------------------------------------

    def on_timer_timeout(self) -> None:
        if self._flush():
            self._timer.start()

    # Internals --------------------------------------------------------------------------

    def _flush(self) -> bool:
        """Show the pending table; False when there was none."""
        if self._pending is None:
            return False
        (table, t), self._pending = self._pending, None
        self._table, self._table_t = table, t
        if table.hidden:
            self._items.clear()
            self.tree.clear()
            self.tree.hide()
            self.status.setText(table.hidden)
            set_status(self.status, "")
            return True
        self.tree.setUpdatesEnabled(False)
        self.tree.setSortingEnabled(False)
        try:
            self._apply(table.rows)
        finally:
            self.tree.setSortingEnabled(True)  # sorts again, by the user's column
            self.tree.setUpdatesEnabled(True)
        self.status.setText(self._summary(table))
        set_status(self.status, "")
        return True

    def _apply(self, rows: tuple[ProcessRow, ...]) -> None:
        """Update the items in place; rows come parents first."""
        gone = set(self._items)
        for row in rows:
            gone.discard(row.pid)
            item = self._items.get(row.pid)
            parent = self._items.get(row.ppid) if row.ppid != row.pid else None
            if item is None:
                item = self._items[row.pid] = ProcessItem(row.pid)
                self._attach(item, parent)
                item.setExpanded(True)
            elif item.parent() is not parent:
                expanded = item.isExpanded()
                self._detach(item)
                self._attach(item, parent)
                item.setExpanded(expanded)
            item.show_row(row)
        # Their surviving children were moved above; a gone child of a gone parent goes
        # (is deleted) with it.
        dropped = [self._items.pop(pid) for pid in gone]
        for item in dropped:
            holder = item.parent()
            if not isinstance(holder, ProcessItem) or holder.pid not in gone:
                self._detach(item)

    def _attach(self, item: ProcessItem, parent: ProcessItem | None) -> None:
        if parent is None:
            self.tree.addTopLevelItem(item)
        else:
            parent.addChild(item)

    def _detach(self, item: ProcessItem) -> None:
        parent = item.parent()
        if parent is None:
            self.tree.takeTopLevelItem(self.tree.indexOfTopLevelItem(item))
        else:
            parent.removeChild(item)

    def _summary(self, table: ProcessTable) -> str:
        scope, pids = SCOPES.get(table.pid_space, ("", table.pid_space))
        noun = "process" if table.total == 1 else "processes"
        text = f"{table.total:,} {noun}{scope}" if table.total else f"No process{scope}"
        text += f" · {pids}"
        hidden = table.total - len(table.rows)
        if hidden > 0:
            text += f" · showing {len(table.rows)}, … and {hidden} more"
        return text
