"""The history view: past runs, one run's record, re-run, export a report, restore a workspace.

`HistoryView` lists the newest runs a page at a time, those `RunFilters` keep (skill, posture,
status and origin, asked of the history, and words), a comparison's or lab run's runs folded under
their session's row; it shows the selected run's report (its diagnosis included), and offers
Re-run (same command, posture, limits and workspace, streamed into the record pane, Stop with
Ctrl+., linked to the run it re-ran), Re-run as suggested (with the change a diagnosis suggests),
Export (HTML, Markdown or JSON), Restore (asking first when the workspace changed since) and the
`KeepControls` retention setting (`apply_retention()`, which the window calls at start and after
each run); blocking work runs in threads in its `Tasks`, and its `WorkbenchError`s show in the
view's status line.
"""

import asyncio
import codecs
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QFontDatabase, QKeySequence, QShortcut, QTextCursor
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.errors import WorkbenchError, WorkspaceError
from workbench.executors.types import CancelToken, OutputChunk
from workbench.postures.description import posture_title
from workbench.runs.diagnosis import Change
from workbench.runs.history import RunFilter
from workbench.runs.record import RunRecord, RunState, by_session, plain_text
from workbench.runs.reports import ExportFormat, export_record
from workbench.runs.rerun import rerun_plan
from workbench.runs.retention import prune
from workbench.runs.service import RunService
from workbench.runs.undo import restore_run
from workbench.ui.common.tasks import Tasks
from workbench.ui.common.text import plural
from workbench.ui.common.widgets import ask, plain_label, remember_sizes, set_status
from workbench.ui.history.filters import RunFilters
from workbench.ui.history.keep import KeepControls
from workbench.ui.history.rows import (
    COLUMNS,
    RUN_ID,
    SESSION,
    cause_text,
    matches,
    run_item,
    session_item,
    status_look,
    status_word,
)
from workbench.ui.theme import status_colors

EXPORT_FILTERS = {
    "HTML report (*.html)": ExportFormat.HTML,
    "Markdown report (*.md)": ExportFormat.MD,
    "JSON record (*.json)": ExportFormat.JSON,
}
PAGE = 200  # runs read from the history at a time


