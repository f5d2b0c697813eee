"""`workbench.platform.loops`: the loops' blocking calls do not queue behind a few slow ones."""

import asyncio
import threading

from workbench.platform import loops


def test_a_loop_waits_on_as_many_blocking_calls_at_once_as_it_has_threads() -> None:
    # Each call holds its thread until all of them are in: with fewer threads, they time out.
    barrier = threading.Barrier(loops.BLOCKING_THREADS, timeout=10)

    async def main() -> list[int]:
        return await asyncio.gather(
            *(asyncio.to_thread(barrier.wait) for _ in range(loops.BLOCKING_THREADS))
        )

    assert sorted(loops.run(main())) == list(range(loops.BLOCKING_THREADS))


def test_run_returns_what_its_coroutine_returns_and_closes_its_loop() -> None:
    async def main() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    loop = loops.run(main())
    assert loop.is_closed()
