"""Retention: pruning old runs removes their rows, folders, fresh workspaces and kept files, and
nothing a remaining run, a run in progress or the user's own folder needs."""

import asyncio
import os
import time
from pathlib import Path

import pytest

from workbench.errors import UsageError
from workbench.executors import build_executor
from workbench.executors.types import CancelToken, OutputChunk
from workbench.postures.model import Posture, PostureId
from workbench.runs.history import RunHistory
from workbench.runs.layout import DataLayout
from workbench.runs.record import RunRecord
from workbench.runs.retention import Retention, prune
from workbench.runs.service import RunPlan, RunService
from workbench.runs.undo import restore_run


def _ignore(chunk: OutputChunk) -> None:
    del chunk


def _run(service: RunService, workspace: Path, script: str) -> str:
    plan = RunPlan("demo", workspace, Posture(PostureId.LOCAL), ("sh", "-c", script), workspace)
    done = asyncio.run(service.run_once(plan, _ignore, CancelToken()))
    return done.record.run_id


def _blob_count(layout: DataLayout) -> int:
    with layout.blobs.session() as blobs:
        (small,) = blobs.db.execute("SELECT COUNT(*) FROM blobs").fetchone()
    return int(small) + len(list(layout.blobs.root.glob("??/*")))


@pytest.fixture
def service(tmp_path: Path) -> RunService:
    layout = DataLayout(tmp_path / "data")
    return RunService(layout, RunHistory(layout.history_path), build_executor)


def test_keeping_the_last_runs_removes_the_rest_with_what_they_kept(
    service: RunService, tmp_path: Path
) -> None:
    layout = service.layout
    mine = tmp_path / "mine"
    mine.mkdir()
    old = _run(service, mine, "head -c 300000 /dev/urandom > big.bin; echo a > a.txt")
    fresh = layout.fresh_workspace("20000101-000000-ffffff")
    fresh_run = asyncio.run(
        service.run_once(
            RunPlan(
                "demo", mine, Posture(PostureId.LOCAL), ("sh", "-c", "echo x > x"), fresh,
                run_id="20000101-000000-ffffff",
            ),
            _ignore,
            CancelToken(),
        )
    ).record.run_id  # fmt: skip
    kept = _run(service, mine, "rm big.bin; echo b > a.txt")
    blobs_before = _blob_count(layout)

    report = prune(layout, service.history, Retention(keep_runs=1))

    assert sorted(report.removed) == sorted([old, fresh_run])
    assert [r.run_id for r in service.history.recent()] == [kept]
    assert not layout.run_dir(old).exists() and not fresh.exists()  # the workbench's folder
    assert mine.is_dir() and (mine / "a.txt").read_text() == "b\n"  # the user's folder stays
    assert report.freed_bytes > 0 and report.sweep_skipped == ""
    assert _blob_count(layout) < blobs_before
    restore_run(layout, service.history.get(kept))  # what the kept run needs is still there
    assert (mine / "big.bin").stat().st_size == 300000
    assert (mine / "a.txt").read_text() == "a\n"


def test_keeping_days_removes_only_older_runs(service: RunService, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = _run(service, workspace, "true")
    second = _run(service, workspace, "true")
    ten_days_later = time.time() + 10 * 86400
    assert (
        prune(service.layout, service.history, Retention(keep_days=30), ten_days_later).removed
        == ()
    )
    report = prune(service.layout, service.history, Retention(keep_days=5), ten_days_later)
    assert sorted(report.removed) == sorted([first, second])
    assert prune(service.layout, service.history, Retention()).removed == ()


def test_a_run_in_progress_stays_and_puts_the_sweep_off(
    service: RunService, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    done = _run(service, workspace, "echo one > one.txt")
    running = RunRecord("20990101-000000-aaaaaa", "demo", workspace, "local", ("true",),
                        workspace, tmp_path / "run", time.time())  # fmt: skip
    service.history.start(running)  # owned by this live process: in progress
    lock = service.layout.hold_run_lock()  # as a run of another process holds it
    try:
        report = prune(service.layout, service.history, Retention(keep_runs=0))
    finally:
        os.close(lock)
    assert report.removed == (done,)
    assert [r.run_id for r in service.history.recent()] == [running.run_id]
    assert report.freed_bytes == 0 and "swept at the next prune" in report.sweep_skipped
    assert "swept at the next prune" in report.sentence()


def test_a_negative_limit_is_refused() -> None:
    with pytest.raises(UsageError):
        Retention(keep_runs=-1)
    assert Retention(keep_runs=1, keep_days=2).describe() == (
        "the last 1 run and the runs of the last 2 days"
    )
