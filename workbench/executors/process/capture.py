"""Capture of one output stream: its log spooled to a file up to a cap, a capped copy in memory.

Chunks within the in-memory cap go to the sink as they arrive; bytes past the cap only reach
the log on disk (so a command printing 100 MB neither fills the app's memory nor the UI), and
the result says the text was truncated. The log itself is capped too (`log_cap_bytes`): its
first half is written as it comes, the last half is held back (in memory, as chunks) and
written after a line saying how many bytes between them were dropped, so a flood fills neither
the disk nor memory beyond the cap. Every file operation of a log (open, write, close) happens
on one thread of the app's own (`_LOG_THREAD`), in order: `feed` only queues, so a disk that
stalls (a network home folder, a busy journal) never stalls the event loop that feeds it, and
`finish()` (in a thread, `finish_logs`) waits for the log's last write. What is queued is at most
the log's head. A write that fails (the disk full) stops the log there, and the result says why
(`log_error`); the run goes on. A small tail is kept apart for outcome detection (a
`MemoryError` traceback comes last).
"""

import asyncio
import codecs
from collections import deque
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

from workbench.executors.types import CapturedOutput, OutputChunk, OutputSink, Stream

TAIL_BYTES = 8192
# One thread writes every log, in the order the writes were queued (see the module doc).
_LOG_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-logs")


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
        self._log: BinaryIO | None = None  # opened by the log thread at its first write
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
        """Queue `data` for the log thread to append to the log."""
        _LOG_THREAD.submit(self._append, data)

    def _append(self, data: bytes) -> None:
        """Append `data` to the log, unless a write already failed (then nothing more is) or the
        log is closed. On the log thread."""
        if self._log_error or (self._log is not None and self._log.closed):
            return
        try:
            if self._log is None:
                self._log = self._log_path.open("wb")
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
        """Write the log's tail, close the log and describe the stream (again: the same).
        Blocks until the log thread has written it all: call it from a thread of its own."""
        if self._result is not None:
            return self._result
        if dropped := self.log_dropped_bytes:
            cap = self._log_tail_cap
            self._write(
                f"\n[... {dropped:,} bytes dropped: the log keeps its first and last "
                f"{cap:,} bytes ...]\n".encode()
            )
        tail = b"".join(self._log_tail)
        self._write(tail[len(tail) - min(len(tail), self._log_tail_cap) :])
        self._log_tail.clear()
        _LOG_THREAD.submit(self._close).result()
        self._result = CapturedOutput(
            text=self.head_text,
            total_bytes=self.total_bytes,
            truncated=self.total_bytes > len(self._head),
            log_path=self._log_path,
            log_dropped_bytes=self.log_dropped_bytes,
            log_error=self._log_error,
        )
        return self._result

    def _close(self) -> None:
        """Close the log (made empty if nothing was written). On the log thread."""
        try:
            if self._log is None and not self._log_error:
                self._log = self._log_path.open("wb")
            if self._log is not None:
                self._log.close()
        except OSError as error:  # the buffered part could not be written
            self._log_error = self._log_error or f"writing it failed: {error}"


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
    """`finish()` each capture in a thread: it waits for the log thread, which may be writing
    a log's held-back tail (megabytes)."""
    captures = list(captures)
    return await asyncio.to_thread(lambda: [capture.finish() for capture in captures])
