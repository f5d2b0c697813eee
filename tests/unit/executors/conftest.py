"""Fixtures of the executor unit tests: the output logs' thread held up, as a stalled disk
would hold it."""

import threading
from collections.abc import Callable, Iterator

import pytest

from workbench.executors.process.capture import _LOG_THREAD

HOLD_S = 30.0  # the most the log thread is held when the test never lets it go


@pytest.fixture
def held_log_thread() -> Iterator[Callable[[], bool]]:
    """The log thread kept busy until the test calls the `let_go` it gets (or `HOLD_S` pass);
    `let_go()` says whether the hold was still on."""
    hold = threading.Event()
    waited = _LOG_THREAD.submit(hold.wait, HOLD_S)

    def let_go() -> bool:
        was_on = not waited.done()
        hold.set()
        return was_on

    yield let_go
    hold.set()
    waited.result()
