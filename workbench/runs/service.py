"""`RunService`: one run from start to record, headless, shared by the CLI and the GUI.

`run_once` records the run as started, snapshots the workspace (keeping a copy of every file
for restore; hashes are reused from the last run in the same workspace where a file's stat is
unchanged), starts an executor, runs the command, always stops the executor, snapshots the
workspace again, diffs the two into the result's `changes`, diagnoses a failed run
(`workbench.runs.diagnosis`) and records the finished run with its diagnosis.
Blocking work (hashing, copying, sqlite) runs in threads, so the GUI's loop stays responsive.
If the workbench itself fails (a `WorkbenchError`, e.g. the executor cannot start) the record
is completed with status `error` and the error is raised; if the task is cancelled the record
says `cancelled`. (Undoing a run is `workbench.runs.undo.restore_run`.)
"""

import asyncio
import contextlib
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
from workbench.runs.diagnosis import diagnose
from workbench.runs.history import RunHistory
from workbench.runs.layout import AFTER_SNAPSHOT, BEFORE_SNAPSHOT, DataLayout
from workbench.runs.record import RunRecord
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
    this one re-runs with a change."""

    skill_name: str
    skill_dir: Path
    posture: Posture
    argv: tuple[str, ...]
    workspace: Path
    env: dict[str, str] = field(default_factory=dict)
    run_id: str = field(default_factory=new_run_id)
    environment: SkillEnvironment | None = None
    rerun_of: str | None = None


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
        await asyncio.to_thread(self._begin, plan, run_dir)
        try:
            before = await asyncio.to_thread(self._snapshot_before, plan.workspace, run_dir)
            result = await self._execute(plan, run_dir, sink, cancel, on_sample, on_progress)
            after_path = run_dir / AFTER_SNAPSHOT
            after = await asyncio.to_thread(self._snapshot, plan.workspace, before, after_path)
        except WorkbenchError as error:
            await asyncio.to_thread(self.history.abandon, plan.run_id, RunStatus.ERROR, str(error))
            raise
        except asyncio.CancelledError:
            self.history.abandon(plan.run_id, RunStatus.CANCELLED, "The run's task was cancelled.")
            raise
        result = replace(
            result,
            changes=diff_snapshots(before, after),
            warnings=result.warnings or tuple(assess(plan.posture)),
        )
        notes = tuple(dict.fromkeys(before.notes + after.notes))
        diagnosis = await asyncio.to_thread(diagnose, result, plan.workspace)
        record = await asyncio.to_thread(self.history.finish, plan.run_id, result, notes, diagnosis)
        return CompletedRun(result, record)

    def _begin(self, plan: RunPlan, run_dir: Path) -> None:
        try:
            run_dir.mkdir(parents=True)
            plan.workspace.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise WorkspaceError(f"Cannot prepare the run's folders: {error}") from None
        self.history.start(
            RunRecord(
                run_id=plan.run_id,
                skill_name=plan.skill_name,
                skill_dir=plan.skill_dir,
                posture=plan.posture.id.value,
                argv=plan.argv,
                workspace=plan.workspace,
                run_dir=run_dir,
                started_at=time.time(),
                rerun_of=plan.rerun_of,
            )
        )

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
    ) -> RunResult:
        executor = self.build_executor(plan.posture)
        try:
            await executor.start(self.session(plan))
            request = RunRequest(
                argv=plan.argv,
                run_id=plan.run_id,
                env=dict(plan.env),
                on_sample=on_sample,
                on_progress=on_progress,
            )
            return await executor.run(request, sink, cancel)
        finally:
            await executor.stop()
