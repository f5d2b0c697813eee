"""The host's end of a gVisor session's supervisor: commands started, streamed and swept through it.

`PROGRAM` is the container's command under gVisor (`gvisor_supervisor`, its source passed to the
image's python3). `SupervisorLink` attaches to the container's stdin and stdout once, writes the
supervisor's requests and hands its answers, read by a thread of its own, to the event loop:
`start` returns a `SupervisedCommand` (output chunks as they arrive, then the exit code, the same
shape as a `docker exec` stream) and `sweep` the supervisor's report of a run's processes killed.
When the link is lost (the container stopped) every command in flight ends as Docker ends an exec
whose container died, with 137, and what the supervisor wrote to its stderr before it had its key
is kept in `said`. Requests and answers are sealed with the session's `LinkSecret` (see
`gvisor_supervisor`): an answer whose MAC or order does not hold means a process in the container
wrote into the supervisor's stdout, a request gap that one read its stdin, and the link kills the
container and sets `tampered` (nothing it says can be trusted any more), as it does when a sweep or
the ping it sends every `PING_S` while commands run goes unanswered.
"""

import asyncio
import contextlib
import hmac
import itertools
import json
import os
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
from docker.utils.socket import STDERR, STDOUT, frames_iter

from workbench.executors.docker.engine import shut_attached
from workbench.executors.docker.gvisor_supervisor import (
    CLOSED,
    EXITED,
    HEADER,
    MAC_SIZE,
    REPLY,
    REQUEST_GAP,
    mac,
    sealed_request,
)
from workbench.executors.docker.gvisor_supervisor import (
    STDERR as OUTPUT_STDERR,
)
from workbench.executors.types import Stream

PROGRAM = [
    "python3",
    "-I",
    "-S",
    "-c",
    Path(__file__).with_name("gvisor_supervisor.py").read_text(encoding="utf-8"),
]
LOST_EXIT_CODE = 137  # what Docker reports for an exec whose container was killed
SAID_CHARS = 2000
MAX_PAYLOAD = 1 << 18  # output frames are 64 KiB at most, sweep reports far less: not its
REPLY_S = 15.0  # a sweep takes about a second at most: past this its request was taken
# A process stopped past REPLY_S (Ctrl+Z) resumes with its answers unread: they come within
# this grace, a taken request's never does.
REPLY_GRACE_S = 1.0
PING_S = 2.0  # while commands run: a ping reveals a request taken before it, or is itself lost
TAMPERED = (
    "a process in the container wrote into its supervisor's channel or took its requests; the "
    "container was stopped"
)
Chunk = tuple[Stream, bytes]


@dataclass
class LinkSecret:
    """One container's key, sent to its supervisor once, by its first link, before any command
    ran, and the counters every link to it numbers requests and commands with."""

    key: bytes = field(default_factory=lambda: os.urandom(32))
    sent: bool = False
    requests: "itertools.count[int]" = field(default_factory=lambda: itertools.count(1))
    commands: "itertools.count[int]" = field(default_factory=lambda: itertools.count(1))


class SupervisedCommand:
    """A command the supervisor started: its output chunks, then its exit code."""

    def __init__(self, link: "SupervisorLink", number: int) -> None:
        self._link = link
        self.number = number
        self.queue: asyncio.Queue[Chunk | None] = asyncio.Queue()
        self.exit: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.output_open = True

    async def chunks(self) -> AsyncIterator[Chunk]:
        """Output chunks until the command's output closes."""
        while (chunk := await self.queue.get()) is not None:
            yield chunk

    async def exited(self) -> int:
        """Wait until the command has ended; its exit code (128 + N for signal N)."""
        return await asyncio.shield(self.exit)

    async def close(self) -> None:
        """Stop its output (the supervisor closes its pipes when still open) and forget it."""
        await self._link.forget(self)


