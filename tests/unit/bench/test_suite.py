"""Row selection, skipping and reporting of the bench, with fake groups (no timing)."""

import asyncio
import json
import tempfile
from pathlib import Path

import pytest

from workbench.bench import suite
from workbench.bench.report import bench_payload, format_table
from workbench.bench.rows import BenchContext, Goal, Group, Need, Outcome, RowSpec
from workbench.bench.stats import Stats
from workbench.errors import UsageError
from workbench.postures.model import PostureId

FAST = RowSpec("fast", "a fast row", "ours", "floor", Goal("<= 2x", max_ratio=2.0))
SLOW = RowSpec("slow", "a slow row", "ours", "floor", Goal("<= 2x", max_ratio=2.0))
DOCKERISH = RowSpec("boxed", "a boxed row", "ours", "floor", Goal("<= 1x", max_ratio=1.0))
BROKEN = RowSpec("broken", "a broken row", "ours", "floor", Goal("<= 1x", max_ratio=1.0))
KEPT = RowSpec("kept", "measured before it broke", "ours", "floor", Goal("<= 1x", max_ratio=1.0))


def _stats(value: float) -> Stats:
    return Stats(n=3, median=value, low=value / 2, high=value * 2)


async def _measured(
    context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
) -> None:
    assert context.scratch.is_dir()
    outcomes["fast"] = Outcome(_stats(0.002), _stats(0.001), note="<b>plain</b>")
    if "slow" in wanted:
        outcomes["slow"] = Outcome(_stats(0.003), _stats(0.001))


async def _fails(
    context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
) -> None:
    outcomes["kept"] = Outcome(_stats(0.001), _stats(0.001))
    raise RuntimeError("engine went away\x1b[2J")


FAKE_GROUPS = (
    Group("local", (FAST, SLOW), _measured),
    Group("box", (DOCKERISH,), _measured, PostureId.DOCKER, (Need.ENGINE,)),
    Group("broken", (KEPT, BROKEN), _fails),
)


@pytest.fixture
def fake_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(suite, "GROUPS", FAKE_GROUPS)
    monkeypatch.setattr(suite, "machine_gaps", lambda: {Need.ENGINE: "no Docker engine answers"})


@pytest.mark.usefixtures("fake_suite")
def test_select_by_posture_keeps_shared_rows() -> None:
    chosen = suite.select_groups([PostureId.HARDENED], None)
    assert [group.id for group, _ in chosen] == ["local", "broken"]
    everything = suite.select_groups(None, None)
    assert [group.id for group, _ in everything] == ["local", "box", "broken"]


@pytest.mark.usefixtures("fake_suite")
def test_select_by_row_id_and_refuse_unknown_ids() -> None:
    chosen = suite.select_groups(None, ["slow"])
    assert [(group.id, ids) for group, ids in chosen] == [("local", frozenset({"slow"}))]
    with pytest.raises(UsageError, match="unknown bench row"):
        suite.select_groups(None, ["nope"])


@pytest.mark.usefixtures("fake_suite")
def test_run_skips_missing_needs_and_reports_failures() -> None:
    run = asyncio.run(suite.run_bench(quick=True))
    by_id = {row.spec.id: row for row in run.rows}
    assert list(by_id) == ["fast", "slow", "boxed", "kept", "broken"]
    assert by_id["kept"].met is True and not by_id["kept"].error
    assert by_id["fast"].ratio == 2.0 and by_id["fast"].met is True
    assert by_id["slow"].met is False
    assert by_id["boxed"].skipped == "no Docker engine answers"
    assert by_id["broken"].error == "RuntimeError: engine went away\x1b[2J"
    table = format_table(run)
    assert "MISSED" in table and "no Docker engine answers" in table
    assert "\x1b" not in table  # hostile text is shown escaped
    document = bench_payload(run)
    json.dumps(document)
    statuses = {row["id"]: row["status"] for row in document["rows"]}
    assert statuses == {
        "fast": "met",
        "slow": "missed",
        "boxed": "skipped",
        "kept": "met",
        "broken": "failed",
    }


def test_every_real_row_id_is_unique() -> None:
    ids = suite.row_ids()
    assert len(ids) == len(set(ids))
    assert {"hardened-spawn", "docker-stop", "workspace-10k", "cli-start"} <= set(ids)


def test_scratch_folders_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(suite, "GROUPS", FAKE_GROUPS[:1])
    monkeypatch.setattr(suite, "machine_gaps", dict)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    asyncio.run(suite.run_bench(quick=False))
    assert list(tmp_path.iterdir()) == []


def test_a_hanging_group_is_aborted_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    aborted: list[str] = []

    async def hangs(
        context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
    ) -> None:
        await asyncio.Event().wait()

    group = Group("stuck", (FAST,), hangs, abort=lambda context: aborted.append(context.token))
    monkeypatch.setattr(suite, "GROUPS", (group,))
    monkeypatch.setattr(suite, "machine_gaps", dict)
    monkeypatch.setattr(suite, "ROW_LIMIT_S", {True: 0.05, False: 0.05})
    run = asyncio.run(suite.run_bench(quick=True))
    assert run.hung is True
    assert run.rows[0].error.startswith("GroupHung: gave up after 0.05 s without a row")
    assert len(aborted) == 1 and aborted[0].startswith("bench-")


def test_each_row_gets_the_limit_from_the_last_one_and_no_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def slower_and_slower(
        context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
    ) -> None:
        await asyncio.sleep(0.6)  # within the limit of the group's start
        outcomes["fast"] = Outcome(_stats(0.002), _stats(0.001))
        await asyncio.sleep(1.3)  # over the limit of the first row, within two limits of it
        outcomes["slow"] = Outcome(_stats(0.002), _stats(0.001))
        await asyncio.sleep(0.6)
        outcomes["kept"] = Outcome(_stats(0.002), _stats(0.001))

    group = Group("slower", (FAST, SLOW, KEPT), slower_and_slower)
    monkeypatch.setattr(suite, "GROUPS", (group,))
    monkeypatch.setattr(suite, "machine_gaps", dict)
    monkeypatch.setattr(suite, "ROW_LIMIT_S", {True: 1.0, False: 1.0})
    run = asyncio.run(suite.run_bench(quick=True))
    fast, slow, kept = run.rows
    assert fast.ours is not None and fast.error == ""
    for row in (slow, kept):
        assert row.ours is None
        assert row.error.startswith("GroupHung: gave up after 1 s without a row")
    assert run.hung is True
