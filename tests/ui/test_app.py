"""The composition root: `workbench gui --screenshot`, the excepthook, and the PySide6 trap."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workbench.errors import SkillError
from workbench.ui.app import _excepthook, _open_services
from workbench.ui.mainwindow import MainWindow


def _screenshot(out: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`workbench gui --screenshot OUT` in a process of its own, with `env`."""
    command = [sys.executable, "-m", "workbench", "gui", "--screenshot", str(out)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


def test_gui_screenshot_writes_a_png(tmp_path: Path) -> None:
    out = tmp_path / "out.png"
    done = _screenshot(out, {**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert done.returncode == 0, done.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 10_000


def test_without_a_display_the_gui_says_so() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)
    done = subprocess.run(
        [sys.executable, "-m", "workbench"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 125
    assert "No display to open a window on" in done.stderr


def test_excepthook_shows_errors_in_the_window(window: MainWindow) -> None:
    seen: list[BaseException] = []
    hook = _excepthook(window, lambda kind, error, tb: seen.append(error))
    hook(SkillError, SkillError("cannot read <b>x</b>"), None)
    assert window.message_bar.isVisible()
    assert window.message_bar.text() == "cannot read <b>x</b>"
    hook(ValueError, ValueError("boom"), None)
    assert "Unexpected error (ValueError): boom" in window.message_bar.text()
    hook(KeyboardInterrupt, KeyboardInterrupt(), None)
    assert len(seen) == 1 and isinstance(seen[0], KeyboardInterrupt)


def test_pyside_survives_many_void_calls() -> None:
    """PySide6 6.12 on CPython 3.11 aborts after ~5,000 void calls (see docs/ARCHITECTURE.md)."""
    script = textwrap.dedent(
        """
        from PySide6.QtWidgets import QApplication, QLabel
        app = QApplication([])
        label = QLabel()
        for i in range(20_000):
            label.setText(str(i))
        print("survived")
        """
    )
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "survived"


def test_an_unwritable_data_folder_opens_the_window_with_a_temporary_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")  # unwritable even for root: a file in the path
    monkeypatch.setenv("XDG_DATA_HOME", str(blocker / "data"))
    services, problem = _open_services()
    layout, history = services.layout, services.history
    try:
        assert problem is not None
        assert problem.startswith(f"Cannot create the run history at {blocker / 'data'}")
        assert f"This session keeps its runs in {layout.root} instead" in problem
        assert history.path == layout.history_path and history.path.is_file()
    finally:
        shutil.rmtree(layout.root)
    out = tmp_path / "out.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_DATA_HOME": str(blocker / "data")}
    done = _screenshot(out, env)
    assert done.returncode == 0, done.stderr  # was: exit 125 with a line on stderr only
    assert "Cannot create the run history" in done.stderr
    assert out.is_file()
