"""`until`: wait, with the event loop running, for state the code under test changes."""

import asyncio
from collections.abc import Callable


async def until(condition: Callable[[], object], interval_s: float = 0.02) -> None:
    """Return once `condition()` is true, looking every `interval_s` while the loop runs.

    For state that sets nothing a test could await: a widget's text, a pool's status, the output
    a run has streamed so far. The test's timeout bounds the wait.
    """
    while not condition():  # noqa: ASYNC110 - that state sets no asyncio.Event to await
        await asyncio.sleep(interval_s)