class HistoryView(QWidget):
    """Past runs on the left, the selected run's record on the right, actions above."""

    def __init__(
        self, service: RunService, settings: QSettings, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._service = service
        self._records: dict[str, RunRecord] = {}
        self._loaded: list[RunRecord] = []
        self._total = 0  # runs in the history
        self._matching = 0  # of them, those the filters' choices keep
        self._limit = PAGE
        self._reading = asyncio.Lock()  # one refresh at a time (see `refresh`)
        self.tasks = Tasks(self, explain=self.on_tasks_explain)
        self._dialog: QFileDialog | None = None
        self._question: QMessageBox | None = None
        self._rerun_cancel: CancelToken | None = None

        self.refresh_button = QPushButton("Refresh", self)
        self.refresh_button.setToolTip("Read the run history again")
        self.rerun_button = QPushButton("Re-run", self)
        self.rerun_button.setToolTip(
            "Run the same command under the same posture and limits again, in the same "
            "workspace; its output shows on the right"
        )
        self.fix_button = QPushButton("Re-run as suggested", self)
        self.fix_button.setToolTip(
            "Run the same command again with the change its diagnosis suggests"
        )
        self.stop_button = QPushButton("Stop", self)
        self.stop_button.setToolTip("Stop the re-run and everything it started (Ctrl+.)")
        self.export_button = QPushButton("Export report…", self)
        self.export_button.setToolTip("Save this run's report as HTML, Markdown or JSON")
        self.restore_button = QPushButton("Restore workspace…", self)
        self.restore_button.setAccessibleName("Restore workspace")
        self.restore_button.setToolTip("Put the workspace back as it was before this run")
        self.filters = RunFilters(self)
        self.keep = KeepControls(settings, self)
        self.older_button = QPushButton(f"Show {PAGE} older runs", self)
        self.older_button.setToolTip("Read older runs from the history too")
        self._stop_shortcut = QShortcut(QKeySequence("Ctrl+."), self)
        self.runs = QTreeWidget(self)
        self.runs.setAccessibleName("Past runs")
        self.runs.setHeaderLabels(list(COLUMNS))
        self.runs.setUniformRowHeights(True)
        self.runs.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.runs.setAlternatingRowColors(True)
        header = self.runs.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(COLUMNS.index("Cause"), QHeaderView.ResizeMode.Stretch)
        for column in ("Posture", "Skill"):  # a session's lists would widen them without end
            header.setSectionResizeMode(COLUMNS.index(column), QHeaderView.ResizeMode.Interactive)
            header.resizeSection(COLUMNS.index(column), 120)
        self.details = QPlainTextEdit(self)
        self.details.setReadOnly(True)
        self.details.setAccessibleName("Run record")
        self.details.setPlaceholderText("Select a run to see its record.")
        self.details.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.status = plain_label("", self, wrap=True)
        set_status(self.status, "muted")

        buttons = QHBoxLayout()
        for button in (
            self.refresh_button,
            self.rerun_button,
            self.fix_button,
            self.stop_button,
            self.export_button,
            self.restore_button,
        ):
            buttons.addWidget(button)
        buttons.addStretch(1)
        footer = QHBoxLayout()
        footer.addWidget(self.status, 1)
        footer.addWidget(self.older_button)
        footer.addWidget(self.keep)
        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self.runs)
        splitter.addWidget(self.details)
        splitter.setSizes([760, 500])
        remember_sizes(splitter, settings, "history/splitter")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(buttons)
        layout.addWidget(self.filters)
        layout.addWidget(splitter, 1)
        layout.addLayout(footer)
        self._connect_signals()
        self._update_buttons()

    def _connect_signals(self) -> None:
        self.refresh_button.clicked.connect(self.on_refresh_button_clicked)
        self.rerun_button.clicked.connect(self.on_rerun_button_clicked)
        self.fix_button.clicked.connect(self.on_fix_button_clicked)
        self.stop_button.clicked.connect(self.stop)
        self._stop_shortcut.activated.connect(self.stop)
        self.filters.changed.connect(self.on_filters_changed)
        self.filters.words_changed.connect(self.on_filters_words_changed)
        self.keep.prune_requested.connect(self.on_keep_prune_requested)
        self.older_button.clicked.connect(self.on_older_button_clicked)
        self.export_button.clicked.connect(self.on_export_button_clicked)
        self.restore_button.clicked.connect(self.on_restore_button_clicked)
        self.runs.currentItemChanged.connect(self.on_runs_current_item_changed)
        self.tasks.busy_changed.connect(self._update_buttons)

    # Public API -------------------------------------------------------------------------

    async def refresh(self) -> None:
        """Read the newest runs the filters keep from the history again, keeping the selected
        run selected. Refreshes run one after another, each with the filters as they are when
        it starts, so an older, slower read never replaces a newer one."""
        async with self._reading:
            history, where, limit = self._service.history, self.filters.where(), self._limit

            def read() -> tuple[list[RunRecord], int, int, list[str], list[str]]:
                return (
                    history.recent(limit, where),
                    history.count(where),
                    history.count(),
                    history.values("skill_name"),
                    history.values("posture"),
                )

            loaded, matching, total, skills, postures = await asyncio.to_thread(read)
            self._loaded, self._matching, self._total = loaded, matching, total
            self.filters.set_choices(skills, postures)
            self._show_runs()

    async def show_run(self, run_id: str) -> None:
        """Read the history again and select the run `run_id` (dropping the filters that
        would hide it)."""
        await self.refresh()
        if not self.select_run(run_id) and self.filters.is_filtering():
            self.filters.blockSignals(True)
            self.filters.clear()
            self.filters.blockSignals(False)
            await self.refresh()
            self.select_run(run_id)

    def select_run(self, run_id: str) -> bool:
        """Select the run `run_id` if it is listed (unfolding its session); returns whether
        it is."""
        for item in self._items():
            if item.data(0, RUN_ID) == run_id:
                if (session := item.parent()) is not None:
                    session.setExpanded(True)
                self.runs.setCurrentItem(item)
                return True
        return False

    def current_record(self) -> RunRecord | None:
        """The selected run's record (None for a session's row)."""
        item = self.runs.currentItem()
        run_id = None if item is None else item.data(0, RUN_ID)
        return None if run_id is None else self._records.get(run_id)

    async def apply_retention(self) -> None:
        """Prune the history as the Keep setting says (nothing when it keeps every run)."""
        retention = self.keep.retention()
        if retention.keeps_all:
            return
        layout, history = self._service.layout, self._service.history
        report = await asyncio.to_thread(prune, layout, history, retention)
        if report.removed:
            await self.refresh()
            self._say(f"Keeping {retention.describe()}: {report.sentence()}", "muted")

    async def rerun(self, record: RunRecord, change: Change | None = None) -> RunRecord:
        """Run `record`'s command again under its posture and limits (with `change` made), in
        its workspace; its output streams into the record pane until it ends (or `stop()`
        ends it)."""
        plan = await asyncio.to_thread(rerun_plan, record, change or Change(), self._service.layout)
        run_id = plan.run_id
        title = posture_title(plan.posture.id)
        self._rerun_cancel = cancel = CancelToken()
        self._update_buttons()
        self.runs.setEnabled(False)  # the record pane shows the re-run's output meanwhile
        self.details.setPlainText(
            f"Re-running {record.skill_name} under {title} (Stop or Ctrl+. ends it and all it "
            "started)…\n\n"
        )
        self._say(f"Re-running {record.run_id} under {title}…", "muted")
        sink = _OutputSink(self.details)
        try:
            done = await self._service.run_once(plan, sink, cancel)
            again = done.record
        except WorkbenchError:
            again = await asyncio.to_thread(self._service.history.get, run_id)
        finally:
            self._rerun_cancel = None
            self.runs.setEnabled(True)
            self._update_buttons()
        await self.show_run(again.run_id)
        sentence = f"Re-run {again.run_id}: {status_word(again)}: {cause_text(again)}"
        self._say(sentence, status_look(again))
        return again

    def stop(self) -> None:
        """Stop the re-run in progress (the executor kills everything it started)."""
        if self._rerun_cancel is not None and not self._rerun_cancel.cancelled:
            self._rerun_cancel.cancel()
            self._say("Stopping: killing the command and all it started…", "muted")

    async def restore(self, record: RunRecord, force: bool = False) -> None:
        """Restore `record`'s workspace; a refusal (it changed since) asks to force it."""
        try:
            layout = self._service.layout
            report = await asyncio.to_thread(restore_run, layout, record, force=force)
        except WorkspaceError as error:
            if force:
                raise
            self._ask(
                "Restore anyway?",
                str(error),
                "Restore and lose those changes",
                lambda: self.tasks.spawn(self.restore(record, force=True)),
            )
            return
        state = "Restored" if report.complete else "Partly restored"
        notes = "".join(f" {note}" for note in report.notes)
        text = f"{state} {record.workspace} as before run {record.run_id}.{notes}"
        self._say(text, "ok" if report.complete else "warning")

    async def export(self, record: RunRecord, path: Path, fmt: ExportFormat) -> None:
        """Write `record`'s report in `fmt` to `path`."""
        text = await asyncio.to_thread(export_record, record, fmt, self._service.layout.blobs)
        try:
            await asyncio.to_thread(path.write_text, text, encoding="utf-8")
        except OSError as error:
            raise WorkspaceError(f"Cannot write {path}: {error.strerror}.") from None
        self._say(f"Wrote the report of run {record.run_id} to {path}.", "ok")

    def export_dialog(self) -> QFileDialog | None:
        """The open "export report" save dialog, if one is open."""
        return self._dialog

    def question(self) -> QMessageBox | None:
        """The open question (local re-run, forced restore), if one is open."""
        return self._question

    async def shutdown(self) -> None:
        """End every task this view started."""
        await self.tasks.close()

    # Slots ------------------------------------------------------------------------------

    def on_refresh_button_clicked(self) -> None:
        self.tasks.spawn(self.refresh())

    def on_older_button_clicked(self) -> None:
        self._limit += PAGE
        self.tasks.spawn(self.refresh())

    def on_filters_changed(self) -> None:
        self._limit = PAGE
        self.tasks.spawn(self.refresh())

    def on_filters_words_changed(self) -> None:
        self._show_runs()

    def on_keep_prune_requested(self) -> None:
        self.tasks.spawn(self.apply_retention())

    def on_runs_current_item_changed(self, item: QTreeWidgetItem | None) -> None:
        record = self.current_record() if item is not None else None
        if self._rerun_cancel is None:  # else the pane shows the re-run's output
            if record is not None:
                text = export_record(record, ExportFormat.TEXT)
            else:
                text = _session_text(item) if item is not None else ""
            self.details.setPlainText(text)
        self._update_buttons()

    def on_rerun_button_clicked(self) -> None:
        record = self.current_record()
        if record is not None:
            self._rerun_asking(record, None)

    def on_fix_button_clicked(self) -> None:
        record = self.current_record()
        change = _suggested(record)
        if record is not None and change is not None:
            self._rerun_asking(record, change)

    def on_restore_button_clicked(self) -> None:
        record = self.current_record()
        if record is not None:
            self.tasks.spawn(self.restore(record))

    def on_export_button_clicked(self) -> None:
        record = self.current_record()
        if record is None or self._dialog is not None:
            return
        dialog = QFileDialog(self, "Export Run Report")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setNameFilters(list(EXPORT_FILTERS))
        dialog.selectFile(f"run-{record.run_id}.html")
        dialog.filterSelected.connect(self.on_dialog_filter_selected)
        dialog.fileSelected.connect(
            lambda path: self.on_dialog_file_selected(record, dialog.selectedNameFilter(), path)
        )
        dialog.finished.connect(self.on_dialog_finished)
        self._dialog = dialog
        dialog.open()

    def on_dialog_filter_selected(self, name_filter: str) -> None:
        if self._dialog is not None:
            suffix = EXPORT_FILTERS[name_filter].value
            self._dialog.setDefaultSuffix(suffix)

    def on_dialog_file_selected(self, record: RunRecord, name_filter: str, path: str) -> None:
        target = Path(path)
        by_suffix = {fmt.value: fmt for fmt in EXPORT_FILTERS.values()}
        fmt = by_suffix.get(target.suffix.lstrip(".").lower(), EXPORT_FILTERS.get(name_filter))
        self.tasks.spawn(self.export(record, target, fmt or ExportFormat.HTML))

    def on_dialog_finished(self, _result: int) -> None:
        if self._dialog is not None:
            self._dialog.deleteLater()
            self._dialog = None

    # Internals --------------------------------------------------------------------------

    def on_question_finished(self, _result: int) -> None:
        self._question = None

    def on_tasks_explain(self, error: WorkbenchError) -> None:
        self._say(str(error), "danger")

    def _rerun_asking(self, record: RunRecord, change: Change | None) -> None:
        """Re-run `record` (with `change`); one that runs locally asks first."""
        local = (change.posture if change and change.posture else record.posture) == "local"
        if not local:
            self.tasks.spawn(self.rerun(record, change))
            return
        self._ask(
            "Run without a sandbox?",
            "The re-run uses the local posture: the command runs as you, with access to all "
            "your files, your network and every secret in your environment.",
            "Re-run locally — no sandbox",
            lambda: self.tasks.spawn(self.rerun(record, change)),
        )

    def _show_runs(self) -> None:
        """List the loaded runs the words keep, each session's under its row, keeping the
        selected run (and the sessions unfolded) as they were."""
        selected = self.current_record()
        unfolded = {item.data(0, SESSION) for item in self._items() if item.isExpanded()} - {None}
        words = self.filters.words()
        shown = [record for record in self._loaded if matches(record, words)]
        self._records = {record.run_id: record for record in shown}
        self.runs.clear()
        colours = status_colors(self.palette())
        for session, records in by_session(shown):
            if session is None:
                self.runs.addTopLevelItem(run_item(records[0], colours))
                continue
            group = session_item(records)
            self.runs.addTopLevelItem(group)
            group.addChildren([run_item(record, colours) for record in records])
            group.setExpanded(session in unfolded)
        if selected is None or not self.select_run(selected.run_id):
            self.on_runs_current_item_changed(None)
        self._say(self._count_sentence(len(shown)), "muted")
        self.older_button.setVisible(len(self._loaded) < self._matching)

    def _count_sentence(self, shown: int) -> str:
        """`Showing 12 of the newest 200 of 368 runs in the history.`; with filters, `Showing
        3 of 40 runs that match, of 368 in the history.`"""
        loaded, matching = len(self._loaded), plural(self._matching, "run")
        listed = f"the newest {loaded:,} of {matching}" if loaded < self._matching else matching
        if self.filters.where() != RunFilter():
            listed += f" that match, of {self._total:,} in the history"
        else:
            listed += " in the history"
        if shown == loaded:
            return f"{listed[0].upper()}{listed[1:]}."
        return f"Showing {shown:,} of {listed}."

    def _items(self) -> list[QTreeWidgetItem]:
        """Every row: the top-level ones and the runs under each session's row."""
        found = []
        for item in _children(self.runs.invisibleRootItem()):
            found += [item, *_children(item)]
        return found

    def _ask(self, title: str, text: str, accept: str, then: Callable[[], object]) -> None:
        if self._question is None:
            self._question = ask(self, title, text, accept, then)
            self._question.finished.connect(self.on_question_finished)

    def _say(self, text: str, status: str) -> None:
        self.status.setText(text)
        set_status(self.status, status)

    def _update_buttons(self) -> None:
        record = self.current_record()
        busy = self.tasks.busy()
        finished = record is not None and record.state is not RunState.RUNNING
        self.refresh_button.setEnabled(not busy)
        self.older_button.setEnabled(not busy)
        self.rerun_button.setEnabled(finished and not busy)
        change = _suggested(record)
        self.fix_button.setEnabled(change is not None and not busy)
        self.fix_button.setVisible(change is not None)  # the row stays narrow without it
        self.fix_button.setToolTip(
            f"Run the same command again {change.words()}"
            if change is not None
            else "Its diagnosis suggests no change to re-run with"
        )
        self.stop_button.setEnabled(self._rerun_cancel is not None)
        self.restore_button.setEnabled(finished and not busy)
        self.export_button.setEnabled(record is not None)


