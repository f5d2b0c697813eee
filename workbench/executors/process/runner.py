"""Running one process to its end: spawn, stream, monitor, time out, cancel, kill, verify.

`run_process()` is the shared machinery of the local postures: it spawns the command (a new session,
the run's tag, no `preexec_fn`), streams stdout and stderr into `StreamCapture`s, samples the tree
at 10 Hz, ends on exit, timeout, Stop or shutdown, and always kills and verifies the run's
processes, even when it is cancelled itself. `supervise()` does the same for a process spawned ahead
of its run (`workbench.executors.process.spawned`), which may end a run without exiting and stay for
the next. `RunSettings` is what a run is supervised with.
"""

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

import psutil

from workbench.executors.process.capture import (
    StreamCapture,
    close_logs,
    finish_logs,
    stream_captures,
)
from workbench.executors.process.reaper import (
    KillReport,
    Reach,
    RunScope,
    claim,
    collect,
    kill_now,
    kill_run,
    live_roots,
    unclaim,
)
from workbench.executors.process.spawned import (
    EXIT_WAIT_S,
    PIPE_DRAIN_S,
    Launch,
    Spawned,
    drained,
    spawn,
)
from workbench.executors.types import CancelToken, CapturedOutput, OutputSink, Stream
from workbench.monitor.process import ProcessTreeSampler, alive
from workbench.monitor.sample import ResourceSample
from workbench.postures.model import DEFAULT_LIMITS

__all__ = [
    "EndedBy",
    "Launch",
    "ProcessOutcome",
    "RunSettings",
    "first_end",
    "run_process",
    "supervise",
]

_HOOK_WAIT_S = 2.0
_NOTHING_KILLED = KillReport(signalled=0, leftover=0)


class EndedBy(StrEnum):
    """What ended a process run."""

    EXIT = "exit"
    TIMEOUT = "timeout"
    CANCEL = "cancel"
    SHUTDOWN = "shutdown"
    SPAWN_ERROR = "spawn_error"
    LIMIT = "limit"  # a limit the posture watches for itself (its guard) ended it
    DONE = "done"  # the process said the run was done and was kept alive for another


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    """What happened to a spawned process and its tree."""

    ended_by: EndedBy
    returncode: int | None
    spawn_error: str
    stdout: CapturedOutput
    stderr: CapturedOutput
    stderr_text: str  # the in-memory head and the tail of stderr, for outcome detection
    wall_seconds: float
    cpu_seconds: float
    peak_rss_bytes: int
    peak_processes: int
    samples: tuple[ResourceSample, ...]
    kill: KillReport
    kept: bool = False  # the root process ended the run alive and is kept (`supervise`)
    limit_cause: str = ""  # with `EndedBy.LIMIT`: the guard's cause


async def first_end(
    exited: "asyncio.Future[Any]",
    timeout_s: float,
    cancel: CancelToken,
    shutdown: asyncio.Event,
    limit: "asyncio.Future[str] | None" = None,
) -> EndedBy:
    """What ends a run first: its exit, the timeout, Stop, the executor shutting down, or a
    watched limit (`limit` resolves to its cause)."""
    timer = asyncio.create_task(asyncio.sleep(timeout_s))
    stopped = asyncio.create_task(cancel.wait())
    closing = asyncio.create_task(shutdown.wait())
    try:
        waiters: set[asyncio.Future[Any]] = {exited, timer, stopped, closing}
        waiters |= {limit} if limit is not None else set()
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (timer, stopped, closing):
            task.cancel()
    if exited.done():
        return EndedBy.EXIT
    if limit is not None and limit.done():
        return EndedBy.LIMIT
    if stopped.done():
        return EndedBy.CANCEL
    if shutdown.is_set():
        return EndedBy.SHUTDOWN
    return EndedBy.TIMEOUT


@dataclass(frozen=True, slots=True)
class RunSettings:
    """What one run is supervised with: where its output goes and what may end it.

    The output is capped at `cap_bytes` a stream in memory and `log_cap_bytes` on disk, spooled
    to `run_dir` and sent to `sink`; `on_sample` receives each resource sample, `on_spawned` the
    root's pid once it exists.
    `guard`, given the root's pid, watches a limit the posture enforces itself and returns the
    cause when that limit is crossed, which ends the run (`EndedBy.LIMIT`).
    """

    run_dir: Path
    timeout_s: float
    cap_bytes: int
    sink: OutputSink
    cancel: CancelToken
    shutdown: asyncio.Event
    log_cap_bytes: int = DEFAULT_LIMITS.log_bytes
    on_sample: Callable[[ResourceSample], None] | None = None
    on_spawned: Callable[[int], Coroutine[Any, Any, None]] | None = None
    guard: Callable[[int], Coroutine[Any, Any, str]] | None = None

    def captures(self) -> dict[int, StreamCapture]:
        """The run's stdout and stderr captures, by file descriptor."""
        captures = stream_captures(self.run_dir, self.cap_bytes, self.log_cap_bytes, self.sink)
        return {1: captures[Stream.STDOUT], 2: captures[Stream.STDERR]}


async def run_process(launch: Launch, settings: RunSettings, run_id: str) -> ProcessOutcome:
    """Run `launch`, tagged `run_id`, to its end and kill whatever of it is left (see the
    module docstring)."""
    spawned = await spawn(launch, run_id)
    if isinstance(spawned, str):
        captures = settings.captures()
        await finish_logs(captures.values())
        return _outcome(captures, EndedBy.SPAWN_ERROR, None, spawned, 0.0, None)
    return await supervise(spawned, settings, t0=spawned.spawned_at)


