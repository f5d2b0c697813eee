"""The control channel between the app and a QuickJS worker, out of a script's reach.

Control messages (`waiting`, `ready`, `host_call`, `memory_high`, `result`, and a warm worker's run)
travel on a dedicated pipe or socket the script cannot write to, never on stdout/stderr, framed as a
4-byte big-endian length and a JSON object. Stdlib only and cheap to import: the worker imports it
before the engine.
"""

from __future__ import annotations

import os
import struct

from workbench.executors.quickjs.worker import jsonwire

TYPE_CHECKING = False  # not typing's (see jsonwire: the worker's start stays lean)
if TYPE_CHECKING:
    from typing import Any

HEADER = struct.Struct(">I")
MAX_MESSAGE = 1024 * 1024


class ProtocolError(Exception):
    """A control message was oversized or not a JSON object."""


def encode_message(message: dict[str, Any]) -> bytes:
    """One framed control message."""
    payload = jsonwire.dumps(message).encode()
    if len(payload) > MAX_MESSAGE:
        raise ProtocolError(f"control message of {len(payload)} bytes exceeds {MAX_MESSAGE}")
    return HEADER.pack(len(payload)) + payload


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of `data` to a blocking file descriptor."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class MessageDecoder:
    """Turns the bytes read from the control pipe into messages, in order."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """The messages completed by `data`; `ProtocolError` on a malformed one."""
        self._buffer += data
        messages = []
        while len(self._buffer) >= HEADER.size:
            (length,) = HEADER.unpack_from(self._buffer)
            if length > MAX_MESSAGE:
                raise ProtocolError(f"control message of {length} bytes exceeds {MAX_MESSAGE}")
            end = HEADER.size + length
            if len(self._buffer) < end:
                break
            payload = bytes(self._buffer[HEADER.size : end])
            del self._buffer[:end]
            try:
                message = jsonwire.loads(payload.decode())
            except ValueError as error:  # UnicodeDecodeError too
                raise ProtocolError(f"control message is not JSON: {error}") from None
            if not isinstance(message, dict):
                raise ProtocolError("control message is not a JSON object")
            messages.append(message)
        return messages
