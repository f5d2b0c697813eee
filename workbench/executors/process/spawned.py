"""A process spawned ahead of the run that will adopt it, and its output pipes.

`spawn()` starts a command the way every local run starts (a new session, stdin from /dev/null,
stdout and stderr to pipes, the run tag in its environment, no `preexec_fn`) and returns a
`Spawned` no run supervises yet; `Pipes` holds its early output until a run attaches its captures
(`workbench.executors.process.runner.supervise`). `retire()` kills one no run supervises and
verifies it is gone; `drained()` waits until its pipes hold no unread output.
"""

import asyncio
import contextlib
import fcntl
import struct
import termios
import time
from dataclasses import dataclass
from pathlib import Path
from subprocess import DEVNULL, PIPE
from typing import Any

import psutil

from workbench.executors.process.capture import StreamCapture
from workbench.executors.process.reaper import (
    KillReport,
    RunScope,
    kill_run,
    spawning,
    track_root,
    untrack_root,
)
from workbench.monitor.process import RUN_TAG_ENV, process_clock, run_tag

EXIT_WAIT_S = 5.0  # after the kill, how long the root may take to be reaped
PIPE_DRAIN_S = 1.0  # after the root exited and leftovers were killed, for the pipes to close


@dataclass(frozen=True, slots=True)
class Launch:
    """How to spawn one command: argv, the complete environment, working folder, fds to pass,
    and the uid it runs as when that uid is the session's own (its processes are the runs').

    `user` is a uid (and gid) to switch to before the exec, with no supplementary groups (the
    app must be root). `contained` says every process the command starts stays in its tree (a
    PID namespace whose orphans go to its own init), so finding them needs no scan beyond it;
    `alone` that it can start none (it sets RLIMIT_NPROC 0 before it runs any skill code).
    """

    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: Path
    pass_fds: tuple[int, ...] = ()
    own_uid: int | None = None
    user: int | None = None
    contained: bool = False
    alone: bool = False


class Pipes(asyncio.SubprocessProtocol):
    """Feeds pipe data into the attached run's captures and signals exit and pipe closure.

    Output from before the first run attached is held and handed to that run; output while no
    run is attached after that (there is none: a kept process is drained first) is dropped.
    """

    def __init__(self) -> None:
        self._captures: dict[int, StreamCapture] | None = None
        self._early: list[tuple[int, bytes]] | None = []
        self._t0 = 0.0
        self._loop = asyncio.get_running_loop()
        self.exited: asyncio.Future[float] = self._loop.create_future()
        self.closed: asyncio.Future[None] = self._loop.create_future()

    def attach(self, captures: dict[int, StreamCapture], t0: float) -> None:
        """Send output to `captures` from now on, timed from `t0`."""
        self._captures, self._t0 = captures, t0
        for fd, data in self._early or ():
            captures[fd].feed(data, 0.0)
        self._early = None

    def detach(self) -> None:
        """Stop sending output to the run's captures."""
        self._captures = None

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if self._captures is not None:
            self._captures[fd].feed(data, self._loop.time() - self._t0)
        elif self._early is not None:
            self._early.append((fd, data))

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(self._loop.time())

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


def spawn_error(argv0: str, error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return f"command not found: {argv0}"
    if isinstance(error, PermissionError):
        return f"permission denied: {argv0}"
    return f"cannot start {argv0}: {error.strerror or error}"


@dataclass(slots=True)
class Spawned:
    """A process `spawn()` started, not yet (or, kept after a run, no longer) supervised.

    It carries `tag_id` as its run tag from birth; `since` is a little before its spawn, so a
    run that adopts it counts as its own what was born since then. `launch` is what started it.
    """

    transport: asyncio.SubprocessTransport
    pipes: Pipes
    root: psutil.Process | None
    tag_id: str
    since: float
    spawned_at: float  # loop time just before the spawn
    launch: Launch

    @property
    def pid(self) -> int:
        """The process id."""
        return int(self.transport.get_pid())

    @property
    def exited(self) -> bool:
        """True once the process has exited."""
        return self.pipes.exited.done()

    def scope(self) -> RunScope:
        """How to recognise the process and anything it started."""
        launch = self.launch
        return RunScope(
            run_tag(self.tag_id), self.since, launch.own_uid, launch.contained, launch.alone
        )


async def spawn(launch: Launch, tag_id: str) -> Spawned | str:
    """Spawn `launch` tagged `tag_id` (new session, stdin from /dev/null, output to pipes held
    until a run adopts it); or a sentence saying why it could not start."""
    loop = asyncio.get_running_loop()
    since, spawned_at = process_clock() - 0.05, loop.time()
    switch: dict[str, Any] = {}
    if launch.user is not None:
        switch = {"user": launch.user, "group": launch.user, "extra_groups": []}
    tag = run_tag(tag_id)
    with spawning(tag):
        try:
            transport, pipes = await loop.subprocess_exec(
                Pipes,
                *launch.argv,
                stdin=DEVNULL,
                stdout=PIPE,
                stderr=PIPE,
                cwd=launch.cwd,
                env={**launch.env, RUN_TAG_ENV: tag_id},
                start_new_session=True,
                pass_fds=launch.pass_fds,
                **switch,
            )
        except OSError as error:
            return spawn_error(launch.argv[0], error)
        pid = transport.get_pid()
        track_root(pid, tag)
    pipes.exited.add_done_callback(lambda _: untrack_root(pid))
    try:
        root: psutil.Process | None = psutil.Process(pid)
    except psutil.Error:
        root = None
    return Spawned(transport, pipes, root, tag_id, since, spawned_at, launch)


async def retire(spawned: Spawned) -> KillReport:
    """Kill a spawned process that no run supervises (and anything it started); verify."""
    kill = await kill_run(spawned.root, spawned.scope(), ())
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(spawned.pipes.exited), EXIT_WAIT_S)
    spawned.transport.close()
    return kill


async def drained(transport: asyncio.SubprocessTransport) -> None:
    """Wait (up to a second) until the output pipes hold no unread bytes.

    The process wrote its output before it said it was done, so once the pipes are empty,
    every byte of the run has reached the captures (a read and its delivery are one step).
    """
    fds = []
    for fd in (1, 2):
        pipe = transport.get_pipe_transport(fd)
        if pipe is not None and (file := pipe.get_extra_info("pipe")) is not None:
            fds.append(file.fileno())
    deadline = time.monotonic() + PIPE_DRAIN_S
    while time.monotonic() < deadline:
        pending = 0
        for fd in fds:
            with contextlib.suppress(OSError):
                pending += struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]
        if not pending:
            return
        await asyncio.sleep(0.001)
