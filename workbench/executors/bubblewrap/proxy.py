"""The allow-list proxy of the bubblewrap posture: HTTP and HTTPS (CONNECT) to allowed hosts only.

The sandbox has no network but its own loopback. When hosts are allowed, the loader opens a
listener on 127.0.0.1:PROXY_PORT inside the sandbox's network namespace and hands it to the
workbench by descriptor, and the command gets `HTTP_PROXY`/`HTTPS_PROXY` pointing at it: the
workbench accepts the connections itself (asyncio), so no process inside forwards anything and
nothing inside needs a unix socket. Each request is `CONNECT host:port` (HTTPS, tunnelled as
bytes) or an absolute-URI request (`GET http://host:port/path`, sent on with the path alone and
`Connection: close`). A host is allowed when it is on the list (`AllowList`: `HOST` allows ports
80 and 443, `HOST:PORT` that port; names are compared exactly, without case); the name is
resolved on the host. Every attempt, allowed, refused or failed, is recorded
(`NetworkAttempt`: host, port, time, verdict, bytes each way). A connection that bypasses the
proxy finds no route: the sandbox's network namespace has only its loopback. Bounded: request
heads of at most 16 KiB, read within 10 s, 64 connections at once, 1,000 attempts recorded.
"""

import asyncio
import contextlib
import socket
from dataclasses import dataclass, field, replace

from workbench.errors import UsageError
from workbench.executors.types import NetworkAttempt

HEAD_LIMIT = 16 * 1024
HEAD_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 64
MAX_RECORDED = 1000
_CHUNK = 64 * 1024
_DEFAULT_PORTS = (80, 443)


@dataclass(frozen=True, slots=True)
class AllowList:
    """The hosts a command may reach: (host, port) pairs; port None means 80 and 443."""

    entries: tuple[tuple[str, int | None], ...]

    @classmethod
    def parse(cls, texts: tuple[str, ...]) -> "AllowList":
        """From `HOST`, `HOST:PORT` or `[V6]:PORT` texts; `UsageError` for a malformed one."""
        return cls(tuple(parse_host(text) for text in texts))

    def allows(self, host: str, port: int) -> bool:
        """True when `host:port` is on the list."""
        host = host.lower().strip("[]")
        return any(
            host == allowed and (port == want if want is not None else port in _DEFAULT_PORTS)
            for allowed, want in self.entries
        )


def parse_host(text: str) -> tuple[str, int | None]:
    """`("example.org", 8080)` from `example.org:8080`; `UsageError` naming a bad one."""
    host, port = text.strip(), None
    if host.startswith("["):
        inside, _, rest = host[1:].partition("]")
        host, port_text = inside, rest.removeprefix(":") if rest.startswith(":") else None
        if rest and port_text is None:
            raise UsageError(f"not a HOST[:PORT]: {text!r}")
    elif host.count(":") == 1:
        host, port_text = host.split(":")
    else:
        port_text = None
    if port_text is not None:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise UsageError(f"not a port in {text!r} (1 to 65535)")
        port = int(port_text)
    if not host or any(c.isspace() or c in "/@" for c in host):
        raise UsageError(f"not a HOST[:PORT]: {text!r}")
    return host.lower(), port


@dataclass(slots=True)
class _Attempt:
    host: str
    port: int
    t: float
    method: str
    verdict: str = "refused"
    detail: str = ""
    sent: int = 0
    received: int = 0

    def frozen(self) -> NetworkAttempt:
        return NetworkAttempt(
            self.host, self.port, self.t, self.verdict, self.sent, self.received, self.method,
            self.detail,
        )  # fmt: skip


