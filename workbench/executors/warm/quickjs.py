"""Warm QuickJS workers: spawned ahead of their runs, kept ready per posture and session.

`QuickJsWorkerPool` is the `WarmPool` of the quickjs posture: it keeps `size` workers (`WarmWorker`,
running `workbench.executors.quickjs.worker.serve`) spawned for one posture and waiting on their
control sockets, re-keys when a run of another posture comes, spawns the next worker only after a
run ends, and with `reuse` takes back a worker whose run ended `ok` or with a JavaScript error. Its
`executor()` adopts a ready worker for a run or starts cold; `close()` kills the idle workers and
verifies they are gone.
"""

import asyncio
import contextlib
import json
import os
import secrets
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.executors.contract import Executor
from workbench.executors.hardened.executor import RUN_UID_BASE, RUN_UID_SPAN
from workbench.executors.process.outcome import format_bytes
from workbench.executors.process.ownership import FolderLoan, SharedLoan
from workbench.executors.process.runner import Launch
from workbench.executors.process.spawned import Spawned, retire, spawn
from workbench.executors.quickjs.worker.protocol import MessageDecoder, encode_message
from workbench.executors.types import SessionSpec
from workbench.executors.warm.starts import PoolStatus
from workbench.platform.interpreter import child_argv
from workbench.postures.model import Posture

SERVE_MODULE = "workbench.executors.quickjs.worker.serve"
WAITING_TIMEOUT_S = 10.0  # from spawn to the worker's `waiting`
REUSE_RUNS = 16  # runs a reused worker serves at most
LOANS_KEPT = 64  # workspace loans a reusing pool remembers (the app's runs each get a new one)


@dataclass(slots=True)
class PoolIdentity:
    """Who a reused worker runs as (as root): the pool's throwaway uid, and the loan of the
    run's workspace to it."""

    uid: int | None
    loan: SharedLoan | None


class WarmWorker:
    """A spawned worker waiting for a run, and the app's end of its control socket."""

    def __init__(
        self, spawned: Spawned, sock: socket.socket, launch: Launch, posture: Posture, max_runs: int
    ) -> None:
        self.spawned = spawned
        self.sock = sock
        self.launch = launch
        self.posture = posture
        self.max_runs = max_runs
        self.runs = 0
        self.ready_seconds = 0.0  # from spawn to `waiting`
        self.ready_at = 0.0  # time.monotonic() at `waiting`

    def send(self, message: dict[str, Any], fds: tuple[int, int]) -> None:
        """Send the worker a run and its descriptors (it is waiting, so this does not block)."""
        self.sock.setblocking(True)
        socket.send_fds(self.sock, [encode_message(message)], list(fds))
        self.runs += 1

    def describe(self) -> str:
        """The card's line for this worker, as the run adopts it."""
        if self.runs:
            return (
                f"reused warm worker: run {self.runs + 1} of at most {self.max_runs} in one "
                "process, a fresh QuickJS context"
            )
        age = time.monotonic() - self.ready_at
        return (
            f"warm worker: started in {self.ready_seconds * 1000:.0f} ms, {age:.1f} s before "
            "this run (not counted in its time)"
        )

    async def wait_waiting(self) -> bool:
        """Wait for the worker's `waiting` message; False if it does not come."""
        loop = asyncio.get_running_loop()
        self.sock.setblocking(False)
        decoder = MessageDecoder()
        try:
            async with asyncio.timeout(WAITING_TIMEOUT_S):
                while True:
                    data = await loop.sock_recv(self.sock, 4096)
                    if not data:
                        return False
                    if any(m.get("type") == "waiting" for m in decoder.feed(data)):
                        break
        except (TimeoutError, OSError, ValueError):
            return False
        self.ready_seconds = loop.time() - self.spawned.spawned_at
        self.ready_at = time.monotonic()
        return True

    async def retire(self) -> int:
        """Kill the worker; how many of its processes survived (0)."""
        self.sock.close()
        return (await retire(self.spawned)).leftover


