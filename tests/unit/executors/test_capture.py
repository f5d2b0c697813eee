"""One stream's capture: the cap, the sink, the log and the decoding."""

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from workbench.executors.process.capture import TAIL_BYTES, StreamCapture
from workbench.executors.types import OutputChunk, Stream
from workbench.postures.model import MIB


def test_cap_sink_log_and_tail(tmp_path: Path) -> None:
    chunks: list[OutputChunk] = []
    capture = StreamCapture(Stream.STDERR, 10, tmp_path / "err.log", chunks.append, MIB)
    capture.feed(b"0123456", 0.1)
    capture.feed(b"789abcdef", 0.2)
    capture.feed(b"x" * TAIL_BYTES + b"END", 0.3)
    out = capture.finish()
    assert [(c.data, c.t) for c in chunks] == [(b"0123456", 0.1), (b"789", 0.2)]
    assert out.text == "0123456789"
    assert out.truncated and out.total_bytes == 16 + TAIL_BYTES + 3
    assert (tmp_path / "err.log").read_bytes().endswith(b"xEND")
    assert capture.tail_text.endswith("xEND") and len(capture.tail_text) == TAIL_BYTES


def test_a_character_cut_by_the_cap_is_dropped_not_mangled(tmp_path: Path) -> None:
    capture = StreamCapture(Stream.STDOUT, 4, tmp_path / "out.log", lambda c: None, MIB)
    capture.feed("abcé!".encode(), 0.0)  # é is two bytes; the cap cuts it
    assert capture.finish().text == "abc"


def test_invalid_bytes_are_replaced(tmp_path: Path) -> None:
    capture = StreamCapture(Stream.STDOUT, 100, tmp_path / "out.log", lambda c: None, MIB)
    capture.feed(b"a\xffb", 0.0)
    out = capture.finish()
    assert out.text == "a\ufffdb" and not out.truncated


def test_the_log_keeps_its_head_and_tail_within_its_cap(tmp_path: Path) -> None:
    capture = StreamCapture(Stream.STDOUT, 8, tmp_path / "out.log", lambda c: None, 100)
    capture.feed(b"H" * 40 + b"h" * 30, 0.0)  # the head: 50 bytes
    for _ in range(1000):
        capture.feed(b"m" * 997, 0.1)
    capture.feed(b"t" * 20 + b"T" * 30, 0.2)
    out = capture.finish()
    log = (tmp_path / "out.log").read_bytes()
    head, marker, tail = log.split(b"\n", 2)
    assert (head, tail) == (b"H" * 40 + b"h" * 10, b"t" * 20 + b"T" * 30)
    assert out.total_bytes == 70 + 997_000 + 50
    assert out.log_dropped_bytes == out.total_bytes - 100
    assert f"{out.log_dropped_bytes:,} bytes dropped".encode() in marker


def test_a_stream_within_the_log_cap_is_logged_whole(tmp_path: Path) -> None:
    capture = StreamCapture(Stream.STDOUT, 8, tmp_path / "out.log", lambda c: None, 100)
    for chunk in (b"a" * 60, b"b" * 30, b"c" * 10):
        capture.feed(chunk, 0.0)
    out = capture.finish()
    assert (tmp_path / "out.log").read_bytes() == b"a" * 60 + b"b" * 30 + b"c" * 10
    assert out.log_dropped_bytes == 0


def test_a_log_the_disk_holds_up_never_holds_up_the_feed(tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    os.mkfifo(log)  # opening it for writing blocks until a reader comes, as a stalled disk would
    chunks: list[OutputChunk] = []

    def capture_and_feed() -> StreamCapture:
        capture = StreamCapture(Stream.STDOUT, 4, log, chunks.append, MIB)
        for _ in range(100):
            capture.feed(b"x" * 1000, 0.0)
        return capture

    reader = None
    with ThreadPoolExecutor(max_workers=1) as feeding:
        try:
            capture = feeding.submit(capture_and_feed).result(timeout=60)  # no reader yet
            assert [c.data for c in chunks] == [b"xxxx"]
            reader = log.open("rb")  # the disk comes back
            out = feeding.submit(capture.finish)
            assert reader.read() == b"x" * 100_000
            assert out.result(timeout=60).total_bytes == 100_000
        finally:  # let a log thread (or a feed) that waits for a reader go on
            os.close(os.open(log, os.O_RDONLY | os.O_NONBLOCK))
            if reader is not None:
                reader.close()
