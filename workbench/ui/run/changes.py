"""The workspace changes of a finished run: a tree with badges, the selected file's diff, Restore.

`ChangesView` lists a run's `FileChange`s under their folders with a badge and sizes, diffs the
selected file in a thread into a `DiffView`, and offers Restore, naming first what will be lost and
asking again when the workspace changed after the run; during a run, `watch()` lists the paths that
changed so far (stat only, no hashing). Paths are hostile text and are shown through `path_text`.
"""

import asyncio
import contextlib
import time
from functools import partial
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.errors import WorkbenchError, WorkspaceError
from workbench.runs.service import CompletedRun, RunService
from workbench.runs.undo import restore_run
from workbench.ui.common.tasks import Tasks
from workbench.ui.common.text import format_size, plural, tooltip
from workbench.ui.common.widgets import ask, plain_label, set_status
from workbench.ui.run.diff import DiffView
from workbench.ui.theme import StatusColors, status_colors
from workbench.workspace.changes import ChangeKind, EntryType, FileChange, path_text
from workbench.workspace.diff import HARD_MAX_BYTES, TextDiff, diff_snapshots, text_diff
from workbench.workspace.restore import RestoreReport
from workbench.workspace.snapshot import Snapshot, SnapshotLimits, take_snapshot

BADGES = {
    ChangeKind.ADDED: ("A", "added", "ok"),
    ChangeKind.MODIFIED: ("M", "modified", "warning"),
    ChangeKind.DELETED: ("D", "deleted", "danger"),
    ChangeKind.TYPE_CHANGED: ("T", "type changed", "warning"),
    ChangeKind.MODE_CHANGED: ("P", "permissions changed", "muted"),
}
CHANGE_ROLE = Qt.ItemDataRole.UserRole
MAX_LISTED_LOSSES = 8
WATCH_MS = 500
LIVE_LIMITS = SnapshotLimits(max_entries=20_000, max_hash_bytes=0)  # stat only, no hashing
MAX_LIVE_ITEMS = 500


def summary(changes: tuple[FileChange, ...]) -> str:
    """`3 changes: 1 added · 2 modified`, or `No changes in the workspace.`"""
    if not changes:
        return "No changes in the workspace."
    counts = [
        f"{n} {BADGES[kind][1]}"
        for kind in ChangeKind
        if (n := sum(1 for c in changes if c.kind is kind))
    ]
    return f"{plural(len(changes), 'change')}: " + " · ".join(counts)


def losses(changes: tuple[FileChange, ...]) -> list[str]:
    """What a restore throws away or brings back, one plain sentence per path."""
    verbs = {
        ChangeKind.ADDED: "created by the run, will be deleted",
        ChangeKind.MODIFIED: "its current content will be replaced by the old one",
        ChangeKind.DELETED: "deleted by the run, will come back",
        ChangeKind.TYPE_CHANGED: "will be put back as it was",
        ChangeKind.MODE_CHANGED: "its permissions will be put back",
    }
    return [f"{path_text(change.path)}: {verbs[change.kind]}" for change in changes]


