"""Capture of one output stream: its log spooled to a file up to a cap, a capped copy in memory.

Chunks within the in-memory cap go to the sink as they arrive; bytes past the cap only reach
the log on disk (so a command printing 100 MB neither fills the app's memory nor the UI), and
the result says the text was truncated. The log itself is capped too (`log_cap_bytes`): its
first half is written as it comes, the last half is held back (in memory, as chunks) and
written after a line saying how many bytes between them were dropped (`finish_logs` does it
in a thread), so a flood fills neither the disk nor memory beyond the cap. A write that fails
(the disk full) stops the log there, and the result says why (`log_error`); the run goes on.
A small tail is kept apart for outcome detection (a `MemoryError` traceback comes last).
"""

import asyncio
import codecs
from collections import deque
from collections.abc import Iterable
from pathlib import Path

from workbench.executors.types import CapturedOutput, OutputChunk, OutputSink, Stream

TAIL_BYTES = 8192


class StreamCapture:
    """Receives one stream's bytes; `finish()` closes the log and returns the result."""

    def __init__(
        self,
        stream: Stream,
        cap_bytes: int,
        log_path: Path,
        sink: OutputSink,
        log_cap_bytes: int,
    ) -> None:
        self._stream = stream
        self._cap = max(0, cap_bytes)
        self._sink = sink
        self._log_path = log_path
        self._log = log_path.open("wb")
        self._log_head = max(0, log_cap_bytes) - max(0, log_cap_bytes) // 2
        self._log_tail_cap = max(0, log_cap_bytes) // 2
        self._log_tail: deque[bytes] = deque()
        self._log_tail_bytes = 0
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0
        self._logged = 0  # bytes of the stream the log holds
        self._log_error = ""
        self._result: CapturedOutput | None = None

    def feed(self, data: bytes, t: float) -> None:
        """Record `data` read `t` seconds after the run started."""
        self._spool(data)
        self.total_bytes += len(data)
        room = self._cap - len(self._head)
        if room > 0:
            kept = data[:room]
            self._head += kept
            self._sink(OutputChunk(self._stream, kept, t))
        self._tail += data[-TAIL_BYTES:]
        del self._tail[:-TAIL_BYTES]

    def _spool(self, data: bytes) -> None:
        """Write `data` to the log while its head has room, else hold it in the log's tail."""
        room = self._log_head - self.total_bytes
        if room > 0:
            self._write(data[:room])
            data = data[room:]
        if not data or not self._log_tail_cap:
            return
        self._log_tail.append(data[-self._log_tail_cap :])
        self._log_tail_bytes += len(self._log_tail[-1])
        while self._log_tail_bytes - len(self._log_tail[0]) >= self._log_tail_cap:
            self._log_tail_bytes -= len(self._log_tail.popleft())

    def _write(self, data: bytes) -> None:
        """Append `data` to the log, unless a write already failed (then nothing more is)."""
        if self._log_error:
            return
        try:
            self._log.write(data)
            self._logged += len(data)
        except OSError as error:
            self._log_error = f"writing it failed after {self._logged:,} bytes: {error}"

    @property
    def log_dropped_bytes(self) -> int:
        """Bytes of the stream the log on disk does not hold (between its head and tail)."""
        tail = min(self._log_tail_bytes, self._log_tail_cap)
        return max(0, self.total_bytes - self._log_head - tail)

    @property
    def tail_text(self) -> str:
        """The last few KiB of the stream, decoded with replacement."""
        return self._tail.decode("utf-8", errors="replace")

    @property
    def head_text(self) -> str:
        """The in-memory part of the stream; a character cut by the cap is dropped."""
        truncated = self.total_bytes > len(self._head)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return decoder.decode(bytes(self._head), final=not truncated)

    def finish(self) -> CapturedOutput:
        """Write the log's tail, close the log and describe the stream (again: the same)."""
        if self._log.closed and self._result is not None:
            return self._result
        if not self._log.closed:
            if dropped := self.log_dropped_bytes:
                cap = self._log_tail_cap
                self._write(
                    f"\n[... {dropped:,} bytes dropped: the log keeps its first and last "
                    f"{cap:,} bytes ...]\n".encode()
                )
            tail = b"".join(self._log_tail)
            self._write(tail[len(tail) - min(len(tail), self._log_tail_cap) :])
            self._log_tail.clear()
            try:
                self._log.close()
            except OSError as error:  # the buffered part could not be written
                self._log_error = self._log_error or f"writing it failed: {error}"
        self._result = CapturedOutput(
            text=self.head_text,
            total_bytes=self.total_bytes,
            truncated=self.total_bytes > len(self._head),
            log_path=self._log_path,
            log_dropped_bytes=self.log_dropped_bytes,
            log_error=self._log_error,
        )
        return self._result


def stream_captures(
    run_dir: Path, cap_bytes: int, log_cap_bytes: int, sink: OutputSink
) -> dict[Stream, StreamCapture]:
    """A run's stdout and stderr captures, logging to `stdout.log` and `stderr.log` in
    `run_dir`."""
    return {
        stream: StreamCapture(stream, cap_bytes, run_dir / f"{stream}.log", sink, log_cap_bytes)
        for stream in (Stream.STDOUT, Stream.STDERR)
    }


async def finish_logs(captures: Iterable[StreamCapture]) -> list[CapturedOutput]:
    """`finish()` each capture in a thread: writing a log's held-back tail (megabytes) would
    stall the event loop."""
    captures = list(captures)
    return await asyncio.to_thread(lambda: [capture.finish() for capture in captures])
