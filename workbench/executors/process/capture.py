"""Capture of one output stream: the full log spooled to a file, a capped copy kept in memory.

Chunks within the in-memory cap go to the sink as they arrive; bytes past the cap only reach
the log on disk (so a command printing 100 MB neither fills the app's memory nor the UI), and
the result says the text was truncated. A small tail is kept apart for outcome detection
(a `MemoryError` traceback comes last).
"""

import codecs
from pathlib import Path

from workbench.executors.types import CapturedOutput, OutputChunk, OutputSink, Stream

TAIL_BYTES = 8192


class StreamCapture:
    """Receives one stream's bytes; `finish()` closes the log and returns the result."""

    def __init__(self, stream: Stream, cap_bytes: int, log_path: Path, sink: OutputSink) -> None:
        self._stream = stream
        self._cap = max(0, cap_bytes)
        self._sink = sink
        self._log_path = log_path
        self._log = log_path.open("wb")
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0

    def feed(self, data: bytes, t: float) -> None:
        """Record `data` read `t` seconds after the run started."""
        self._log.write(data)
        self.total_bytes += len(data)
        room = self._cap - len(self._head)
        if room > 0:
            kept = data[:room]
            self._head += kept
            self._sink(OutputChunk(self._stream, kept, t))
        self._tail += data[-TAIL_BYTES:]
        del self._tail[:-TAIL_BYTES]

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
        """Close the log and describe the stream."""
        self._log.close()
        return CapturedOutput(
            text=self.head_text,
            total_bytes=self.total_bytes,
            truncated=self.total_bytes > len(self._head),
            log_path=self._log_path,
        )
