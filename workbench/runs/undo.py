"""Undoing a recorded run: putting its workspace back as it was before the run.

`restore_run` refuses (`WorkspaceError`) unless `force` when the workspace changed after the
run ended, or when that cannot be known (the run was interrupted before its "after" snapshot),
since restoring would throw those later changes away. A workspace as an earlier restore of the
same run left it (its snapshot is kept in the run's folder) may be restored again. It is
blocking: the GUI calls it through `asyncio.to_thread`.
"""

from workbench.errors import WorkspaceError
from workbench.runs.layout import AFTER_SNAPSHOT, BEFORE_SNAPSHOT, RESTORED_SNAPSHOT, DataLayout
from workbench.runs.record import RunRecord, RunState
from workbench.workspace.changes import path_text
from workbench.workspace.diff import diff_snapshots
from workbench.workspace.manifest import load_snapshot, save_snapshot
from workbench.workspace.restore import RestoreReport, restore_workspace
from workbench.workspace.snapshot import take_snapshot


def restore_run(layout: DataLayout, record: RunRecord, *, force: bool = False) -> RestoreReport:
    """Put `record`'s workspace back as it was before that run (see the module doc)."""
    if record.state is RunState.RUNNING:
        raise WorkspaceError(f"Run {record.run_id} is still running; stop it first.")
    before = load_snapshot(record.run_dir / BEFORE_SNAPSHOT)
    if not force:
        _refuse_if_changed_since(record)
    report = restore_workspace(record.workspace, before, layout.blobs)
    restored = take_snapshot(record.workspace, previous=before)
    save_snapshot(restored, record.run_dir / RESTORED_SNAPSHOT)
    return report


def _refuse_if_changed_since(record: RunRecord) -> None:
    after_path = record.run_dir / AFTER_SNAPSHOT
    if not after_path.is_file():
        raise WorkspaceError(
            f"Run {record.run_id} did not finish recording its workspace, so it is unknown "
            "whether restoring would lose later changes. Use --force to restore anyway."
        )
    after = load_snapshot(after_path)
    now = take_snapshot(record.workspace, previous=after)
    later = diff_snapshots(after, now)
    restored_path = record.run_dir / RESTORED_SNAPSHOT
    if later and restored_path.is_file() and not diff_snapshots(load_snapshot(restored_path), now):
        return  # as the last restore of this run left it
    if later:
        examples = ", ".join(f"{path_text(c.path)} ({c.kind.value})" for c in later[:5])
        raise WorkspaceError(
            f"The workspace changed after run {record.run_id} ended ({len(later)} paths: "
            f"{examples}). Restoring would lose those changes; use --force to restore anyway."
        )
