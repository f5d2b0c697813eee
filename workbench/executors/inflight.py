"""`InFlight`: the runs an executor has in flight, and the signal that ends them.

Every executor's `stop()` must end the runs still going (each watches `shutdown` and ends as
cancelled, killing what it started) and return only once they have; `prepare_runs_dir()` is
the first step of every executor's `start()`.
"""

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from workbench.errors import ExecutorError


class InFlight:
    """Counts the runs in flight; `end_all()` signals them to end and waits until they have."""

    def __init__(self) -> None:
        self.shutdown = asyncio.Event()
        self._running = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def count(self) -> int:
        """How many runs are in flight."""
        return self._running

    def reopen(self) -> None:
        """A new session: runs may start again."""
        self.shutdown = asyncio.Event()

    @contextmanager
    def run(self) -> Iterator[None]:
        """Count one run while the block runs."""
        self._running += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._running -= 1
            if not self._running:
                self._idle.set()

    async def end_all(self) -> None:
        """Tell every run in flight to end, and wait until none is left."""
        self.shutdown.set()
        await self._idle.wait()


def prepare_runs_dir(runs_dir: Path) -> None:
    """Create the session's runs folder; `ExecutorError` when it cannot be."""
    try:
        runs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ExecutorError(
            f"Cannot create the runs folder {runs_dir}: {error.strerror or error}."
        ) from error
