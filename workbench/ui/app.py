"""The GUI composition root: QApplication, the one qasync loop, the services and the window.

`run_gui()` builds the catalog, the posture probe, the run services with the app's own warm
pools (`RunServices.open`; closed, what they started removed, when the app quits), the main window,
and an excepthook that logs and shows errors in the window, then runs the window on a single
qasync event loop until the window closes (or, with `screenshot`, until it has been saved as a
PNG). When the data folder cannot hold the run history (read-only, say), the window opens all
the same, says so in its message bar, and keeps this session's runs in a temporary folder that
is deleted when the app quits: someone who started it from a desktop launcher sees why.
"""

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import qasync
from PySide6.QtCore import (
    QCoreApplication,
    QMessageLogContext,
    QSettings,
    QSize,
    QtMsgType,
    qInstallMessageHandler,
)
from PySide6.QtWidgets import QApplication

from workbench import __version__
from workbench.errors import HistoryError, WorkbenchError
from workbench.executors import implemented_postures
from workbench.platform import desktop_entry, loops, paths
from workbench.postures.model import Availability, PostureId
from workbench.runs.layout import DataLayout
from workbench.runs.services import RunServices
from workbench.skills import default_roots, discover, load_skill
from workbench.ui.common.tasks import user_message
from workbench.ui.mainwindow import MainWindow
from workbench.ui.scene import Scene as Scene  # re-exported for `workbench gui --run`
from workbench.ui.scene import stage
from workbench.ui.services import PostureProbe, Services
from workbench.ui.theme import apply_theme

log = logging.getLogger("workbench")
SCREENSHOT_SIZE = QSize(1280, 800)  # the README's screenshots, and the size the layout holds at

_Hook = Callable[[type[BaseException], BaseException, TracebackType | None], object]


def run_gui(extra_roots: list[Path], screenshot: Path | None, scene: Scene | None = None) -> int:
    """Open the desktop app on the default and `extra_roots` skill roots; returns the exit code.

    With `screenshot`, render the window to that PNG file once the catalog has loaded (and,
    with `scene`, once that example has run), and exit.
    """
    if screenshot is not None:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    _require_display()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    qInstallMessageHandler(_qt_message)
    QCoreApplication.setOrganizationName(paths.APP_AUTHOR)
    QCoreApplication.setApplicationName(paths.APP_NAME)
    QCoreApplication.setApplicationVersion(__version__)
    QApplication.setDesktopFileName(desktop_entry.APP_ID)  # the launcher entry, the Wayland app id
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    app.setApplicationDisplayName("Skill Workbench")
    app.setQuitOnLastWindowClosed(False)  # the main coroutine ends the loop, not Qt
    apply_theme(app)
    run_services, problem = _open_services()
    services = Services(
        roots=tuple(default_roots(extra_roots)),
        discover=discover,
        load_skill=load_skill,
        probe_postures=_probe_postures,
        runs=run_services.runs,
        open_pools=lambda: run_services.warm.pools,
    )
    try:
        code: int = qasync.run(_main(app, services, run_services, screenshot, scene, problem))
    finally:
        if problem is not None:  # the session's temporary data folder
            shutil.rmtree(run_services.layout.root, ignore_errors=True)
    return code


def _open_services() -> tuple[RunServices, str | None]:
    """The run services over the user's data folder; or, when the history cannot be created
    there, over a temporary folder for this session, and the sentence that says so."""
    try:
        return RunServices.open(own_pools=True), None
    except HistoryError as error:
        log.warning("%s", error)
        temporary = DataLayout(Path(tempfile.mkdtemp(prefix="skill-workbench-")))
        problem = (
            f"{error}. This session keeps its runs in {temporary.root} instead, which is "
            "deleted when the app quits; make the data folder writable to keep a history."
        )
        return RunServices.open(temporary, own_pools=True), problem


def main() -> int:
    """The `workbench-gui` entry point: the GUI on the default roots."""
    return run_gui(extra_roots=[], screenshot=None)


async def _main(
    app: QApplication,
    services: Services,
    run_services: RunServices,
    screenshot: Path | None,
    scene: Scene | None,
    problem: str | None,
) -> int:
    loop = asyncio.get_running_loop()
    loops.give_blocking_threads(loop)
    window = MainWindow(services, QSettings())
    done = asyncio.Event()
    app.aboutToQuit.connect(done.set)
    window.closed.connect(done.set)
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows
            loop.add_signal_handler(signum, window.close)  # Ctrl+C in a terminal closes cleanly
    previous_hook = sys.excepthook
    sys.excepthook = _excepthook(window, previous_hook)
    try:
        if screenshot is None:
            window.restore_state()
        else:
            window.resize(SCREENSHOT_SIZE)
        window.show()
        await window.load()
        if problem is not None:
            window.show_error(problem)
        if scene is not None:
            await stage(window, scene)
        if screenshot is not None:
            await asyncio.sleep(0.2)  # let layouts settle before painting
            if not window.grab().save(str(screenshot), "PNG"):
                raise WorkbenchError(f"Could not write the screenshot to {screenshot}.")
            return 0
        await done.wait()
    finally:
        await window.shutdown()
        await run_services.close()  # removes the warm containers and workers it started
        sys.excepthook = previous_hook
    return 0


def _probe_postures() -> PostureProbe:
    """What can run here: the machine must allow it and this build must have its executor.
    Also removes the containers of workbenches killed mid-run (`executors.docker.owner`).
    Runs in a thread once the window is up, so the engine's client loads there, not before."""
    from workbench.executors.availability import docker_engine_runtimes, probe_availability
    from workbench.executors.docker.owner import reap_killed_sessions

    runtimes = docker_engine_runtimes()
    if runtimes is not None:
        reap_killed_sessions()
    built = implemented_postures()
    availability = {pid: probe_availability(pid, runtimes) for pid in PostureId}
    for pid, found in availability.items():
        if pid not in built:
            reason = f"{found.reason} But this build has no {pid} executor yet."
            availability[pid] = Availability(False, reason if found.available else found.reason)
    return PostureProbe(
        availability=availability,
        docker_runtimes=frozenset(runtimes) if runtimes is not None else None,
    )


def _excepthook(window: MainWindow, previous: _Hook) -> _Hook:
    """A hook that logs an uncaught error and shows it in the window's message bar."""

    def hook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        if not issubclass(kind, Exception):
            previous(kind, error, tb)
            return
        log.error("Unexpected error", exc_info=(kind, error, tb))
        window.show_error(user_message(error))

    return hook


_QT_LEVELS = {
    QtMsgType.QtDebugMsg: logging.DEBUG,
    QtMsgType.QtInfoMsg: logging.INFO,
    QtMsgType.QtWarningMsg: logging.WARNING,
}


def _qt_message(kind: QtMsgType, context: QMessageLogContext, message: str) -> None:
    """Qt's own messages go to the log; the offscreen platform's size-hint notice is noise."""
    del context
    if "does not support propagateSizeHints" not in message:
        logging.getLogger("qt").log(_QT_LEVELS.get(kind, logging.ERROR), message)


def _require_display() -> None:
    """Fail with a clear message instead of Qt's abort when Linux has no display."""
    if not sys.platform.startswith("linux"):
        return
    if any(os.environ.get(name) for name in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")):
        return
    raise WorkbenchError(
        "No display to open a window on (DISPLAY and WAYLAND_DISPLAY are unset). Run it in a "
        "desktop session or under xvfb-run, or use `workbench gui --screenshot FILE`."
    )
