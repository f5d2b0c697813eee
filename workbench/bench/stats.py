"""Interleaved timing and its statistics: the core every bench row is measured with.

A `Case` is one thing to time; its `measure()` coroutine runs it once and returns the seconds
it took (so set-up and tear-down stay outside the figure). `interleave()` warms every case up
once, then runs them round robin (A B C, B C A, C A B, ...: the order rotates each round) so
that load drifting on a shared machine hits every case alike. `summarize()` turns a case's
samples into its median, minimum and maximum.
"""

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Case:
    """One thing to time: `measure()` runs it once and returns the seconds it took."""

    name: str
    measure: Callable[[], Awaitable[float]]


@dataclass(frozen=True, slots=True)
class Stats:
    """Median, minimum and maximum of `n` samples, in seconds."""

    n: int
    median: float
    low: float
    high: float


def median(samples: Sequence[float]) -> float:
    """The middle sample (the mean of the two middle ones for an even count)."""
    if not samples:
        raise ValueError("the median of no samples")
    ordered = sorted(samples)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def summarize(samples: Sequence[float]) -> Stats:
    """The statistics of one case's samples."""
    return Stats(n=len(samples), median=median(samples), low=min(samples), high=max(samples))


def round_order(count: int, round_index: int) -> list[int]:
    """The order in which `count` cases run in round `round_index`: rotated by one each round."""
    if count <= 0:
        return []
    start = round_index % count
    return [(start + i) % count for i in range(count)]


async def interleave(cases: Sequence[Case], rounds: int, warmup: int = 1) -> dict[str, Stats]:
    """Run `cases` for `rounds` interleaved rounds after `warmup` unrecorded calls of each."""
    names = [case.name for case in cases]
    if len(set(names)) != len(names):
        raise ValueError(f"case names must differ: {names}")
    for case in cases:
        for _ in range(warmup):
            await case.measure()
    samples: dict[str, list[float]] = {case.name: [] for case in cases}
    for round_index in range(max(1, rounds)):
        for index in round_order(len(cases), round_index):
            case = cases[index]
            samples[case.name].append(await case.measure())
    return {name: summarize(values) for name, values in samples.items()}


def timed_call(action: Callable[[], object]) -> Callable[[], Awaitable[float]]:
    """A `Case.measure` that times one synchronous call of `action` (wall clock)."""

    async def measure() -> float:
        start = time.perf_counter()
        action()
        return time.perf_counter() - start

    return measure


def reported(action: Callable[[], float]) -> Callable[[], Awaitable[float]]:
    """A `Case.measure` whose `action` times itself: it returns the seconds it measured."""

    async def measure() -> float:
        return action()

    return measure


def cpu_per_call(action: Callable[[], object], calls: int) -> Callable[[], Awaitable[float]]:
    """A `Case.measure` that returns this thread's CPU seconds per call over `calls` calls."""

    async def measure() -> float:
        start = time.thread_time()
        for _ in range(calls):
            action()
        return (time.thread_time() - start) / calls

    return measure