class SupervisorLink:
    """The attached stdin and stdout of one session container's supervisor."""

    def __init__(self, api: docker.APIClient, container_id: str, secret: LinkSecret) -> None:
        self._api = api
        self._container_id = container_id
        self._secret = secret
        self._sock: Any = None
        self._commands: dict[int, SupervisedCommand] = {}
        self._replies: dict[int, asyncio.Future[bytes]] = {}
        self._writing = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reader: asyncio.Future[None] | None = None
        self._pinger: asyncio.Task[None] | None = None
        self.lost = False
        self.tampered = False  # a process in the container wrote into or read the channel
        self.said = ""  # the supervisor's own stderr (the init's, when it could not start it)
        self.cpu_seconds = 0.0  # the supervisor's own CPU time, as of its last sweep

    async def open(self) -> None:
        """Attach to the container's stdin, stdout and stderr and start reading."""
        params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        self._sock = await asyncio.to_thread(
            self._api.attach_socket, self._container_id, params=params
        )
        self._loop = asyncio.get_running_loop()
        self._reader = self._loop.create_future()
        threading.Thread(target=self._read, name="supervisor-output", daemon=True).start()
        self._pinger = asyncio.create_task(self._ping_while_busy())
        if not self._secret.sent:
            line = json.dumps({"key": self._secret.key.hex()}).encode() + b"\n"
            try:
                await asyncio.to_thread(self._write, None, line)
            except OSError:
                await self.close()
                raise
            self._secret.sent = True

    async def start(self, argv: list[str], env: dict[str, str], cwd: str) -> SupervisedCommand:
        """Start `argv` with `env` (over the container's) in `cwd`."""
        command = SupervisedCommand(self, next(self._secret.commands))
        self._commands[command.number] = command
        if self.lost:
            self._end(command)
        else:
            await self._send(op="start", command=command.number, argv=argv, env=env, cwd=cwd)
        return command

    async def sweep(self, tag: str, keep: int, live: list[str]) -> str:
        """Have the supervisor kill the processes of the run tagged `tag` (`live`: the tags of
        the runs in flight); its report (`session.KILL_SCRIPT`'s lines). OSError when the link
        is lost, or the answer does not come (then the container is killed: a process in it
        took the request)."""
        report = await self._ask(op="sweep", tag=tag, keep=keep, live=live)
        last = report.rpartition("\n")[2]
        with contextlib.suppress(ValueError):
            self.cpu_seconds = float(last.removeprefix("cpu "))
        return report

    async def _ask(self, **request: object) -> str:
        """Send `request` and return the supervisor's reply to it, or kill the container
        when none comes within `REPLY_S`."""
        number = next(self._secret.commands)
        reply: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._replies[number] = reply
        try:
            await self._send(**request, command=number)
            for seconds in (REPLY_S, REPLY_GRACE_S):
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(seconds):
                        return (await reply).decode(errors="replace")
            await asyncio.to_thread(self._tamper)
            raise ConnectionResetError(TAMPERED)
        finally:
            self._replies.pop(number, None)

    async def _ping_while_busy(self) -> None:
        """While commands run, send a ping every `PING_S`, not waiting for the last one's
        answer: the supervisor answers a request that follows a taken one with a gap, and one
        left unanswered kills the container (`_ask`)."""
        pings: set[asyncio.Task[None]] = set()
        try:
            while not self.lost:
                await asyncio.sleep(PING_S)
                if self._commands:
                    ping = asyncio.create_task(self._ping())
                    pings.add(ping)
                    ping.add_done_callback(pings.discard)
        finally:
            for ping in pings:
                ping.cancel()

    async def _ping(self) -> None:
        with contextlib.suppress(OSError):
            await self._ask(op="ping")

    async def forget(self, command: SupervisedCommand) -> None:
        if self._commands.pop(command.number, None) is not None and command.output_open:
            with contextlib.suppress(OSError):
                await self._send(op="close", command=command.number)

    async def _send(self, **request: object) -> None:
        if self.lost:
            raise ConnectionResetError("the session's supervisor is gone")
        await asyncio.to_thread(self._write, request)

    def _write(self, request: dict[str, object] | None = None, line: bytes = b"") -> None:
        """Seal and write `request` (or write `line`). Its number is taken under the lock:
        the supervisor drops a request numbered below one it has seen."""
        with self._writing:
            if request is not None:
                numbered = {**request, "seq": next(self._secret.requests)}
                line = sealed_request(self._secret.key, numbered)
            getattr(self._sock, "_sock", self._sock).sendall(line)

    def _read(self) -> None:
        assert self._loop is not None
        loop, pending, said, last = self._loop, b"", b"", 0
        try:
            for stream_id, data in frames_iter(self._sock, False):  # type: ignore[no-untyped-call]
                if stream_id == STDERR:
                    said = (said + data)[-SAID_CHARS:]
                    loop.call_soon_threadsafe(self._heard, said.decode(errors="replace"))
                if stream_id != STDOUT or not data:
                    continue
                pending += data
                frames = []
                while len(pending) >= HEADER.size:
                    frame, number, kind, size = HEADER.unpack_from(pending)
                    end = HEADER.size + size + MAC_SIZE
                    if len(pending) < end and size <= MAX_PAYLOAD:
                        break
                    header, payload = pending[: HEADER.size], pending[HEADER.size : end - MAC_SIZE]
                    if (
                        size > MAX_PAYLOAD
                        or frame <= last
                        or not hmac.compare_digest(
                            pending[end - MAC_SIZE : end], mac(self._secret.key, header, payload)
                        )
                    ):
                        self._tamper()
                        return
                    last, pending = frame, pending[end:]
                    if kind == REQUEST_GAP:  # its own frames still hold: read on until it stops
                        self._tamper()
                    else:
                        frames.append((number, kind, payload))
                if frames:
                    loop.call_soon_threadsafe(self._deliver, frames)
        except (OSError, ValueError):  # the socket was shut down under us
            pass
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(self._lose)

    def _tamper(self) -> None:
        """Kill the container whose supervisor can no longer be trusted (blocking; any thread)."""
        self.tampered = True
        with contextlib.suppress(docker.errors.DockerException, OSError):
            self._api.kill(self._container_id)

    def _heard(self, said: str) -> None:
        self.said = said.strip()

    def _deliver(self, frames: list[tuple[int, int, bytes]]) -> None:
        for number, kind, payload in frames:
            if kind == REPLY:
                reply = self._replies.get(number)
                if reply is not None and not reply.done():
                    reply.set_result(payload)
                continue
            command = self._commands.get(number)
            if command is None:
                continue
            if kind == CLOSED:
                command.output_open = False
                command.queue.put_nowait(None)
            elif kind == EXITED:
                if not command.exit.done():
                    command.exit.set_result(int(payload))
            else:
                command.queue.put_nowait(
                    (Stream.STDERR if kind == OUTPUT_STDERR else Stream.STDOUT, payload)
                )

    def _lose(self) -> None:
        self.lost = True
        for command in self._commands.values():
            self._end(command)
        for reply in self._replies.values():
            if not reply.done():
                reply.set_exception(ConnectionResetError("the session's supervisor is gone"))
        if self._reader is not None and not self._reader.done():
            self._reader.set_result(None)

    @staticmethod
    def _end(command: SupervisedCommand) -> None:
        if command.output_open:
            command.output_open = False
            command.queue.put_nowait(None)
        if not command.exit.done():
            command.exit.set_result(LOST_EXIT_CODE)

    async def close(self) -> None:
        """Shut the connection down (unblocks the reader thread) and wait for it."""
        if self._pinger is not None:
            self._pinger.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pinger
        if self._sock is None:
            return
        await shut_attached(self._sock, self._reader)
        self._sock = None
