"""The workbench's asyncio loops and the threads their blocking calls run in.

Every blocking call (an engine request, a workspace walk, a history write) goes through
`asyncio.to_thread`, so the loop's default executor bounds how many wait at once. Python's
default is the CPU count plus four, and on a two-core machine a few container starts, each
holding a thread for a second, leave every other run queued behind them. These calls mostly
wait on a socket or the disk, so `BLOCKING_THREADS` is sized for waiting, not for the CPUs.
"""

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
BLOCKING_THREADS = 32


def give_blocking_threads(loop: asyncio.AbstractEventLoop) -> None:
    """Make `loop` run its blocking calls on `BLOCKING_THREADS` threads."""
    loop.set_default_executor(
        ThreadPoolExecutor(BLOCKING_THREADS, thread_name_prefix="workbench-blocking")
    )


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on a loop with the workbench's blocking threads."""
    with asyncio.Runner() as runner:
        give_blocking_threads(runner.get_loop())
        return runner.run(main)
