"""The window's moments the bench times: the first paint, and a run's first output on screen.

`python -m workbench.ui.timing KIND` runs one in a process of its own and ends it (`os._exit`,
nothing torn down) at the moment it times: `bare`, a bare PySide6 window, at its first paint (the
floor of) `app`, the app as `workbench gui` opens it (`run_gui`), at its window's first paint; and
`output SKILL_DIR POSTURE LINE COMMAND`, the app with the skill's parent folder as a skill root,
which presses Run with COMMAND under POSTURE once the window can run the skill and prints the
seconds from pressing Run to the first paint of the output pane showing LINE. Exit code 3: the
moment never came (the window closed first).
"""

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QLabel, QMainWindow

NEVER = 3
POLL_MS = 5


class _FirstPaint(QObject):
    """Ends the process at the first paint of an object `until` accepts (any, by default),
    after calling `done`."""

    def __init__(self) -> None:
        super().__init__()
        self.until: Callable[[QObject], bool] = lambda painted: True
        self.done: Callable[[], None] = lambda: None

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and self.until(obj):
            self.done()
            os._exit(0)
        return False


def _application(watch: _FirstPaint) -> QApplication:
    app = QApplication(sys.argv[:1])
    watch.setParent(app)  # kept alive as long as the application
    app.installEventFilter(watch)
    return app


def bare() -> int:
    """The floor: a bare window, shown."""
    app = _application(_FirstPaint())
    window = QMainWindow()
    window.setCentralWidget(QLabel("Skill Workbench"))
    window.resize(1280, 800)
    window.show()
    return app.exec() or NEVER


def app() -> int:
    """The app, ended at its first paint."""
    from workbench.ui.app import run_gui  # here, not above: `bare` must not load the app

    _application(_FirstPaint())
    return run_gui(extra_roots=[], screenshot=None) or NEVER


def output(skill_dir: Path, posture: str, line: str, command: str) -> int:
    """A run's first output on screen (see the module doc)."""
    from workbench.postures.model import parse_posture_id
    from workbench.ui.app import run_gui
    from workbench.ui.mainwindow import MainWindow

    watch = _FirstPaint()
    _application(watch)
    watch.until = lambda painted: False  # until Run is pressed
    pressed: list[float] = []

    def press_run() -> None:
        window = next(
            (w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)), None
        )
        if window is None or not window.browser.select_path(skill_dir):
            return
        panel = window.run_panel
        panel.set_posture(parse_posture_id(posture))
        panel.command.setText(command)
        pressed.append(time.perf_counter())
        if panel.start() is None:  # the postures are not known yet
            pressed.pop()
            return
        timer.stop()
        pane = panel.output.text
        watch.until = lambda painted: painted is pane.viewport() and line in pane.toPlainText()
        watch.done = lambda: print(f"{time.perf_counter() - pressed[0]:.6f}", flush=True)

    timer = QTimer()
    timer.timeout.connect(press_run)
    timer.start(POLL_MS)
    return run_gui(extra_roots=[skill_dir.parent], screenshot=None) or NEVER


if __name__ == "__main__":
    kind, rest = sys.argv[1], sys.argv[2:]
    if kind == "bare":
        raise SystemExit(bare())
    if kind == "app":
        raise SystemExit(app())
    raise SystemExit(output(Path(rest[0]), rest[1], rest[2], rest[3]))
