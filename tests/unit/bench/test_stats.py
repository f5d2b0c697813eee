"""The bench's interleaving, statistics and goals, without timing anything real."""

import asyncio

import pytest

from workbench.bench.rows import Goal, RowResult, RowSpec
from workbench.bench.stats import Case, Stats, interleave, median, round_order, summarize


def test_median_of_odd_and_even_counts() -> None:
    assert median([5.0, 1.0, 3.0]) == 3.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    with pytest.raises(ValueError, match="no samples"):
        median([])


def test_summarize_gives_median_min_and_max() -> None:
    assert summarize([0.3, 0.1, 0.2, 0.9]) == Stats(n=4, median=0.25, low=0.1, high=0.9)


def test_round_order_rotates_so_every_case_leads_once() -> None:
    orders = [round_order(3, r) for r in range(4)]
    assert orders == [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 1, 2]]
    assert round_order(0, 5) == []


def test_interleave_runs_cases_round_robin_after_warmup() -> None:
    calls: list[str] = []

    def case(name: str, seconds: list[float]) -> Case:
        queue = iter(seconds)

        async def measure() -> float:
            calls.append(name)
            return next(queue)

        return Case(name, measure)

    cases = [case("a", [9.0, 1.0, 2.0, 3.0]), case("b", [9.0, 10.0, 30.0, 20.0])]
    stats = asyncio.run(interleave(cases, rounds=3))
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]
    # the warm-up sample (9.0) is not recorded
    assert stats["a"] == Stats(n=3, median=2.0, low=1.0, high=3.0)
    assert stats["b"] == Stats(n=3, median=20.0, low=10.0, high=30.0)


def test_interleave_refuses_twin_names() -> None:
    async def measure() -> float:
        return 0.0

    with pytest.raises(ValueError, match="must differ"):
        asyncio.run(interleave([Case("x", measure), Case("x", measure)], rounds=1))


def _stats(value: float) -> Stats:
    return Stats(n=1, median=value, low=value, high=value)


@pytest.mark.parametrize(
    ("goal", "ours", "floor", "met"),
    [
        (Goal("<= 2x", max_ratio=2.0), 2.0, 1.0, True),
        (Goal("<= 2x", max_ratio=2.0), 2.1, 1.0, False),
        (Goal("+10 ms", max_excess_s=0.010), 0.055, 0.050, True),
        (Goal("+10 ms", max_excess_s=0.010), 0.065, 0.050, False),
        (Goal("both", max_ratio=3.0, max_ours_s=0.002), 0.001, 0.0005, True),
        (Goal("both", max_ratio=3.0, max_ours_s=0.002), 0.003, 0.0015, False),
        (Goal("both", max_ratio=3.0, max_ours_s=0.002), 0.0019, 0.0005, False),
    ],
)
def test_goal_checks_every_bound(goal: Goal, ours: float, floor: float, met: bool) -> None:
    assert goal.met(_stats(ours), _stats(floor)) is met


def test_row_ratio_and_verdict_need_both_sides() -> None:
    spec = RowSpec("r", "a row", "ours", "floor", Goal("<= 2x", max_ratio=2.0))
    measured = RowResult(spec, "g", None, ours=_stats(3.0), floor=_stats(2.0))
    assert measured.ratio == 1.5
    assert measured.met is True
    skipped = RowResult(spec, "g", None, skipped="no engine")
    assert skipped.ratio is None
    assert skipped.met is None
