"""`RunService`: one run from start to record, headless, shared by the CLI and the GUI.

`run_once` records the run as started, snapshots the workspace (keeping a copy of every file
for restore; hashes are reused from the last run in the same workspace where a file's stat is
unchanged), starts an executor, runs the command, always stops the executor, snapshots the
workspace again, diffs the two into the result's `changes`, diagnoses a failed run
(`workbench.runs.diagnosis`) and records the finished run with its diagnosis.
Blocking work (hashing, copying, sqlite) runs in threads, so the GUI's loop stays responsive.
If the workbench itself fails before the command ends (a `WorkbenchError`, e.g. the executor
cannot start) the record is completed with status `error` and the error is raised; if the task
is cancelled the record says `cancelled`. Once the command has ended, its outcome is kept
whatever fails next: an executor that cannot clean up (the engine gone), an "after" snapshot
that cannot be saved (the disk full) or a log cut short go to the record's notes, and a
history that cannot record the run (locked, corrupt, full) leaves the result in the run's
folder (`result.json`) and a record that says so. (Undoing a run is
`workbench.runs.undo.restore_run`.)
"""

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from workbench.errors import WorkbenchError, WorkspaceError
from workbench.executors.contract import Executor
from workbench.executors.types import (
    CancelToken,
    OutputSink,
    RunRequest,
    RunResult,
    RunStatus,
    SessionSpec,
    SkillEnvironment,
    new_run_id,
)
from workbench.monitor.sample import ResourceSample
from workbench.postures.description import assess
from workbench.postures.model import Posture
from workbench.runs.diagnosis import Diagnosis, diagnose
from workbench.runs.history import RunHistory
from workbench.runs.layout import AFTER_SNAPSHOT, BEFORE_SNAPSHOT, RESULT_FILE, DataLayout
from workbench.runs.record import RunOrigin, RunRecord, RunState, result_to_dict
from workbench.workspace.diff import diff_snapshots
from workbench.workspace.manifest import load_snapshot, save_snapshot
from workbench.workspace.snapshot import (
    DEFAULT_SNAPSHOT_LIMITS,
    Snapshot,
    SnapshotLimits,
    take_snapshot,
)

