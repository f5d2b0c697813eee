"""One QuickJS worker run: its limits, the control channel, and what the card reads back.

`worker_rlimits()` are the rlimits a worker applies to itself; `WorkerRun` owns a cold run's
control pipe, reads the worker's `ready` message and /proc into the posture card, and keeps the
worker's messages (`result`, `host_call`) for the verdict. `WarmRun` does the same for a warm
worker a run adopts (`workbench.executors.warm.quickjs`): it sends the worker the run and its
two descriptors on the worker's control socket, and, when the worker is reused, tells the runner
the run is done as soon as the worker's `result` says it waits for another.
"""

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from workbench.executors.process.outcome import format_bytes
from workbench.executors.process.ownership import SharedLoan
from workbench.executors.process.readback import (
    PROC_LIMIT_ROWS,
    parse_limits,
    parse_status,
    proc_texts,
)
from workbench.executors.process.runner import Launch
from workbench.executors.process.session import PreparedRun
from workbench.executors.quickjs.worker.protocol import MessageDecoder, ProtocolError
from workbench.executors.types import HostCall, PostureCard
from workbench.postures.model import MIB, Limits

if TYPE_CHECKING:
    from workbench.executors.warm.quickjs import WarmWorker

STACK_LIMIT_BYTES = 1 * MIB
ADDRESS_SPACE_HEADROOM = 256 * MIB  # the interpreter, its imports and fs buffers
OPEN_FILES = 16
FETCH_TIMEOUT_S = 10.0  # per call, cut to what is left of the run
FETCH_MAX_BYTES = 4 * MIB  # per response body (and per request body)
FETCH_MAX_CALLS = 100  # per run


def worker_rlimits(limits: Limits) -> dict[str, tuple[int, int]]:
    """The rlimits the worker applies to itself, as {name: (soft, hard)}: hard equal to soft,
    so the script cannot raise any (a reused warm worker's CPU hard limit covers its runs)."""
    address_space = limits.memory_bytes + ADDRESS_SPACE_HEADROOM
    return {
        "AS": (address_space, address_space),
        "CPU": (limits.cpu_seconds, limits.cpu_seconds),
        "NPROC": (0, 0),
        "NOFILE": (OPEN_FILES, OPEN_FILES),
        "FSIZE": (limits.file_size_bytes, limits.file_size_bytes),
        "CORE": (0, 0),
    }


def fetch_checks(hosts: tuple[str, ...]) -> list[tuple[str, bool]]:
    """The card's lines for `fetch`: off, or each allowed host and the caps."""
    if not hosts:
        return [("fetch off (no network API)", True)]
    caps = (
        f"fetch: http/https only, no redirects followed, {FETCH_TIMEOUT_S:g} s per call, "
        f"{format_bytes(FETCH_MAX_BYTES)} per response, {FETCH_MAX_CALLS} calls per run"
    )
    return [(f"fetch allowed for {host}", True) for host in hosts] + [(caps, True)]


def limit_checks(
    proc_limits: str, wanted: dict[str, tuple[int, int]], cpu_base: int = 0
) -> list[tuple[str, bool]]:
    """Pair each wanted rlimit with whether `/proc/PID/limits` shows it applied, soft and hard.

    `cpu_base`: CPU seconds a warm worker had used before the run, which its CPU limit adds.
    """
    rows = parse_limits(proc_limits)
    checks = []
    for name, (soft, hard) in wanted.items():
        shown = soft - cpu_base if name == "CPU" else soft
        label = f"RLIMIT_{name} " + (format_bytes(soft) if name in ("AS", "FSIZE") else str(shown))
        held = rows.get(PROC_LIMIT_ROWS[name]) == (soft, hard)
        if name == "CPU":
            label += " s" + (f" (at {soft} s of the worker's CPU time)" if cpu_base else "")
        checks.append((label, held))
    return checks


def uid_check(proc_status: str, uid: int) -> tuple[str, bool]:
    """The card's line for the throwaway uid, held when every uid of the worker is it."""
    uids = parse_status(proc_status).get("Uid", "").split()
    return (f"runs as uid {uid}", len(uids) == 4 and set(uids) == {str(uid)})


class ControlReader(asyncio.Protocol):
    """Collects the worker's control messages until its pipe closes."""

    def __init__(self) -> None:
        self.decoder = MessageDecoder()
        self.messages: list[dict[str, Any]] = []
        self.error = ""
        loop = asyncio.get_running_loop()
        self.ready: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        # a `result` saying the worker waits for another run (a reused warm worker)
        self.finished: asyncio.Future[None] = loop.create_future()

    def data_received(self, data: bytes) -> None:
        try:
            self.messages += self.decoder.feed(data)
        except ProtocolError as error:
            self.error = str(error)
        if not self.ready.done() and self.messages:
            self.ready.set_result(None)
        last = self.messages[-1] if self.messages else {}
        done = last.get("type") == "result" and last.get("next") is True and not self.error
        if done and not self.finished.done():
            self.finished.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        for future in (self.ready, self.closed):
            if not future.done():
                future.set_result(None)


