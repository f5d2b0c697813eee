"""A real TCP link to an engine that can be cut, stalled or slowed: the network between the app
and a remote engine, as a test needs it to fail.

`FaultyLink` listens on 127.0.0.1 and forwards every connection to the engine. Once armed with
`fault(...)`, the first request whose text holds `request` (say `PUT` of the workspace's
archive) has its upload (PUT) or its answer (anything else) cut or stalled after `after`
bytes; `slow` throttles every byte either way. Each armed fault strikes once.
"""

import contextlib
import socket
import threading
import time
from dataclasses import dataclass


@dataclass
class _Fault:
    method: bytes
    request: bytes
    mode: str  # "cut" or "stall"
    after: int


class FaultyLink:
    """A proxy from `url` to the engine at `host`:`port` (see the module doc)."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"tcp://127.0.0.1:{self._server.getsockname()[1]}"
        self._fault: _Fault | None = None
        self.bytes_per_s = 0.0
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.struck = threading.Event()
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def fault(self, method: str, request: str, mode: str, after: int) -> None:
        """Cut or stall the next `method` request holding `request` after `after` bytes."""
        self._fault = _Fault(method.encode(), request.encode(), mode, after)

    def close(self) -> None:
        self._closed.set()
        self._server.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            engine = socket.create_connection(self._target)
            with self._lock:
                self._sockets += [client, engine]
            armed: dict[str, _Fault] = {}
            for ends in ((client, engine, "up"), (engine, client, "down")):
                threading.Thread(target=self._pump, args=(*ends, armed), daemon=True).start()

    def _pump(
        self, source: socket.socket, target: socket.socket, way: str, armed: dict[str, _Fault]
    ) -> None:
        sent = 0
        try:
            while data := source.recv(65536):
                fault = self._fault
                if (
                    way == "up"
                    and fault
                    and data.startswith(fault.method)
                    and fault.request in data
                ):
                    self._fault, sent = None, 0
                    armed["up" if fault.method == b"PUT" else "down"] = fault
                if way in armed:
                    fault = armed[way]
                    if sent + len(data) > fault.after:
                        self.struck.set()
                        if fault.mode == "stall":
                            self._closed.wait()
                        break
                    sent += len(data)
                if self.bytes_per_s:
                    time.sleep(len(data) / self.bytes_per_s)
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