async def start_worker(posture: Posture, max_runs: int) -> WarmWorker | str:
    """Spawn a worker for runs of `posture` and wait until it waits; or why it could not.

    It knows no skill or workspace yet: its environment holds only the run tag and its
    working folder is /, neither of which JavaScript can see; the run brings its folders as
    descriptors.
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    spec = {"control_fd": theirs.fileno(), "fetch": bool(posture.fetch_hosts)}
    argv = (*child_argv(SERVE_MODULE), json.dumps({**spec, "max_runs": max_runs}))
    launch = Launch(argv, {}, Path("/"), pass_fds=(theirs.fileno(),), alone=True)
    try:
        spawned = await spawn(launch, f"quickjs-warm-{secrets.token_hex(6)}")
    except BaseException:  # cancelled: the pool is closing
        ours.close()
        raise
    finally:
        theirs.close()
    if isinstance(spawned, str):
        ours.close()
        return spawned
    worker = WarmWorker(spawned, ours, launch, posture, max_runs)
    try:
        waiting = await worker.wait_waiting()
    except asyncio.CancelledError:  # the pool is closing: leave nothing behind
        await worker.retire()
        raise
    if waiting:
        return worker
    await worker.retire()
    return "a warm QuickJS worker did not start (no `waiting` within 10 s)"


class QuickJsWorkerPool:
    """Warm QuickJS workers for one posture at a time; see the module docstring."""

    def __init__(self, size: int = 1, reuse: bool = False) -> None:
        self._size = size
        self._max_runs = REUSE_RUNS if reuse else 1
        self._posture: Posture | None = None
        self._uid = RUN_UID_BASE + secrets.randbelow(RUN_UID_SPAN) if os.geteuid() == 0 else None
        self._loans: dict[Path, SharedLoan] = {}
        self._idle: list[WarmWorker] = []
        self._starting = 0
        self._lent = 0  # reused workers out on a run, which may come back
        self._problem = ""
        self._refill: asyncio.Task[None] | None = None
        self._retiring: set[asyncio.Task[int]] = set()
        self.leftover = 0  # processes of retired workers that survived their kill (0)

    def status(self) -> PoolStatus:
        """The pool's state now."""
        key = ""
        if self._posture is not None and self._size:
            limits = self._posture.limits
            key = f"any skill, {format_bytes(limits.memory_bytes)}, {limits.timeout_s:g} s"
            if self._max_runs > 1:
                key += f", each worker reused for up to {self._max_runs} runs"
        ready = sum(not w.spawned.exited for w in self._idle)
        return PoolStatus(self._size, ready, self._starting, key, self._problem)

    def executor(self, posture: Posture) -> Executor:
        """A quickjs executor that takes its workers from this pool."""
        from workbench.executors.quickjs.executor import QuickJsExecutor

        return QuickJsExecutor(posture, pool=self)

    async def resize(self, size: int) -> None:
        """Keep `size` workers ready from now on."""
        self._size = max(0, size)
        while len(self._idle) > self._size:
            self._drop(self._idle.pop())
        self._kick()

    async def prime(self, posture: Posture, session: SessionSpec) -> None:
        """Fill the pool for runs of `posture` (in any session: see `start_worker`)."""
        del session
        self._rekey(posture)
        self._kick()

    async def close(self) -> None:
        """Stop refilling, kill every idle worker and verify they are gone."""
        self._size = 0
        if self._refill is not None:
            self._refill.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refill
        while self._idle:
            self._drop(self._idle.pop())
        while self._retiring:
            await asyncio.gather(*self._retiring)

    def identity(self, session: SessionSpec) -> PoolIdentity | None:
        """Who a reused worker runs as in `session`; None when workers are one-shot (each
        takes the uid of the executor that adopts it, as a cold worker does)."""
        if self._max_runs == 1:
            return None
        if self._uid is None:
            return PoolIdentity(None, None)
        loan = self._loans.pop(session.workspace, None)
        if loan is None:
            loan = SharedLoan(FolderLoan(session.workspace, self._uid, self._uid))
        self._loans[session.workspace] = loan  # the most recent last
        while len(self._loans) > LOANS_KEPT:
            del self._loans[next(iter(self._loans))]
        return PoolIdentity(self._uid, loan)

    def take(self, posture: Posture) -> WarmWorker | None:
        """A ready worker for a run of `posture`, or None (the run starts cold)."""
        self._rekey(posture)
        worker = None
        while self._idle and worker is None:
            candidate = self._idle.pop(0)
            if not candidate.spawned.exited:
                worker = candidate
            else:
                self._drop(candidate)
        if worker is None:
            self._kick()
        elif worker.max_runs > 1:
            self._lent += 1
        return worker  # refilled when the run is over (`settle`): never competing with it

    def settle(self, worker: WarmWorker, kept: bool) -> None:
        """After a run: a kept worker goes back for another run of its posture, else it is
        killed."""
        if worker.max_runs > 1:
            self._lent -= 1
        wanted = self._wanted() > 0 and worker.posture == self._posture
        if kept and wanted and worker.runs < worker.max_runs:
            self._idle.append(worker)
        else:
            self._drop(worker)
        self._kick()

    def _rekey(self, posture: Posture) -> None:
        """Serve `posture` from now on: the idle workers of another one are killed."""
        if posture != self._posture:
            self._posture, self._problem = posture, ""
            while self._idle:
                self._drop(self._idle.pop())

    def _drop(self, worker: WarmWorker) -> None:
        task = asyncio.get_running_loop().create_task(worker.retire())
        self._retiring.add(task)
        task.add_done_callback(self._retired)

    def _retired(self, task: "asyncio.Task[int]") -> None:
        self._retiring.discard(task)
        if not task.cancelled() and task.exception() is None:
            self.leftover += task.result()

    def _kick(self) -> None:
        if self._refill is None or self._refill.done():
            self._refill = asyncio.get_running_loop().create_task(self._fill())

    def _wanted(self) -> int:
        return self._size - len(self._idle) - self._starting - self._lent

    async def _fill(self) -> None:
        """Spawn workers one at a time until the pool holds `size` for its posture."""
        while self._posture is not None and self._wanted() > 0:
            posture = self._posture
            self._starting += 1
            try:
                worker = await start_worker(posture, self._max_runs)
            finally:
                self._starting -= 1
            if isinstance(worker, str):
                self._problem = worker
                return
            self._problem = ""
            if posture == self._posture and self._wanted() > 0:
                self._idle.append(worker)
            else:
                self._drop(worker)
