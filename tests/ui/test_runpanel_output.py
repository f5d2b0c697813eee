"""The output pane: carriage returns, line and backlog caps, the colour pause, the log buttons."""

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QGuiApplication

from workbench.executors.types import OutputChunk, Stream
from workbench.ui.run.output import MAX_LINE, LogViewer, OutputView


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


def test_a_carriage_return_starts_a_new_line_so_no_text_is_hidden(qtbot: Any) -> None:
    view = _view(qtbot)
    text = _feed(qtbot, view, b"start\n10%", b"\r20%\r", b"30%\r\ndone\n", b"\rcarriage\rCR\n")
    assert text.splitlines() == ["start", "10%", "20%", "30%", "done", "carriage", "CR"]


def test_bidi_controls_show_as_markers(qtbot: Any) -> None:
    view = _view(qtbot)
    text = _feed(qtbot, view, "RTL override: evil\u202etxt.exe\n".encode())
    assert text == "RTL override: evil⟨U+202E⟩txt.exe\n"


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
    assert view.colour_paused and view.badge.full_text().startswith("Colour paused")


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


@pytest.mark.qt_log_ignore("does not support (QPlatformServices::openDocument|propagateSizeHints)")
def test_a_log_opens_in_a_viewer_where_the_desktop_cannot_open_it(
    qtbot: Any, tmp_path: Path
) -> None:
    view = _view(qtbot)  # the offscreen platform has no program to open files with
    log = tmp_path / "stderr.log"
    log.write_bytes(b"first\n\x1b]0;PWNED\x07\x1b[31mred\x1b[0m\rover\n")
    view.set_logs(None, log)
    view.open_stderr.click()
    viewer = view.findChild(LogViewer)
    assert viewer is not None and viewer.isVisible()
    assert viewer.text.toPlainText() == "first\nred\nover\n"
    assert str(log) in viewer.where.text()
    viewer.copy_path.click()
    assert QGuiApplication.clipboard().text() == str(log)
