"""`Tasks`: the background tasks one part of the window starts, kept, reported and ended.

Every coroutine a widget runs goes through its `Tasks`: `spawn()` keeps a reference (asyncio
keeps only weak ones), every error a task raises is logged and emitted as one sentence for the
message bar (a `WorkbenchError` as it is, anything else as an unexpected error whose details are
in the log; a part that explains its own `WorkbenchError`s in place passes `explain`), and
`close()` ends what is left when the window closes. The main window wires each part's `failed`
signal to its message bar.
"""

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from PySide6.QtCore import QObject, Signal

from workbench.errors import WorkbenchError

log = logging.getLogger(__name__)

T = TypeVar("T")


def user_message(error: BaseException) -> str:
    """The sentence the user reads about `error`."""
    if isinstance(error, WorkbenchError):
        return str(error)
    return f"Unexpected error ({type(error).__name__}): {error}. Details are logged."


def loop_running() -> bool:
    """Whether the asyncio loop runs (always in the app; not between the steps of a test, nor
    after the window closed), so a task started now would run."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class Tasks(QObject):
    """The running tasks of one widget.

    Signals:
        failed(str): a task raised; the sentence for the user.
        busy_changed(bool): the first task started (True), or the last one ended (False).
    """

    failed = Signal(str)
    busy_changed = Signal(bool)

    def __init__(
        self,
        parent: QObject | None = None,
        explain: Callable[[WorkbenchError], None] | None = None,
    ) -> None:
        super().__init__(parent)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._explain = explain

    def spawn(self, coroutine: Coroutine[Any, Any, T]) -> "asyncio.Task[T]":
        """Run `coroutine` as a task kept until it ends; its error, if any, is reported."""
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._on_task_done)
        if len(self._tasks) == 1:
            self.busy_changed.emit(True)
        return task

    def busy(self) -> bool:
        """Whether a task is running."""
        return bool(self._tasks)

    def report(self, error: BaseException) -> None:
        """Log `error` and tell the user (in place, through `explain`, for a `WorkbenchError`
        when this part explains its own)."""
        if isinstance(error, WorkbenchError):
            log.warning("%s", error)
            if self._explain is not None:
                self._explain(error)
                return
        else:
            log.error("Unexpected error in a background task", exc_info=error)
        self.failed.emit(user_message(error))

    async def settle(self, timeout_s: float | None = None) -> bool:
        """Wait until every task has ended, those started meanwhile too, for at most
        `timeout_s` (None: as long as they take); returns whether they all have."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while self._tasks:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            await asyncio.wait(set(self._tasks), timeout=left)
        return True

    async def close(self, grace_s: float | None = 0.0) -> None:
        """Let the tasks end on their own for `grace_s` (None: as long as they take), then
        cancel those left and wait until they have ended."""
        if grace_s != 0.0:
            await self.settle(grace_s)
        while self._tasks:
            for task in self._tasks:
                task.cancel()
            await asyncio.wait(set(self._tasks))

    def _on_task_done(self, task: "asyncio.Task[Any]") -> None:
        self._tasks.discard(task)
        if not self._tasks:
            self.busy_changed.emit(False)
        if not task.cancelled() and (error := task.exception()) is not None:
            self.report(error)