ExecutorFactory = Callable[[Posture], Executor]


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What to run: a skill's command under a posture, in a workspace folder, with the skill's
    environment when it has one (`workbench.environments`); `rerun_of` names the failed run
    this one re-runs with a change, `origin` what started it and `session` the comparison or
    lab run it belongs to."""

    skill_name: str
    skill_dir: Path
    posture: Posture
    argv: tuple[str, ...]
    workspace: Path
    env: dict[str, str] = field(default_factory=dict)
    run_id: str = field(default_factory=new_run_id)
    environment: SkillEnvironment | None = None
    rerun_of: str | None = None
    origin: RunOrigin = RunOrigin.RUN
    session: str | None = None


@dataclass(frozen=True, slots=True)
class CompletedRun:
    """A finished run: the result (with its changes) and the history record (with notes)."""

    result: RunResult
    record: RunRecord


class RunService:
    """Runs plans and restores workspaces; see the module doc."""

    def __init__(
        self,
        layout: DataLayout,
        history: RunHistory,
        build_executor: ExecutorFactory,
        limits: SnapshotLimits = DEFAULT_SNAPSHOT_LIMITS,
    ) -> None:
        self.layout = layout
        self.history = history
        self.build_executor = build_executor
        self.limits = limits

    def session(self, plan: RunPlan) -> SessionSpec:
        """The session `run_once` starts the executor of `plan` in."""
        workspace = plan.workspace.absolute()
        exclude = self._data_folder_inside(workspace)
        return SessionSpec(
            plan.skill_dir,
            plan.skill_name,
            workspace,
            self.layout.runs_root,
            exclude,
            environment=plan.environment,
        )

    async def run_once(
        self,
        plan: RunPlan,
        sink: OutputSink,
        cancel: CancelToken,
        on_sample: Callable[[ResourceSample], None] | None = None,
        on_progress: Callable[[str], None] | None = None,
    ) -> CompletedRun:
        """Run `plan` once (see the module doc); output chunks go to `sink` as they come,
        what the executor does around the command (copying the workspace) to `on_progress`."""
        plan = replace(plan, workspace=plan.workspace.absolute())
        run_dir = self.layout.run_dir(plan.run_id)
        lock = await asyncio.to_thread(self._begin, plan, run_dir)
        try:
            try:
                before = await asyncio.to_thread(self._snapshot_before, plan.workspace, run_dir)
                result, cleanup = await self._execute(
                    plan, run_dir, sink, cancel, on_sample, on_progress
                )
            except WorkbenchError as error:
                with contextlib.suppress(WorkbenchError):  # the history may be what failed
                    await asyncio.to_thread(
                        self.history.abandon, plan.run_id, RunStatus.ERROR, str(error)
                    )
                raise
            except asyncio.CancelledError:
                with contextlib.suppress(WorkbenchError):
                    self.history.abandon(
                        plan.run_id, RunStatus.CANCELLED, "The run's task was cancelled."
                    )
                raise
            notes = before.notes + cleanup + _log_notes(result)
            try:
                after_path = run_dir / AFTER_SNAPSHOT
                after = await asyncio.to_thread(self._snapshot, plan.workspace, before, after_path)
                changes, notes = diff_snapshots(before, after), notes + after.notes
            except WorkbenchError as error:  # the disk full, say: the run's outcome still stands
                changes, notes = (), (*notes, f"The workspace's changes are unknown: {error}")
            result = replace(
                result,
                changes=changes,
                warnings=result.warnings or tuple(assess(plan.posture)),
            )
            notes = tuple(dict.fromkeys(notes))
            diagnosis = await asyncio.to_thread(diagnose, result, plan.workspace, plan.skill_name)
            record = await asyncio.to_thread(self._finish, plan, run_dir, result, notes, diagnosis)
            return CompletedRun(result, record)
        finally:
            os.close(lock)  # a sweep of the kept files may go on

    def _finish(
        self,
        plan: RunPlan,
        run_dir: Path,
        result: RunResult,
        notes: tuple[str, ...],
        diagnosis: Diagnosis | None,
    ) -> RunRecord:
        """The finished run's record; when the history cannot take it, a record of it that
        says why, with the result kept in the run's folder."""
        try:
            return self.history.finish(plan.run_id, result, notes, diagnosis)
        except WorkbenchError as error:
            kept = run_dir / RESULT_FILE
            try:
                kept.write_text(json.dumps(result_to_dict(result), indent=2) + "\n")
                where = f"its result is kept in {kept}"
            except OSError as write_error:
                where = f"nor could its result be kept in {kept}: {write_error}"
            note = f"This run is not in the history ({error}); {where}."
        return replace(
            _record(plan, run_dir, started_at=time.time() - result.wall_seconds),
            state=RunState.FINISHED,
            ended_at=time.time(),
            status=result.status.value,
            cause=result.cause,
            exit_code=result.exit_code,
            notes=(*notes, note),
            result=result_to_dict(result),
            diagnosis=diagnosis,
        )

    def _begin(self, plan: RunPlan, run_dir: Path) -> int:
        """Make the run's folders, take the run lock (no sweep of the kept files while the
        run goes: `runs.retention`) and record the run as started; returns the lock's fd."""
        try:
            run_dir.mkdir(parents=True)
            plan.workspace.mkdir(parents=True, exist_ok=True)
            lock = self.layout.hold_run_lock()
        except OSError as error:
            raise WorkspaceError(f"Cannot prepare the run's folders: {error}") from None
        try:
            self.history.start(_record(plan, run_dir, started_at=time.time()))
        except BaseException:
            os.close(lock)
            raise
        return lock

    def _snapshot_before(self, workspace: Path, run_dir: Path) -> Snapshot:
        """The "before" snapshot, reusing the hashes of the last run in the same workspace."""
        exclude = self._data_folder_inside(workspace)
        last_run = self.history.last_run_dir(workspace)
        previous = None
        if last_run is not None:
            with contextlib.suppress(WorkspaceError):
                previous = load_snapshot(last_run / AFTER_SNAPSHOT)
        return self._snapshot(workspace, previous, run_dir / BEFORE_SNAPSHOT, exclude)

    def _data_folder_inside(self, workspace: Path) -> tuple[str, ...]:
        """The workbench's data folder, relative to `workspace` when it lies inside it.

        It is left out of the workspace's snapshots: the run's own records and kept files
        are not the run's changes, and a restore must never roll the history back.
        """
        try:
            inside = self.layout.root.resolve().relative_to(workspace.resolve())
        except ValueError:
            return ()
        if not inside.parts:
            raise WorkspaceError(
                f"The workspace {workspace} is the workbench's own data folder; choose another."
            )
        return (inside.as_posix(),)

    def _snapshot(
        self,
        workspace: Path,
        previous: Snapshot | None,
        path: Path,
        exclude: tuple[str, ...] | None = None,
    ) -> Snapshot:
        snapshot = take_snapshot(
            workspace,
            previous=previous,
            store=self.layout.blobs,
            limits=self.limits,
            exclude=exclude,
        )
        save_snapshot(snapshot, path)
        return snapshot

    async def _execute(
        self,
        plan: RunPlan,
        run_dir: Path,
        sink: OutputSink,
        cancel: CancelToken,
        on_sample: Callable[[ResourceSample], None] | None,
        on_progress: Callable[[str], None] | None,
    ) -> tuple[RunResult, tuple[str, ...]]:
        """The run's result, and what went wrong stopping the executor after it."""
        # Built in a thread: the first run of a posture imports its executor's modules, which
        # would stall the event loop (an app's window) for 60-150 ms.
        executor = await asyncio.to_thread(self.build_executor, plan.posture)
        try:
            await executor.start(self.session(plan))
            request = RunRequest(
                argv=plan.argv,
                run_id=plan.run_id,
                env=dict(plan.env),
                on_sample=on_sample,
                on_progress=on_progress,
            )
            result = await executor.run(request, sink, cancel)
        except BaseException:
            with contextlib.suppress(WorkbenchError):  # the first failure is the one to tell
                await executor.stop()
            raise
        try:
            await executor.stop()
        except WorkbenchError as error:
            return result, (f"Cleaning up after the run failed: {error}",)
        return result, ()


def _record(plan: RunPlan, run_dir: Path, started_at: float) -> RunRecord:
    """The record of `plan`'s run as it starts."""
    return RunRecord(
        run_id=plan.run_id,
        skill_name=plan.skill_name,
        skill_dir=plan.skill_dir,
        posture=plan.posture.id.value,
        argv=plan.argv,
        workspace=plan.workspace,
        run_dir=run_dir,
        started_at=started_at,
        rerun_of=plan.rerun_of,
        origin=plan.origin,
        session=plan.session,
    )


def _log_notes(result: RunResult) -> tuple[str, ...]:
    """A note per log the run's output could not be written to in full (the disk full)."""
    return tuple(
        f"The {name} log stops short: {output.log_error}"
        for name, output in (("stdout", result.stdout), ("stderr", result.stderr))
        if output.log_error
    )