def _suggested(record: RunRecord | None) -> Change | None:
    """The change `record`'s diagnosis suggests, if the app can make it."""
    diagnosis = None if record is None else record.diagnosis
    change = None if diagnosis is None else diagnosis.change
    return None if change is None or change.build_env else change


def _session_text(item: QTreeWidgetItem) -> str:
    """What a session's row says, then one line per run under it."""
    lines = [item.text(COLUMNS.index("Cause")), f"Session {item.data(0, SESSION)}", ""]
    for run in _children(item):
        cells = [run.text(COLUMNS.index(name)) for name in ("Started", "Posture", "Status")]
        lines.append(f"{'  '.join(cells)}  {run.text(COLUMNS.index('Cause'))}")
    return "\n".join([*lines, "", "Select a run to see its record."])


def _children(item: QTreeWidgetItem) -> list[QTreeWidgetItem]:
    return [child for i in range(item.childCount()) if (child := item.child(i)) is not None]


class _OutputSink:
    """Appends a run's output to a text pane as it comes, control characters made visible."""

    def __init__(self, pane: QPlainTextEdit) -> None:
        self._pane = pane
        self._decoders: dict[str, codecs.IncrementalDecoder] = {}

    def __call__(self, chunk: OutputChunk) -> None:
        decoder = self._decoders.setdefault(
            chunk.stream, codecs.getincrementaldecoder("utf-8")(errors="replace")
        )
        cursor = self._pane.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(plain_text(decoder.decode(chunk.data)))
