"""The control channel between the app and a QuickJS worker, out of a script's reach.

The worker's stdout and stderr carry nothing but the script's console output. Control messages
(`ready` once the rlimits are applied, a `host_call` after each fetch, `memory_high` once the
engine's heap nears its limit, `result` at the end of the run) travel on a dedicated pipe
passed to the worker with `pass_fds` (for a warm worker,
one end of a socket pair, on which it first says `waiting` and then receives its run, see
`serve`); JavaScript has no way to write to it (the host API has no descriptor access).
Whatever a script prints, even bytes that look exactly like a control message, therefore stays
output, and a run ends only on a `result` message or the worker's death.

On that channel each message is a 4-byte big-endian length followed by a JSON object. Stdlib
only, and cheap to import: the worker imports this before the engine, on every run's start.
"""

import json
import os
import struct
from typing import Any

HEADER = struct.Struct(">I")
MAX_MESSAGE = 1024 * 1024


class ProtocolError(Exception):
    """A control message was oversized or not a JSON object."""


def encode_message(message: dict[str, Any]) -> bytes:
    """One framed control message."""
    payload = json.dumps(message).encode()
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
                message = json.loads(payload)
            except ValueError as error:
                raise ProtocolError(f"control message is not JSON: {error}") from None
            if not isinstance(message, dict):
                raise ProtocolError("control message is not a JSON object")
            messages.append(message)
        return messages
