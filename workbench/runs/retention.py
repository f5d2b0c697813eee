"""Retention: pruning the history to its newest runs, with everything those runs kept.

`prune()` removes the runs beyond the newest `keep_runs` or started more than `keep_days` ago
(a run must be within every limit given to stay; a run in progress always stays): their
history rows, their run folders (snapshots, logs, private homes) and the workspace folders the
workbench made for them, never a folder of the user's. Then it sweeps the kept file contents
that no remaining run's snapshot names, under the data folder's run lock, so never while a run
of any process is in progress: then the sweep waits for the next prune, and the report says so.
A snapshot that cannot be read stops the sweep too (what it names is unknown, so nothing goes).
"""

import os
import time
from dataclasses import dataclass

from workbench.errors import UsageError, WorkspaceError
from workbench.runs.history import RunHistory
from workbench.runs.layout import AFTER_SNAPSHOT, BEFORE_SNAPSHOT, DataLayout
from workbench.runs.record import RunRecord, RunState
from workbench.workspace.manifest import load_snapshot
from workbench.workspace.safe_walk import remove_tree

DAY_S = 24 * 60 * 60


@dataclass(frozen=True, slots=True)
class Retention:
    """How many runs to keep (None: no limit by count) and for how many days (None: no limit
    by age); both None keeps everything."""

    keep_runs: int | None = None
    keep_days: float | None = None

    def __post_init__(self) -> None:
        if (self.keep_runs is not None and self.keep_runs < 0) or (
            self.keep_days is not None and not self.keep_days >= 0
        ):
            raise UsageError("Keep a number of runs or of days that is 0 or more.")

    @property
    def keeps_all(self) -> bool:
        """True when no limit is set."""
        return self.keep_runs is None and self.keep_days is None

    def describe(self) -> str:
        """`the last 100 runs`, `the runs of the last 30 days`, `every run`."""
        said = []
        if self.keep_runs is not None:
            said.append(f"the last {self.keep_runs:,} run{'s' * (self.keep_runs != 1)}")
        if self.keep_days is not None:
            said.append(f"the runs of the last {self.keep_days:g} day{'s' * (self.keep_days != 1)}")
        return " and ".join(said) or "every run"


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What `prune` removed: the runs (their ids), the bytes of kept file contents freed, and
    why the sweep of those was put off ("" when it ran)."""

    removed: tuple[str, ...]
    freed_bytes: int
    sweep_skipped: str = ""

    def sentence(self) -> str:
        """`Removed 12 runs and 4.2 MiB of kept files.`, and why the files wait, if they do."""
        runs = f"{len(self.removed):,} run{'s' * (len(self.removed) != 1)}"
        sentence = f"Removed {runs} and {self.freed_bytes / 2**20:,.1f} MiB of kept files."
        return f"{sentence} {self.sweep_skipped}" if self.sweep_skipped else sentence


def prune(
    layout: DataLayout, history: RunHistory, retention: Retention, now: float | None = None
) -> PruneReport:
    """Apply `retention` (see the module doc); blocking, so call it from a thread in the GUI."""
    if retention.keeps_all:
        return PruneReport((), 0)
    cutoff = (
        None if retention.keep_days is None else (now or time.time()) - retention.keep_days * DAY_S
    )
    records = history.recent(limit=2**31)
    doomed = [
        record
        for index, record in enumerate(records)
        if record.state is not RunState.RUNNING
        and (
            (retention.keep_runs is not None and index >= retention.keep_runs)
            or (cutoff is not None and record.started_at < cutoff)
        )
    ]
    history.delete(record.run_id for record in doomed)
    for record in doomed:
        _remove_folders(layout, record)
    gone = {record.run_id for record in doomed}
    freed, skipped = _sweep(layout, [r for r in records if r.run_id not in gone])
    return PruneReport(tuple(sorted(gone)), freed, skipped)


def _remove_folders(layout: DataLayout, record: RunRecord) -> None:
    remove_tree(layout.run_dir(record.run_id))
    if layout.is_fresh_workspace(record.run_id, record.workspace):
        remove_tree(record.workspace)


def _sweep(layout: DataLayout, remaining: list[RunRecord]) -> tuple[int, str]:
    """Remove the kept file contents no remaining snapshot names; (bytes freed, why not)."""
    lock = layout.try_sweep_lock()
    if lock is None:
        return 0, "A run is in progress, so its kept files are swept at the next prune."
    try:
        keep: set[str] = set()
        for record in remaining:
            for name in (BEFORE_SNAPSHOT, AFTER_SNAPSHOT):
                path = layout.run_dir(record.run_id) / name
                if not path.exists():
                    continue
                try:
                    snapshot = load_snapshot(path)
                except WorkspaceError as error:
                    return 0, f"No kept file was removed: {error}"
                keep.update(e.digest for e in snapshot.entries.values() if e.digest)
        return layout.blobs.sweep(keep), ""
    finally:
        os.close(lock)
