"""Background tasks: an error in any part's task reaches the user (message bar) and the log;
a part that explains its own errors does so in place; closing ends every task."""

import asyncio

from tests.ui.conftest import Run
from workbench.ui.common.tasks import Tasks


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
