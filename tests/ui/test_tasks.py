"""Background tasks: an error in any part's task reaches the user (message bar) and the log;
a part that explains its own errors does so in place; closing ends every task."""

import asyncio
import logging
from dataclasses import replace
from operator import attrgetter
from typing import Any

import pytest
from PySide6.QtCore import QSettings

from tests.ui.conftest import Run
from tests.ui.test_posturepicker_pool import WITH_DOCKER, FakePool
from workbench.errors import WorkspaceError
from workbench.postures.model import PostureId
from workbench.ui.common.tasks import Tasks
from workbench.ui.mainwindow import MainWindow
from workbench.ui.services import Services

PARTS = (
    "tasks",
    "authoring.tasks",
    "run_panel.tasks",
    "run_panel.changes.tasks",
    "postures.tasks",
    "history.tasks",
    "compare.tasks",
    "lab.tasks",
    "view.environment.tasks",
)


async def _fail(error: Exception) -> None:
    await asyncio.sleep(0)
    raise error


@pytest.mark.parametrize("part", PARTS)
def test_an_unexpected_error_in_any_part_s_task_reaches_the_message_bar_and_the_log(
    window: MainWindow, run: Run, task_errors: list[logging.LogRecord], part: str
) -> None:
    tasks: Tasks = attrgetter(part)(window)
    task = tasks.spawn(_fail(KeyError("gone")))
    run(tasks.settle())
    assert task.done() and not tasks.busy()
    assert window.message_bar.isVisible()
    assert window.message_bar.text() == "Unexpected error (KeyError): 'gone'. Details are logged."
    [record] = task_errors
    assert record.exc_info is not None and record.exc_info[1] is task.exception()
    task_errors.clear()


def test_a_failing_warm_pool_call_is_shown_not_dropped(
    qtbot: Any,
    services: Services,
    settings: QSettings,
    run: Run,
    task_errors: list[logging.LogRecord],
) -> None:
    class HungUpPool(FakePool):
        async def resize(self, size: int) -> None:
            raise ConnectionResetError("the engine hung up")

    window = MainWindow(replace(services, probe_postures=lambda: WITH_DOCKER), settings)
    qtbot.addWidget(window)
    run(window.load())
    window.postures.set_pools({PostureId.DOCKER: HungUpPool()}, settings)
    run(window.postures.shutdown())
    assert "ConnectionResetError" in window.message_bar.text()
    assert "the engine hung up" in window.message_bar.text()
    assert len(task_errors) == 1
    task_errors.clear()
    run(window.shutdown())


def test_a_workbench_error_is_shown_as_it_is_and_where_the_part_explains_it(
    window: MainWindow, run: Run, task_errors: list[logging.LogRecord]
) -> None:
    window.tasks.spawn(_fail(WorkspaceError("The folder is read-only.")))
    run(window.tasks.settle())
    assert window.message_bar.text() == "The folder is read-only."
    window.message_bar.on_close_clicked()
    history = window.history
    history.tasks.spawn(_fail(WorkspaceError("The report could not be written.")))
    run(history.tasks.settle())
    assert history.status.text() == "The report could not be written."
    assert not window.message_bar.isVisible()
    assert task_errors == []  # expected errors are logged as warnings, not as failures


def test_close_lets_tasks_finish_within_the_grace_and_cancels_the_rest(run: Run) -> None:
    tasks = Tasks()
    busy: list[bool] = []
    tasks.busy_changed.connect(busy.append)
    ended: list[str] = []

    async def quick() -> None:
        await asyncio.sleep(0)
        ended.append("quick")

    async def endless() -> None:
        await asyncio.Event().wait()

    async def scenario() -> tuple["asyncio.Task[None]", "asyncio.Task[None]"]:
        first, second = tasks.spawn(quick()), tasks.spawn(endless())
        await tasks.close(grace_s=0.5)
        return first, second

    first, second = run(scenario())
    assert ended == ["quick"] and not first.cancelled()
    assert second.cancelled()
    assert not tasks.busy() and busy == [True, False]


def test_settle_waits_for_the_tasks_that_tasks_start(run: Run) -> None:
    tasks = Tasks()
    ended: list[str] = []

    async def child() -> None:
        await asyncio.sleep(0)
        ended.append("child")

    async def parent() -> None:
        await asyncio.sleep(0)
        tasks.spawn(child())
        ended.append("parent")

    tasks.spawn(parent())
    assert run(tasks.settle()) is True
    assert ended == ["parent", "child"]
