"""A real window under Xvfb (the xcb platform, not offscreen) renders and takes its picture."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="Xvfb is not installed"),
]


def test_the_window_renders_on_an_x_server(tmp_path: Path) -> None:
    shot = tmp_path / "window.png"
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY")}
    app = [sys.executable, "-m", "workbench", "gui", "--screenshot", str(shot)]
    done = subprocess.run(
        ["xvfb-run", "-a", "-s", "-screen 0 1400x900x24", *app],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    image = QImage(str(shot))
    assert image.width() >= 800 and image.height() >= 600
    colours = {image.pixel(x, y) for x in range(0, image.width(), 7) for y in range(0, 400, 7)}
    assert len(colours) > 20  # text, badges and cards, not a blank frame
