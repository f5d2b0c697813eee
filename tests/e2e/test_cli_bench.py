"""`workbench bench` end to end: a real subprocess of the CLI over a subset of the rows.

The whole `--quick` run takes most of a minute, so two runs measure one row of every kind (every
group: its set-up, its floor and ours, its clean-up), the host's and the container engine's, for
the tests of the JSON document, and a few cheap runs check the text table and errors; they check
the document's shape and the statistics' consistency, never the timings themselves.
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from workbench.bench.suite import GROUPS

pytestmark = pytest.mark.slow
Bench = subprocess.CompletedProcess[str]

STATUSES = {"met", "missed", "skipped", "failed"}
# One row of every group, the cheapest to set up, in two runs: the host's, and the container
# engine's (which goes with the other engine tests). The first chunk is measured in the rounds
# of the round trip, its floor.
HOST_KINDS = (
    "hardened-spawn",
    "quickjs-first-result",
    "sampler-local",
    "cli-start",
    "bubblewrap-spawn",
    "workspace-10k",
    "env-cache-hit",
    "app-start",
)
ENGINE_KINDS = ("docker-round-trip", "docker-first-chunk", "gvisor-round-trip", "sampler-container")


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m workbench bench ARGS...` with its own data folder."""
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}
    command = [sys.executable, "-m", "workbench", "bench", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def _check_stats(stats: dict[str, Any]) -> None:
    assert stats["n"] >= 1
    assert 0 < stats["min_s"] <= stats["median_s"] <= stats["max_s"]


def _quick_json(factory: pytest.TempPathFactory, rows: tuple[str, ...]) -> Bench:
    return bench(factory.mktemp("bench"), "--quick", "--json", "--rows", ",".join(rows))


@pytest.fixture(scope="module")
def host_kinds(tmp_path_factory: pytest.TempPathFactory) -> Bench:
    """One `bench --quick --json` over `HOST_KINDS`."""
    return _quick_json(tmp_path_factory, HOST_KINDS)


@pytest.fixture(scope="module")
def engine_kinds(tmp_path_factory: pytest.TempPathFactory) -> Bench:
    """One `bench --quick --json` over `ENGINE_KINDS` (they skip without an engine)."""
    return _quick_json(tmp_path_factory, ENGINE_KINDS)


def rows_of(done: Bench) -> dict[str, dict[str, Any]]:
    """The rows of a finished `bench --json`, by id."""
    assert done.returncode == 0, done.stderr
    return {row["id"]: row for row in json.loads(done.stdout)["rows"]}


def test_quick_json_is_one_schema_versioned_document(host_kinds: Bench) -> None:
    assert list(rows_of(host_kinds)) == list(HOST_KINDS)
    _check_document(json.loads(host_kinds.stdout))
    assert "bench: measuring" in host_kinds.stderr  # progress goes to stderr, never into the JSON


def test_one_row_of_each_kind_covers_every_group() -> None:
    chosen = {*HOST_KINDS, *ENGINE_KINDS}
    kinds = {group.id for group in GROUPS for row in group.rows if row.id in chosen}
    assert kinds == {group.id for group in GROUPS}


def test_a_host_row_of_each_kind_is_measured(host_kinds: Bench) -> None:
    assert _unmeasured(host_kinds) == {}


@pytest.mark.docker
def test_an_engine_row_of_each_kind_is_measured(
    engine_kinds: Bench, docker_runtimes: set[str]
) -> None:
    assert list(rows_of(engine_kinds)) == list(ENGINE_KINDS)
    _check_document(json.loads(engine_kinds.stdout))
    assert _unmeasured(engine_kinds) == {}


def _unmeasured(done: Bench) -> dict[str, str]:
    return {
        row_id: row["error"] or row["skipped"]
        for row_id, row in rows_of(done).items()
        if row["status"] not in ("met", "missed")
    }


def _check_document(document: dict[str, Any]) -> None:
    assert document["schema"] == "skill-workbench/bench/1"
    assert document["quick"] is True
    assert document["machine"]["cpus"] >= 1
    for row in document["rows"]:
        assert row["status"] in STATUSES
        assert row["goal"]["text"]
        assert row["ours"]["what"] and row["floor"]["what"]
        if row["status"] in ("met", "missed"):
            ours, floor = row["ours"]["stats"], row["floor"]["stats"]
            _check_stats(ours)
            _check_stats(floor)
            assert row["ratio"] == pytest.approx(ours["median_s"] / floor["median_s"])
            assert row["met"] is (row["status"] == "met")
        else:
            assert row["met"] is None
            assert row["skipped"] or row["error"]


def test_text_table_names_each_side_and_the_goal(tmp_path: Path) -> None:
    done = bench(tmp_path, "--quick", "--rows", "cli-start")
    assert done.returncode == 0, done.stderr
    assert "CLI start" in done.stdout
    assert "ours: workbench --version; floor: python -c pass" in done.stdout
    assert "<= 5x" in done.stdout


def test_unknown_row_is_a_usage_error(tmp_path: Path) -> None:
    done = bench(tmp_path, "--rows", "no-such-row")
    assert done.returncode == 2
    assert "unknown bench row(s): no-such-row" in done.stderr
    assert done.stdout == ""


@pytest.mark.docker
def test_docker_rows_measure_through_the_executor(
    engine_kinds: Bench, docker_runtimes: set[str]
) -> None:
    rows = rows_of(engine_kinds)
    chunk, round_trip = rows["docker-first-chunk"], rows["docker-round-trip"]
    for row in (chunk, round_trip):
        assert row["status"] in ("met", "missed"), row
    # the first chunk is compared with our own round trip, measured in the same rounds
    assert chunk["floor"]["stats"] == round_trip["ours"]["stats"]
