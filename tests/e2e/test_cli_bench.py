"""`workbench bench` end to end: a real subprocess of the CLI over a subset of the rows.

The whole `--quick` run takes most of a minute, so these run a few cheap rows; they check the
document's shape and the statistics' consistency, never the timings themselves.
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROWS = ("hardened-spawn", "sampler-local", "cli-start")
STATUSES = {"met", "missed", "skipped", "failed"}


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m workbench bench ARGS...` with its own data folder."""
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}
    command = [sys.executable, "-m", "workbench", "bench", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def _check_stats(stats: dict[str, Any]) -> None:
    assert stats["n"] >= 1
    assert 0 < stats["min_s"] <= stats["median_s"] <= stats["max_s"]


def test_quick_json_is_one_schema_versioned_document(tmp_path: Path) -> None:
    done = bench(tmp_path, "--quick", "--json", "--rows", ",".join(ROWS))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert [row["id"] for row in document["rows"]] == list(ROWS)
    _check_document(document)
    assert "bench: measuring" in done.stderr  # progress goes to stderr, never into the JSON


@pytest.mark.docker
def test_the_whole_quick_bench_runs(tmp_path: Path, docker_runtimes: set[str]) -> None:
    done = bench(tmp_path, "--quick", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    _check_document(document)
    failed = {row["id"]: row["error"] for row in document["rows"] if row["status"] == "failed"}
    assert failed == {}


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
    tmp_path: Path, docker_runtimes: set[str]
) -> None:
    done = bench(tmp_path, "--quick", "--json", "--rows", "docker-round-trip,docker-first-chunk")
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in json.loads(done.stdout)["rows"]}
    assert set(rows) == {"docker-round-trip", "docker-first-chunk"}
    for row in rows.values():
        assert row["status"] in ("met", "missed"), row
    # the first chunk is compared with our own round trip, measured in the same rounds
    assert (
        rows["docker-first-chunk"]["floor"]["stats"] == rows["docker-round-trip"]["ours"]["stats"]
    )