@dataclass(slots=True)
class EgressProxy:
    """Serves one run's proxy listener (see the module docstring)."""

    allow: AllowList
    t0: float  # loop time the run started
    _attempts: list[_Attempt] = field(default_factory=list)
    _dropped: int = 0
    _tasks: set["asyncio.Task[None]"] = field(default_factory=set)
    _server: asyncio.Server | None = None

    async def serve(self, listener: socket.socket) -> None:
        """Accept the sandbox's connections on `listener` (a listening socket) from now on."""
        listener.setblocking(False)
        self._server = await asyncio.start_server(self._accepted, sock=listener, limit=HEAD_LIMIT)

    async def close(self) -> tuple[NetworkAttempt, ...]:
        """Stop serving, end open connections, and return every attempt recorded."""
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
            self._server = None
        log = tuple(attempt.frozen() for attempt in self._attempts)
        if self._dropped:
            last = log[-1]
            note = f"{self._dropped} later attempt(s) were not recorded (limit {MAX_RECORDED})"
            log = (*log[:-1], replace(last, detail=f"{last.detail}; {note}".lstrip("; ")))
        return log

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            if len(self._tasks) > MAX_CONNECTIONS:
                await _reply(writer, 503, "too many connections through the proxy at once")
                return
            await self._serve_one(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _record(self, host: str, port: int, method: str) -> _Attempt:
        loop = asyncio.get_running_loop()
        attempt = _Attempt(host, port, round(loop.time() - self.t0, 3), method)
        if len(self._attempts) < MAX_RECORDED:
            self._attempts.append(attempt)
        else:
            self._dropped += 1
        return attempt

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        line, _, headers = head.decode("latin-1").partition("\r\n")
        parts = line.split(" ")
        target = _target(parts)
        if target is None:
            await _reply(writer, 400, "the proxy takes CONNECT host:port or http://host/ only")
            return
        host, port, path = target
        method = parts[0]
        attempt = self._record(host, port, method)
        if not self.allow.allows(host, port):
            attempt.detail = "not on the allow-list"
            await _reply(writer, 403, f"{host}:{port} is not on the workbench's allow-list")
            return
        try:
            upstream_reader, upstream = await asyncio.wait_for(
                asyncio.open_connection(host.strip("[]"), port), CONNECT_TIMEOUT_S
            )
        except (OSError, TimeoutError) as error:
            attempt.verdict, attempt.detail = "failed", str(error) or type(error).__name__
            await _reply(writer, 502, f"cannot reach {host}:{port}")
            return
        attempt.verdict = "allowed"
        try:
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                request = _origin_request(method, path, parts[2], headers)
                upstream.write(request)
                attempt.sent += len(request)
            await _pipe_both(reader, writer, upstream_reader, upstream, attempt)
        finally:
            upstream.close()


def _target(parts: list[str]) -> tuple[str, int, str] | None:
    """(host, port, path) from a request line's parts, or None when it is not a proxy request."""
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return None
    method, uri = parts[0], parts[1]
    if method == "CONNECT":
        authority, path, default = uri, "", None
    elif uri.startswith("http://"):
        authority, slash, rest = uri[len("http://") :].partition("/")
        path, default = slash + rest or "/", 80
    else:
        return None
    try:
        host, port = parse_host(authority)
    except UsageError:
        return None
    port = port if port is not None else default
    return None if port is None else (host, port, path)


def _origin_request(method: str, path: str, version: str, headers: str) -> bytes:
    kept = [
        h
        for h in headers.split("\r\n")
        if h and not h.lower().startswith(("proxy-", "connection:", "keep-alive:"))
    ]
    lines = [f"{method} {path} {version}", *kept, "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


async def _reply(writer: asyncio.StreamWriter, code: int, reason: str) -> None:
    status = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway", 503: "Busy"}[code]
    body = f"workbench proxy: {reason}\n".encode()
    writer.write(
        f"HTTP/1.1 {code} {status}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}"
        f"\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()


async def _pipe_both(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream: asyncio.StreamWriter,
    attempt: _Attempt,
) -> None:
    async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter, up: bool) -> None:
        with contextlib.suppress(OSError):
            while chunk := await source.read(_CHUNK):
                sink.write(chunk)
                await sink.drain()
                if up:
                    attempt.sent += len(chunk)
                else:
                    attempt.received += len(chunk)
            if sink.can_write_eof():
                sink.write_eof()

    await asyncio.gather(pipe(reader, upstream, True), pipe(upstream_reader, writer, False))
