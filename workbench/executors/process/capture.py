"""Capture of one output stream: its log spooled to a file up to a cap, a capped copy in memory.

Chunks within the in-memory cap go to the sink as they arrive; bytes past the cap only reach
the log on disk (so a command printing 100 MB neither fills the app's memory nor the UI), and
the result says the text was truncated. The log itself is capped too (`log_cap_bytes`): its
first half is written as it comes, the last half is held back (in memory, as chunks) and
written after a line saying how many bytes between them were dropped, so a flood fills neither
the disk nor memory beyond the cap. Every file operation of a log (open, write, close) happens
on one thread of the app's own (`_LOG_THREAD`), in order (`LogFile`): `feed` and `close_log()`
only hand it bytes, so a disk that stalls (a network home folder, a busy journal) never stalls
the event loop that feeds it; `finish()` waits for the close, in a thread (`finish_logs`). What
waits for the thread is at most the log's head (and, at the end, its tail), in one buffer. A
write that fails (the disk full) stops the log there, and the result says why (`log_error`); the
run goes on. A small tail is kept apart for outcome detection (a `MemoryError` traceback comes
last).
"""

import asyncio
import codecs
import threading
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

from workbench.executors.types import CapturedOutput, OutputChunk, OutputSink, Stream

TAIL_BYTES = 8192
# One thread writes every log, in the order the writes were queued (see the module doc).
_LOG_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-logs")


class LogFile:
    """One log on disk, written by the log thread: `write` adds to the bytes waiting for it (one
    job at a time writes all of them), `close` queues the close after them. `error` says why
    the log stops short; read it once the close is done."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.error = ""
        self._file: BinaryIO | None = None  # opened by the log thread at its first write
        self._written = 0
        self._waiting = bytearray()
        self._lock = threading.Lock()
        self._queued = False  # a job that writes `_waiting` is queued
        self._closed: Future[None] | None = None

    def write(self, data: bytes) -> None:
        """Append `data` to the log, soon; never blocks on the disk."""
        with self._lock:
            self._waiting += data
            if self._queued:
                return
            self._queued = True
        _LOG_THREAD.submit(self._flush)

    def close(self) -> "Future[None]":
        """Queue the close after every write so far (once: again, the same future)."""
        if self._closed is None:
            self._closed = _LOG_THREAD.submit(self._close)
        return self._closed

    def _flush(self) -> None:
        """Write what waits, unless a write failed or the log is closed. On the log thread."""
        with self._lock:
            data, self._waiting, self._queued = self._waiting, bytearray(), False
        if not data or self.error or (self._file is not None and self._file.closed):
            return
        log = self._open()
        if log is None:
            return
        try:
            log.write(data)
            self._written += len(data)
        except OSError as error:
            self.error = f"writing it failed after {self._written:,} bytes: {error}"

    def _close(self) -> None:
        """Write what waits and close the log (made empty if nothing was). On the log thread."""
        self._flush()
        log = self._file if self.error else self._open()
        if log is None:
            return
        try:
            log.close()
        except OSError as error:  # the buffered part could not be written
            self.error = self.error or f"writing it failed: {error}"

    def _open(self) -> BinaryIO | None:
        """The log, opened if it is not yet; None (and `error` says why) when it cannot be."""
        if self._file is None:
            try:
                self._file = self.path.open("wb")
            except OSError as error:
                self.error = f"it could not be created: {error}"
        return self._file


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
        self._log = LogFile(log_path)
        self._log_head = max(0, log_cap_bytes) - max(0, log_cap_bytes) // 2
        self._log_tail_cap = max(0, log_cap_bytes) // 2
        self._log_tail: deque[bytes] = deque()
        self._log_tail_bytes = 0
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0
        self._closing = False  # the log's last bytes went to the log thread
        self._closing_lock = threading.Lock()  # a cancelled run's loop and `finish` may race
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
            self._log.write(data[:room])
            data = data[room:]
        if not data or not self._log_tail_cap:
            return
        self._log_tail.append(data[-self._log_tail_cap :])
        self._log_tail_bytes += len(self._log_tail[-1])
        while self._log_tail_bytes - len(self._log_tail[0]) >= self._log_tail_cap:
            self._log_tail_bytes -= len(self._log_tail.popleft())

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

    def close_log(self) -> "Future[None]":
        """Hand the log thread the log's last bytes (how many were dropped, the held-back tail)
        and its close, once; the future is done when the log is closed. Never blocks."""
        with self._closing_lock:
            if not self._closing:
                self._closing = True
                if dropped := self.log_dropped_bytes:
                    cap = self._log_tail_cap
                    self._log.write(
                        f"\n[... {dropped:,} bytes dropped: the log keeps its first and last "
                        f"{cap:,} bytes ...]\n".encode()
                    )
                tail = b"".join(self._log_tail)
                self._log.write(tail[len(tail) - min(len(tail), self._log_tail_cap) :])
                self._log_tail.clear()
            return self._log.close()

    def finish(self) -> CapturedOutput:
        """Close the log (`close_log`) and describe the stream (again: the same). Blocks until
        the log thread has closed it: call it from a thread of its own (`finish_logs`)."""
        if self._result is None:
            self.close_log().result()
            self._result = CapturedOutput(
                text=self.head_text,
                total_bytes=self.total_bytes,
                truncated=self.total_bytes > len(self._head),
                log_path=self._log.path,
                log_dropped_bytes=self.log_dropped_bytes,
                log_error=self._log.error,
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


def close_logs(captures: Iterable[StreamCapture]) -> None:
    """`close_log()` each capture, without waiting: a run that ends without a result (it was
    cancelled, or failed) still gives its logs their last bytes and closes them."""
    for capture in captures:
        capture.close_log()


async def finish_logs(captures: Iterable[StreamCapture]) -> list[CapturedOutput]:
    """`finish()` each capture in a thread: it waits for the log thread, which may be writing
    a log's held-back tail (megabytes)."""
    captures = list(captures)
    return await asyncio.to_thread(lambda: [capture.finish() for capture in captures])
