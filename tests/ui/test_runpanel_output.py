"""The output pane: carriage returns, line and backlog caps, the colour pause, the log buttons."""

from pathlib import Path
from typing import Any

from workbench.executors.types import OutputChunk, Stream
from workbench.ui.outputview import MAX_LINE, OutputView


def _view(qtbot: Any) -> OutputView:
    view = OutputView()
    qtbot.addWidget(view)
    view.resize(600, 300)
    view.show()
    view.begin()
    return view


def _feed(qtbot: Any, view: OutputView, *chunks: bytes, stream: Stream = Stream.STDOUT) -> str:
    for data in chunks:
        view.append(OutputChunk(stream, data, 0.0))
    view.finish()
    qtbot.waitUntil(view.is_idle)
    return view.text.toPlainText()


def test_carriage_returns_collapse_a_progress_line(qtbot: Any) -> None:
    view = _view(qtbot)
    text = _feed(qtbot, view, b"start\n10%", b"\r20%\r", b"30%\r\ndone\n")
    assert text.splitlines() == ["start", "30%", "done"]


def test_long_lines_are_cut_once_with_an_ellipsis(qtbot: Any) -> None:
    view = _view(qtbot)
    text = _feed(qtbot, view, b"a" * 3000, b"a" * 3000, b"a" * 3000 + b"\nnext\n")
    first, second = text.splitlines()[:2]
    assert first == "a" * MAX_LINE + "…"
    assert second == "next"


def test_a_backlog_is_skipped_with_a_notice_and_the_tail_is_kept(qtbot: Any) -> None:
    view = _view(qtbot)
    lines = b"".join(b"line %d %s\n" % (i, b"x" * 90) for i in range(40_000))  # 4 MB
    text = _feed(qtbot, view, lines[: len(lines) // 2], lines[len(lines) // 2 :])
    assert "of output skipped here to keep up; the full log has all of it" in text
    assert text.splitlines()[-1].startswith("line 39999 x")
    assert view.colour_paused and view.badge.text().startswith("Colour paused")


def test_slow_output_keeps_its_colours_and_stderr_is_tinted(qtbot: Any) -> None:
    view = _view(qtbot)
    _feed(qtbot, view, b"\x1b[31mred\x1b[0m\n")
    _feed(qtbot, view, b"oops\n", stream=Stream.STDERR)
    assert not view.colour_paused and view.badge.isHidden()
    assert view.text.toPlainText().splitlines() == ["red", "oops"]


def test_log_buttons_follow_the_files(qtbot: Any, tmp_path: Path) -> None:
    view = _view(qtbot)
    log = tmp_path / "stdout.log"
    log.write_text("all of it")
    view.set_logs(log, tmp_path / "missing.log")
    assert view.open_stdout.isEnabled() and not view.open_stderr.isEnabled()
    assert view.open_stdout.toolTip() == str(log)
    view.begin()
    assert not view.open_stdout.isEnabled()