async def supervise(
    spawned: Spawned,
    settings: RunSettings,
    finished: "asyncio.Future[Any] | None" = None,
    t0: float | None = None,
) -> ProcessOutcome:
    """Supervise `spawned` as one run from now on (see the module docstring).

    The output capture and the sampling start here; so do the clock and the CPU count (time
    the process spent before counts for nothing) unless `t0` says the clock started at its
    spawn (`run_process`). The run tag and the window for escapees (`RunScope.since`) are the
    spawn's, so whatever the process started since it was born is the run's. With `finished`,
    the process may instead end the run by resolving it: when nothing else of the run is alive,
    the process is kept (`kept`) for another run, once its pipes hold no more of this run's
    output.
    """
    loop = asyncio.get_running_loop()
    captures = settings.captures()
    pipes, root, scope = spawned.pipes, spawned.root, spawned.scope()
    sampler_type = ProcessTreeSampler if t0 is not None else _AdoptedSampler
    t0 = loop.time() if t0 is None else t0
    pipes.attach(captures, t0)
    sampler = sampler_type(root, scope.tag, t0, settings.on_sample, exclude=live_roots)
    claim(scope.tag, sampler.seen)
    monitor = asyncio.create_task(sampler.run())
    hook = asyncio.create_task(settings.on_spawned(spawned.pid)) if settings.on_spawned else None
    guard = asyncio.create_task(settings.guard(spawned.pid)) if settings.guard else None
    kill: KillReport | None = None
    kept = False
    end = _first_of(pipes.exited, finished)
    try:
        ended_by = await first_end(
            end, settings.timeout_s, settings.cancel, settings.shutdown, guard
        )
        if ended_by is EndedBy.EXIT and not pipes.exited.done():  # `finished`: done, alive
            ended_at = loop.time()
            kept = _alone(root, scope, sampler.seen.values())
        if kept:
            ended_by, kill = EndedBy.DONE, _NOTHING_KILLED
            await drained(spawned.transport)
        else:
            kill = await kill_run(root, scope, sampler.seen.values())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(pipes.exited), EXIT_WAIT_S)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(pipes.closed), PIPE_DRAIN_S)
        monitor.cancel()
        if guard is not None:
            guard.cancel()
        for task in (monitor, hook, guard):
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                    await asyncio.wait_for(task, _HOOK_WAIT_S)
    except BaseException:  # cancelled (or failed): still leave nothing behind, close the logs
        if kill is None:
            monitor.cancel()
            for task in (hook, guard):
                if task is not None:
                    task.cancel()
            kill_now(root, scope, sampler.seen.values())
        close_logs(captures.values())
        raise
    finally:
        unclaim(scope.tag)
        pipes.detach()
        if not kept:
            spawned.transport.close()
    if not kept:
        ended_at = pipes.exited.result() if pipes.exited.done() else loop.time()
    rc = None if kept else spawned.transport.get_returncode()
    await finish_logs(captures.values())
    outcome = _outcome(captures, ended_by, rc, "", ended_at - t0, sampler, kill)
    limit_cause = guard.result() if ended_by is EndedBy.LIMIT and guard is not None else ""
    return replace(outcome, kept=kept, limit_cause=limit_cause)


def _first_of(exited: "asyncio.Future[Any]", *others: "asyncio.Future[Any] | None") -> Any:
    """`exited`, or a future done as soon as `exited` or one of `others` is."""
    futures = [future for future in others if future is not None]
    if not futures:
        return exited
    either: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def done(_: object) -> None:
        if not either.done():
            either.set_result(None)

    for future in (exited, *futures):
        future.add_done_callback(done)
    return either


def _alone(root: psutil.Process | None, scope: RunScope, seen: Iterable[psutil.Process]) -> bool:
    """True when the root is alive and no other process of the run is."""
    if root is None or not alive(root):
        return False
    return set(collect(root, scope, seen, Reach.MACHINE)) == {root.pid}


class _AdoptedSampler(ProcessTreeSampler):
    """The tree sampler, counting only CPU time the root spends from now on."""

    def __init__(
        self,
        root: psutil.Process | None,
        tag: bytes,
        t0: float,
        on_sample: Callable[[ResourceSample], None] | None,
        exclude: Callable[[], Iterable[int]],
    ) -> None:
        super().__init__(root, tag, t0, on_sample, exclude)
        self._before = 0.0
        if root is not None:
            with contextlib.suppress(psutil.Error):
                times = root.cpu_times()
                self._before = self._cpu_by_pid[root.pid] = times.user + times.system

    @property
    def cpu_seconds(self) -> float:
        """User + system CPU seconds of the run's processes since it began."""
        return max(0.0, super().cpu_seconds - self._before)


def _outcome(
    captures: dict[int, StreamCapture],
    ended_by: EndedBy,
    returncode: int | None,
    spawn_error: str,
    wall_seconds: float,
    sampler: ProcessTreeSampler | None,
    kill: KillReport = _NOTHING_KILLED,
) -> ProcessOutcome:
    stderr = captures[2]
    return ProcessOutcome(
        ended_by=ended_by,
        returncode=returncode,
        spawn_error=spawn_error,
        stdout=captures[1].finish(),
        stderr=stderr.finish(),
        stderr_text=stderr.head_text + "\n" + stderr.tail_text,
        wall_seconds=wall_seconds,
        cpu_seconds=sampler.cpu_seconds if sampler else 0.0,
        peak_rss_bytes=sampler.peak_rss_bytes if sampler else 0,
        peak_processes=sampler.peak_processes if sampler else 0,
        samples=tuple(sampler.samples) if sampler else (),
        kill=kill,
    )