class WorkerRun(PreparedRun):
    """One worker run: owns the control pipe and turns the worker's report into a verdict."""

    def __init__(
        self,
        launch: Launch,
        card: PostureCard,
        limits: Limits,
        read_fd: int,
        run_uid: int | None,
        workspace_loan: SharedLoan | None,
    ) -> None:
        super().__init__(launch, card, limits)
        self.read_fd = read_fd
        self.run_uid = run_uid
        self.workspace_loan = workspace_loan
        self.write_fd = launch.pass_fds[0]
        self.reader = ControlReader()
        self.transport: asyncio.ReadTransport | None = None

    async def on_spawned(self, pid: int) -> None:
        """Read the applied rlimits and uid back once the worker is ready; read to the end."""
        os.close(self.write_fd)
        self.write_fd = -1
        pipe = os.fdopen(self.read_fd, "rb", buffering=0)
        self.read_fd = -1
        loop = asyncio.get_running_loop()
        self.transport, _ = await loop.connect_read_pipe(lambda: self.reader, pipe)
        await self.read_back(pid)
        await self.reader.closed

    async def read_back(self, pid: int) -> None:
        """Once the worker is ready, add the rlimits and uid it shows in /proc to the card."""
        await self.reader.ready
        if self.reader.messages:  # from /proc of the worker, or its own copy if it is gone
            ready = self.reader.messages[0]
            texts = proc_texts(pid) or (str(ready.get("limits")), str(ready.get("status")))
            wanted = worker_rlimits(self.card.posture.limits)
            cpu_base = 0
            with contextlib.suppress(KeyError, TypeError, ValueError):
                soft, hard = (int(n) for n in ready["cpu_limit"])
                cpu_base, wanted["CPU"] = soft - wanted["CPU"][0], (soft, hard)
            checks = limit_checks(texts[0], wanted, cpu_base)
            if self.run_uid is not None:
                checks.append(uid_check(texts[1], self.run_uid))
            self.card = replace(self.card, checks=tuple(checks) + self.card.checks)

    async def close(self) -> None:
        """Close whatever end of the control pipe is still open here; give the workspace back."""
        if self.transport is not None:
            self.transport.close()
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                os.close(fd)
        if self.workspace_loan is not None:
            await self.workspace_loan.release()

    def result_message(self) -> dict[str, Any] | None:
        """The worker's `result` message, if it sent one."""
        return next((m for m in self.reader.messages if m.get("type") == "result"), None)

    def host_calls(self) -> tuple[HostCall, ...]:
        """The calls the worker logged (fetch), in order."""
        calls = []
        for message in self.reader.messages:
            if message.get("type") != "host_call":
                continue
            with contextlib.suppress(KeyError, TypeError, ValueError):
                calls.append(
                    HostCall(
                        api=str(message["api"]),
                        target=str(message["target"]),
                        allowed=message["allowed"] is True,
                        outcome=str(message["outcome"]),
                        t=float(message["t"]),
                        duration_s=float(message["duration_s"]),
                    )
                )
        return tuple(calls)


class WarmRun(WorkerRun):
    """A run adopted by a warm worker: sends it the run, then reads its control socket."""

    def __init__(
        self,
        card: PostureCard,
        limits: Limits,
        worker: "WarmWorker",
        message: dict[str, Any],
        fds: tuple[int, int],
        run_uid: int | None,
        workspace_loan: SharedLoan | None,
        settle: Callable[["WarmWorker", bool], None],
    ) -> None:
        super().__init__(worker.launch, card, limits, -1, run_uid, workspace_loan)
        self.settle = settle  # gets the worker back after the run, and whether it was kept
        self.write_fd = -1  # the worker's end of the socket is the worker's alone
        self.worker = worker
        self.message = message
        self.fds = fds
        self.adopt = worker.spawned
        self.finished = self.reader.finished if worker.max_runs > 1 else None

    async def on_spawned(self, pid: int) -> None:
        """Send the run (timed from now) and its descriptors; read the worker's messages."""
        run = self.message["run"]
        run["deadline"] = time.time() + self.card.posture.limits.timeout_s
        try:
            self.worker.send(self.message, self.fds)
        except OSError:
            return  # the worker is gone: its exit ends the run
        finally:
            self.close_fds()
        pipe = os.fdopen(os.dup(self.worker.sock.fileno()), "rb", buffering=0)
        loop = asyncio.get_running_loop()
        self.transport, _ = await loop.connect_read_pipe(lambda: self.reader, pipe)
        await self.read_back(pid)
        waiters = {self.reader.closed, self.reader.finished}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)

    def close_fds(self) -> None:
        """Close this side's copies of the run's descriptors."""
        for fd in self.fds:
            if fd >= 0:
                os.close(fd)
        self.fds = (-1, -1)

    async def close(self) -> None:
        """Stop reading the socket (it stays open for a kept worker); give the workspace back;
        hand the worker back, kept or to be killed."""
        self.close_fds()
        await super().close()
        self.settle(self.worker, self.outcome is not None and self.outcome.kept)
