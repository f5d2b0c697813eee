"""Running one process to its end: spawn, stream, monitor, time out, cancel, kill, verify.

`run_process()` is the shared machinery of the local postures. It spawns the command with
asyncio (a new session, stdin from /dev/null, the run's tag in its environment, no
`preexec_fn`), streams stdout and stderr into `StreamCapture`s, samples the tree at 10 Hz, and
ends on the first of: the root process exiting, the wall-clock timeout, the user's Stop, or the
session shutting down. Whatever ended it, every process of the run left is then killed and the
kill verified (`KillReport.leftover`); if something the kill could not find still holds the
output pipes, they are closed after a second rather than waited for. If the caller cancels
`run_process()` itself, the tree is still killed (synchronously) before the error propagates.
"""

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from subprocess import DEVNULL, PIPE
from typing import Any

import psutil

from workbench.executors.capture import StreamCapture
from workbench.executors.process_tree import (
    KillReport,
    RunScope,
    claim,
    kill_now,
    kill_run,
    live_roots,
    track_root,
    unclaim,
    untrack_root,
)
from workbench.executors.types import CancelToken, CapturedOutput, OutputSink, Stream
from workbench.monitor.process import RUN_TAG_ENV, ProcessTreeSampler, run_tag
from workbench.monitor.sample import ResourceSample

_EXIT_WAIT_S = 5.0  # after the kill, how long the root may take to be reaped
_PIPE_DRAIN_S = 1.0  # after the root exited and leftovers were killed, for the pipes to close
_HOOK_WAIT_S = 2.0
_NOTHING_KILLED = KillReport(signalled=0, leftover=0)


class EndedBy(StrEnum):
    """What ended a process run."""

    EXIT = "exit"
    TIMEOUT = "timeout"
    CANCEL = "cancel"
    SHUTDOWN = "shutdown"
    SPAWN_ERROR = "spawn_error"


@dataclass(frozen=True, slots=True)
class Launch:
    """How to spawn one command: argv, the complete environment, working folder, fds to pass,
    and the uid it runs as when that uid is the session's own (its processes are the runs')."""

    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: Path
    pass_fds: tuple[int, ...] = ()
    own_uid: int | None = None


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


class _Pipes(asyncio.SubprocessProtocol):
    """Feeds pipe data into the captures and signals exit and pipe closure."""

    def __init__(self, captures: dict[int, StreamCapture], t0: float) -> None:
        self._captures = captures
        self._t0 = t0
        self._loop = asyncio.get_running_loop()
        self.exited: asyncio.Future[float] = self._loop.create_future()
        self.closed: asyncio.Future[None] = self._loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._captures[fd].feed(data, self._loop.time() - self._t0)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(self._loop.time())

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


def _spawn_error(argv0: str, error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return f"command not found: {argv0}"
    if isinstance(error, PermissionError):
        return f"permission denied: {argv0}"
    return f"cannot start {argv0}: {error.strerror or error}"


async def first_end(
    exited: "asyncio.Future[Any]",
    timeout_s: float,
    cancel: CancelToken,
    shutdown: asyncio.Event,
) -> EndedBy:
    """What ends a run first: its exit, the timeout, Stop, or the executor shutting down."""
    timer = asyncio.create_task(asyncio.sleep(timeout_s))
    stopped = asyncio.create_task(cancel.wait())
    closing = asyncio.create_task(shutdown.wait())
    try:
        waiters: set[asyncio.Future[Any]] = {exited, timer, stopped, closing}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (timer, stopped, closing):
            task.cancel()
    if exited.done():
        return EndedBy.EXIT
    if stopped.done():
        return EndedBy.CANCEL
    if shutdown.is_set():
        return EndedBy.SHUTDOWN
    return EndedBy.TIMEOUT


async def run_process(
    launch: Launch,
    run_id: str,
    run_dir: Path,
    timeout_s: float,
    cap_bytes: int,
    sink: OutputSink,
    cancel: CancelToken,
    shutdown: asyncio.Event,
    on_sample: Callable[[ResourceSample], None] | None = None,
    on_spawned: Callable[[int], Coroutine[Any, Any, None]] | None = None,
) -> ProcessOutcome:
    """Run `launch` to its end and kill whatever of it is left (see the module docstring)."""
    loop = asyncio.get_running_loop()
    captures = {
        1: StreamCapture(Stream.STDOUT, cap_bytes, run_dir / "stdout.log", sink),
        2: StreamCapture(Stream.STDERR, cap_bytes, run_dir / "stderr.log", sink),
    }
    tag = run_tag(run_id)
    scope = RunScope(tag, time.time() - 0.05, launch.own_uid)
    t0 = loop.time()
    try:
        transport, pipes = await loop.subprocess_exec(
            lambda: _Pipes(captures, t0),
            *launch.argv,
            stdin=DEVNULL,
            stdout=PIPE,
            stderr=PIPE,
            cwd=launch.cwd,
            env={**launch.env, RUN_TAG_ENV: run_id},
            start_new_session=True,
            pass_fds=launch.pass_fds,
        )
    except OSError as error:
        return _outcome(
            captures, EndedBy.SPAWN_ERROR, None, _spawn_error(launch.argv[0], error), 0.0, None
        )
    pid = transport.get_pid()
    track_root(pid)
    pipes.exited.add_done_callback(lambda _: untrack_root(pid))
    try:
        root: psutil.Process | None = psutil.Process(pid)
    except psutil.Error:
        root = None
    sampler = ProcessTreeSampler(root, tag, t0, on_sample, exclude=live_roots)
    claim(tag, sampler.seen)
    monitor = asyncio.create_task(sampler.run())
    hook = asyncio.create_task(on_spawned(pid)) if on_spawned else None
    kill: KillReport | None = None
    try:
        ended_by = await first_end(pipes.exited, timeout_s, cancel, shutdown)
        kill = await kill_run(root, scope, sampler.seen.values())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(pipes.exited), _EXIT_WAIT_S)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(pipes.closed), _PIPE_DRAIN_S)
        monitor.cancel()
        for task in (monitor, hook):
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                    await asyncio.wait_for(task, _HOOK_WAIT_S)
    finally:
        if kill is None:  # the caller cancelled run(): still leave nothing behind
            monitor.cancel()
            if hook is not None:
                hook.cancel()
            kill_now(root, scope, sampler.seen.values())
            for capture in captures.values():
                capture.finish()
        unclaim(tag)
        transport.close()
    end = pipes.exited.result() if pipes.exited.done() else loop.time()
    return _outcome(captures, ended_by, transport.get_returncode(), "", end - t0, sampler, kill)


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