class ChangesView(QWidget):
    """Changed paths of the last run, their diffs, and the Restore workspace action."""

    def __init__(self, service: RunService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._service = service
        self._done: CompletedRun | None = None
        self.tasks = Tasks(self)
        self._shown: FileChange | None = None
        self._confirm: QMessageBox | None = None
        self._watched: Path | None = None
        self._watch_started = 0.0
        self._baseline: Snapshot | None = None
        self._first_seen: dict[str, float] = {}
        self._live_shown: tuple[tuple[str, ChangeKind], ...] = ()
        self._polling = False
        self._watch_timer = QTimer(self)
        self._watch_timer.setInterval(WATCH_MS)

        self.counts = plain_label("No run yet.", self)
        self.restore_button = QPushButton("Restore workspace…", self)
        self.restore_button.setAccessibleName("Restore workspace")
        self.restore_button.setToolTip("Put the workspace back as it was before this run")
        self.restore_button.setEnabled(False)
        self.restore_status = plain_label("", self, wrap=True)
        self.tree = QTreeWidget(self)
        self.tree.setHeaderLabels(["Path", "Change", "Size"])
        self.tree.setAccessibleName("Changed files")
        self.tree.setUniformRowHeights(True)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        header = self.tree.header()
        header.setStretchLastSection(False)  # the path gives way; change and size stay whole
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in (1, 2):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.diff = DiffView(self)

        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.addWidget(self.counts, 1)
        head.addWidget(self.restore_button)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.setChildrenCollapsible(False)
        split.addWidget(self.tree)
        split.addWidget(self.diff)
        split.setStretchFactor(1, 2)
        split.setSizes([340, 610])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(head)
        layout.addWidget(self.restore_status)
        layout.addWidget(split, 1)
        self.restore_status.hide()
        self._connect_signals()

    def _connect_signals(self) -> None:
        self.tree.currentItemChanged.connect(self.on_tree_current_item_changed)
        self.restore_button.clicked.connect(self.on_restore_button_clicked)
        self.diff.show_anyway.connect(self.on_diff_show_anyway)
        self._watch_timer.timeout.connect(self.on_watch_timer_timeout)

    # Public API -------------------------------------------------------------------------

    def set_run(self, done: CompletedRun | None, waiting: str = "Running…") -> None:
        """Show the changes of a finished run (None: clear, saying `waiting` instead, e.g.
        while the next one runs)."""
        self._done = done
        self._shown = None
        self.tree.clear()
        self.restore_status.hide()
        changes = done.result.changes if done is not None else ()
        self.counts.setText(summary(changes) if done is not None else waiting)
        self.restore_button.setEnabled(bool(changes))
        self.diff.show_placeholder("", "Select a changed file to see its diff.")
        items: dict[str, QTreeWidgetItem] = {}
        for change in changes:
            item = self._item(change.path, items)
            _describe(item, change, status_colors(self.palette()))
        self.tree.expandAll()
        first = next((c for c in changes if c.after_type is EntryType.FILE), None)
        first = first or (changes[0] if changes else None)
        if first is not None:
            self.tree.setCurrentItem(items[first.path])

    async def watch(self, workspace: Path) -> None:
        """Before a run starts: note the workspace as it is (a cheap stat-only walk), then, while
        the run goes, list the paths that change from it. Awaited before the run starts, so a
        write the command makes at once is a change, not part of the baseline."""
        self.set_run(None)
        self._watched, self._watch_started = workspace, time.monotonic()
        self._baseline, self._first_seen, self._live_shown = None, {}, ()
        with contextlib.suppress(WorkspaceError):
            self._baseline = await asyncio.to_thread(_before_run, workspace)
        self._watch_timer.start()

    def stop_watching(self) -> None:
        """The run ended: stop the live walks (`set_run` then shows the exact changes)."""
        self._watch_timer.stop()
        self._watched = None

    async def settle(self) -> None:
        """Wait for the diffs and restores in progress (for tests and screenshots)."""
        await self.tasks.settle()

    def restore_now(self) -> "asyncio.Task[None] | None":
        """Restore the workspace without asking (what a confirmed Restore does)."""
        if self._done is None:
            return None
        self.restore_button.setEnabled(False)
        return self.tasks.spawn(self._restore(self._done))

    # Slots ------------------------------------------------------------------------------

    def on_watch_timer_timeout(self) -> None:
        if self._watched is not None and not self._polling:
            self.tasks.spawn(self._poll(self._watched))

    def on_tree_current_item_changed(self, item: QTreeWidgetItem | None, _old: object) -> None:
        change = item.data(0, CHANGE_ROLE) if item is not None else None
        if isinstance(change, FileChange):
            self.tasks.spawn(self._show(change, full=False))

    def on_diff_show_anyway(self) -> None:
        if self._shown is not None:
            self.tasks.spawn(self._show(self._shown, full=True))

    def on_restore_button_clicked(self) -> None:
        if self._done is None or self._confirm is not None:
            return
        lines = losses(self._done.result.changes)
        more = len(lines) - MAX_LISTED_LOSSES
        listed = "\n".join(lines[:MAX_LISTED_LOSSES]) + (f"\n… and {more} more" if more > 0 else "")
        box = QMessageBox(self)
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle("Restore the workspace?")
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setText(
            f"Put {self._done.record.workspace} back as it was before run "
            f"{self._done.record.run_id}? What the run did will be lost:"
        )
        box.setInformativeText(listed)
        box.addButton("Restore workspace", QMessageBox.ButtonRole.AcceptRole)
        keep = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(keep)
        box.setEscapeButton(keep)
        box.finished.connect(partial(self.on_confirm_finished, box))
        self._confirm = box
        box.open()

    def on_confirm_finished(self, box: QMessageBox, _result: int) -> None:
        self._confirm = None
        if box.buttonRole(box.clickedButton()) == QMessageBox.ButtonRole.AcceptRole:
            self.restore_now()
        box.deleteLater()

    def on_force_question_finished(self, _result: int) -> None:
        self._confirm = None

    def confirmation_box(self) -> QMessageBox | None:
        """The open "restore the workspace?" (or "restore anyway?") question, if one is open."""
        return self._confirm

    # Internals --------------------------------------------------------------------------

    def _item(self, path: str, items: dict[str, QTreeWidgetItem]) -> QTreeWidgetItem:
        found = items.get(path)
        if found is not None:
            return found
        parent_path, _, name = path.rpartition("/")
        parent = self._item(parent_path, items) if parent_path else None
        item = QTreeWidgetItem([path_text(name), "", ""])
        if parent is None:
            self.tree.addTopLevelItem(item)
        else:
            parent.addChild(item)
        items[path] = item
        return item

    async def _poll(self, workspace: Path) -> None:
        self._polling = True
        try:
            snapshot = await asyncio.to_thread(take_snapshot, workspace, limits=LIVE_LIMITS)
        except WorkspaceError:
            return
        finally:
            self._polling = False
        if self._watched != workspace:
            return  # the run ended meanwhile
        if self._baseline is None:
            self._baseline = snapshot
            return
        seen = time.monotonic() - self._watch_started
        live = [
            c
            for c in diff_snapshots(self._baseline, snapshot)
            if c.kind is not ChangeKind.MODE_CHANGED  # the hardened loan changes owners and modes
        ]
        for change in live:
            self._first_seen.setdefault(change.path, seen)
        self._show_live(live)

    def _show_live(self, live: list[FileChange]) -> None:
        shown = tuple((c.path, c.kind) for c in live)
        if shown == self._live_shown:
            return  # keep the selection and the scroll position while nothing new happens
        self._live_shown = shown
        self.tree.clear()
        more = len(live) - MAX_LIVE_ITEMS
        self.counts.setText(
            f"Running: {plural(len(live), 'path')} changed so far (stat only; the exact "
            "changes and diffs come when the run ends)"
        )
        items: dict[str, QTreeWidgetItem] = {}
        colours = status_colors(self.palette())
        for change in live[:MAX_LIVE_ITEMS]:
            item = self._item(change.path, items)
            _describe(item, change, colours)
            item.setData(0, CHANGE_ROLE, None)  # no diff before the run's final snapshot
            item.setText(2, f"seen at {self._first_seen[change.path]:.1f} s")
        if more > 0:
            self.tree.addTopLevelItem(QTreeWidgetItem([f"… and {more} more", "", ""]))
        self.tree.expandAll()

    async def _show(self, change: FileChange, *, full: bool) -> None:
        self._shown = change
        title = f"{path_text(change.path)} ({BADGES[change.kind][1]})"
        if change.kind is ChangeKind.MODE_CHANGED:
            self.diff.show_placeholder(title, f"Permissions: {_modes(change)}; same content.")
            return
        caps = {"max_bytes": HARD_MAX_BYTES, "max_lines": 10_000_000} if full else {}
        self.diff.show_placeholder(title, "Computing the diff…")
        store = self._service.layout.blobs
        diff: TextDiff = await asyncio.to_thread(text_diff, change, store, **caps)
        if self._shown is not change:
            return  # another file was selected meanwhile
        if diff.placeholder is not None:
            large = diff.placeholder.startswith(("Too large", "Too many"))
            sizes = [s for s in (change.before_size, change.after_size) if s is not None]
            offer = large and not full and max(sizes, default=0) <= HARD_MAX_BYTES
            self.diff.show_placeholder(title, diff.placeholder, offer_full=offer)
        else:
            self.diff.show_diff(title, diff.text)

    async def _restore(self, done: CompletedRun, force: bool = False) -> None:
        self.restore_status.show()
        self.restore_status.setText("Restoring the workspace…")
        set_status(self.restore_status, "muted")
        try:
            report: RestoreReport = await asyncio.to_thread(
                restore_run, self._service.layout, done.record, force=force
            )
        except WorkbenchError as error:
            self.restore_status.setText(f"Not restored: {error}")
            set_status(self.restore_status, "danger")
            self.restore_button.setEnabled(True)
            if not force:  # refused: the workspace changed since (the user's own edits?)
                self._ask_force(done, str(error))
            return
        if report.complete:
            text = (
                f"Restored: {plural(report.undone, 'path')} put back; the workspace is as it "
                "was before the run."
            )
            set_status(self.restore_status, "ok")
        else:
            text = "Partly restored: " + " ".join(report.notes)
            set_status(self.restore_status, "danger")
        self.restore_status.setText(text)
        self.counts.setText(f"{summary(done.result.changes)} (restored since)")

    def _ask_force(self, done: CompletedRun, reason: str) -> None:
        def force() -> None:
            self.restore_button.setEnabled(False)
            self.tasks.spawn(self._restore(done, force=True))

        box = ask(self, "Restore anyway?", reason, "Restore and lose those changes", force)
        box.finished.connect(self.on_force_question_finished)
        self._confirm = box


def _describe(item: QTreeWidgetItem, change: FileChange, colours: StatusColors) -> None:
    badge, word, status = BADGES[change.kind]
    detail = word
    if change.kind is ChangeKind.TYPE_CHANGED:
        detail = f"{word}: {change.before_type} → {change.after_type}"
    elif change.kind is ChangeKind.MODE_CHANGED:
        detail = f"{word}: {_modes(change)}"
    item.setToolTip(0, tooltip(path_text(change.path)))
    item.setText(1, f"{badge}  {detail}")
    item.setText(2, _sizes(change))
    item.setData(0, CHANGE_ROLE, change)
    item.setForeground(1, getattr(colours, status))
    item.setData(1, Qt.ItemDataRole.AccessibleTextRole, detail)


def _modes(change: FileChange) -> str:
    def mode(value: int | None) -> str:
        return f"{value & 0o7777:04o}" if value is not None else "–"

    return f"{mode(change.before_mode)} → {mode(change.after_mode)}"


def _sizes(change: FileChange) -> str:
    if EntryType.DIR in (change.before_type, change.after_type):
        return ""
    before, after = change.before_size, change.after_size
    if change.kind is ChangeKind.ADDED and after is not None:
        return format_size(after)
    if change.kind is ChangeKind.DELETED and before is not None:
        return format_size(before)
    if before is not None and after is not None and before != after:
        return f"{format_size(before)} → {format_size(after)}"
    return format_size(after) if after is not None else ""


def _before_run(workspace: Path) -> Snapshot:
    """The workspace as a run finds it: a stat-only walk, or nothing for a fresh workspace
    that the run service makes as the run starts (blocking)."""
    if not workspace.exists():
        return Snapshot(workspace, time.time_ns(), {})
    return take_snapshot(workspace, limits=LIVE_LIMITS)
