"""One stream's capture: the cap, the sink, the log and the decoding."""

import tracemalloc
from collections.abc import Callable
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


def test_a_log_the_disk_holds_up_never_holds_up_the_feed(
    tmp_path: Path, held_log_thread: Callable[[], bool]
) -> None:
    log = tmp_path / "out.log"
    chunks: list[OutputChunk] = []
    capture = StreamCapture(Stream.STDOUT, 4, log, chunks.append, MIB)
    for _ in range(100):
        capture.feed(b"x" * 1000, 0.0)
    closed = capture.close_log()
    assert [c.data for c in chunks] == [b"xxxx"]
    assert not closed.done() and not log.exists()  # all of it waits for the disk
    assert held_log_thread()
    closed.result(timeout=60)
    assert log.read_bytes() == b"x" * 100_000
    assert capture.finish().total_bytes == 100_000


def test_what_waits_for_the_log_thread_is_the_bytes_alone(
    tmp_path: Path, held_log_thread: Callable[[], bool]
) -> None:
    capture = StreamCapture(Stream.STDOUT, 4, tmp_path / "out.log", lambda c: None, 8 * MIB)
    tracemalloc.start()
    for _ in range(20_000):  # 2 MB in small writes, as a program that flushes each line
        capture.feed(b"y" * 99 + b"\n", 0.0)
    held = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    held_log_thread()
    assert held < 3 * 2_000_000, f"{held:,} bytes held for 2,000,000 waiting"
    assert capture.finish().total_bytes == 2_000_000
    assert (tmp_path / "out.log").stat().st_size == 2_000_000


def test_a_log_that_cannot_be_created_says_so_and_the_capture_goes_on(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    fed = StreamCapture(Stream.STDERR, 100, gone / "err.log", lambda c: None, MIB)
    fed.feed(b"still captured", 0.0)
    empty = StreamCapture(Stream.STDOUT, 100, gone / "out.log", lambda c: None, MIB)
    out, nothing = fed.finish(), empty.finish()
    assert out.text == "still captured"
    assert out.log_error.startswith("it could not be created: ")
    assert nothing.log_error.startswith("it could not be created: ")  # none written, none made
