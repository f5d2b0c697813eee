"""Session and run bookkeeping shared by the executors that spawn local processes.

`SubprocessExecutor` implements the `Executor` contract once: it creates the run's folder and
id, checks the session's folders, lets the posture prepare the launch (`_prepare`), runs it
through `run_process()` (or, when it adopts a process spawned ahead of it, `supervise()`),
classifies the outcome and builds the `RunResult`. `stop()` ends every run in flight (they
finish as cancelled) and waits for their kill to complete.
"""

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from workbench.errors import ExecutorError
from workbench.executors.inflight import InFlight, prepare_runs_dir
from workbench.executors.process.outcome import classify, left_behind_warnings
from workbench.executors.process.reaper import become_subreaper
from workbench.executors.process.runner import (
    Launch,
    ProcessOutcome,
    RunSettings,
    run_process,
    supervise,
)
from workbench.executors.process.spawned import Spawned
from workbench.executors.types import (
    CancelToken,
    OutputSink,
    PostureCard,
    RunRequest,
    RunResult,
    RunStatus,
    SessionSpec,
)
from workbench.executors.workspace_limit import WorkspaceWatch, bound_checks
from workbench.postures.description import assess
from workbench.postures.model import Limits, Posture, PostureWarning


@dataclass(frozen=True, slots=True)
class RunContext:
    """One run being prepared: its id, its folder, the session and the request."""

    run_id: str
    run_dir: Path
    session: SessionSpec
    request: RunRequest

    def command_env(self, base: Mapping[str, str]) -> dict[str, str]:
        """The variables every executor sets for the command: SKILL_DIR, WORKSPACE, and the
        skill environment's PYTHONPATH and NODE_PATH, ahead of those in `base`."""
        environment = self.session.environment
        return {
            "SKILL_DIR": str(self.session.skill_dir),
            "WORKSPACE": str(self.session.workspace),
            **(environment.variables(environment.root, base) if environment else {}),
        }


class PreparedRun:
    """A run ready to spawn. Postures that read back what they applied subclass it.

    A run that adopts a process spawned ahead of it (a warm worker) sets `adopt` to it, and
    `finished` when that process may end the run alive (see `runner.supervise`).
    """

    adopt: Spawned | None = None
    finished: "asyncio.Future[None] | None" = None
    outcome: ProcessOutcome | None = None  # set before `close()` when the run got one
    notes: tuple[PostureWarning, ...] = ()  # what `close()` has to tell about the run
    # See `RunSettings.guard`; without one, the workspace is watched (`WorkspaceWatch`).
    guard: Callable[[int], Coroutine[Any, Any, str]] | None = None

    def __init__(self, launch: Launch, card: PostureCard, limits: Limits | None) -> None:
        self.launch = launch
        self.card = card
        self.limits = limits  # the rlimits the command runs under, None when there are none

    async def on_spawned(self, pid: int) -> None:
        """Called as soon as the root process exists."""
        del pid

    def launch_error(self) -> str:
        """Why the command itself could not be started, after the run ("" when it was)."""
        return ""

    async def close(self) -> None:
        """Release what `_prepare` set up; called after the run, whatever happened."""


class SubprocessExecutor(ABC):
    """The `Executor` contract for postures that spawn a local process tree."""

    def __init__(self, posture: Posture) -> None:
        self.posture = posture
        self._session: SessionSpec | None = None
        self._in_flight = InFlight()

    async def start(self, session: SessionSpec) -> None:
        """Create the runs folder and make the app adopt orphans of its runs."""
        prepare_runs_dir(session.runs_dir)
        become_subreaper()
        self._in_flight.reopen()
        self._session = session

    async def stop(self) -> None:
        """End every run in flight (killing their trees) and the session."""
        await self._in_flight.end_all()
        self._session = None

    async def run(self, request: RunRequest, sink: OutputSink, cancel: CancelToken) -> RunResult:
        """Run one command; see `Executor.run`."""
        if self._session is None:
            raise ExecutorError("The executor was not started (or was stopped) before a run.")
        context = self._new_context(self._session, request)
        with self._in_flight.run():
            return await self._run(context, sink, cancel)

    async def _run(self, context: RunContext, sink: OutputSink, cancel: CancelToken) -> RunResult:
        warnings = tuple(assess(self.posture))
        request = context.request
        prepared = _session_problem(context.session, request) or await self._prepare(context)
        if isinstance(prepared, str):
            card = PostureCard(self.posture)
            return RunResult.not_run(context.run_id, context.run_dir, prepared, card, warnings)
        limits = self.posture.limits
        workspace = WorkspaceWatch.of_folder(context.session.workspace, limits.disk_bytes)
        await workspace.baseline()
        settings = RunSettings(
            run_dir=context.run_dir,
            timeout_s=limits.timeout_s,
            cap_bytes=request.output_cap_bytes,
            sink=sink,
            cancel=cancel,
            shutdown=self._in_flight.shutdown,
            log_cap_bytes=limits.log_bytes,
            on_sample=request.on_sample,
            on_spawned=prepared.on_spawned,
            guard=prepared.guard or workspace.guard,
        )
        try:
            if prepared.adopt is None:
                outcome = await run_process(prepared.launch, settings, context.run_id)
            else:
                outcome = await supervise(prepared.adopt, settings, prepared.finished)
            prepared.outcome = outcome
        finally:
            await prepared.close()
        return self._result(context, prepared, outcome, warnings)

    @abstractmethod
    async def _prepare(self, context: RunContext) -> PreparedRun | str:
        """The launch of this run, or a sentence saying why it cannot run."""

    def _new_context(self, session: SessionSpec, request: RunRequest) -> RunContext:
        run_id = request.run_id
        run_dir = session.runs_dir / run_id
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ExecutorError(f"Cannot create the run folder {run_dir}: {error}.") from error
        return RunContext(run_id, run_dir, session, request)

    def _result(
        self,
        context: RunContext,
        prepared: PreparedRun,
        outcome: ProcessOutcome,
        warnings: tuple[PostureWarning, ...],
    ) -> RunResult:
        limits = self.posture.limits
        bounds = bound_checks(limits, watched=prepared.guard is None)
        status, cause = classify(outcome, limits.timeout_s, prepared.limits)
        if launch_error := prepared.launch_error():
            status, cause = RunStatus.ERROR, launch_error
        kill = outcome.kill
        warnings += left_behind_warnings(kill.signalled, status, kill.commands) + prepared.notes
        rc = outcome.returncode
        environment = context.session.environment
        card = replace(prepared.card, environment=environment.env_id if environment else "")
        return RunResult(
            run_id=context.run_id,
            status=status,
            cause=cause,
            exit_code=rc if rc is not None and rc >= 0 else None,
            signal=-rc if rc is not None and rc < 0 else None,
            wall_seconds=outcome.wall_seconds,
            cpu_seconds=outcome.cpu_seconds,
            peak_rss_bytes=outcome.peak_rss_bytes,
            peak_processes=outcome.peak_processes,
            stdout=outcome.stdout,
            stderr=outcome.stderr,
            card=replace(card, checks=card.checks + bounds),
            warnings=warnings,
            leftover_processes=outcome.kill.leftover,
            samples=outcome.samples,
            run_dir=context.run_dir,
        )


def _session_problem(session: SessionSpec, request: RunRequest) -> str:
    if not request.argv:
        return "empty command: nothing to run"
    if not session.workspace.is_dir():
        return f"workspace missing: {session.workspace} is not a folder"
    if not session.skill_dir.is_dir():
        return f"skill folder missing: {session.skill_dir} is not a folder"
    return ""
