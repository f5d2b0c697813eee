"""Faults around a real local run keep its outcome: the history locked or corrupt mid-run, the
disk filling up under the run's folder. What failed goes to the record's notes."""

import asyncio
import json
import os
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from workbench.executors import build_executor
from workbench.executors.types import CancelToken, OutputChunk, RunStatus
from workbench.postures.model import Posture, PostureId
from workbench.runs.history import RunHistory
from workbench.runs.layout import RESULT_FILE, DataLayout
from workbench.runs.service import CompletedRun, RunPlan, RunService

pytestmark = pytest.mark.timeout(60)


def _ignore(chunk: OutputChunk) -> None:
    del chunk


def _run(data: Path, workspace: Path, fault: Callable[[], None], *argv: str) -> CompletedRun:
    """Run `argv` under the local posture, calling `fault` a moment after it starts."""
    layout = DataLayout(data)
    service = RunService(layout, RunHistory(layout.history_path, timeout_s=0.5), build_executor)
    workspace.mkdir(exist_ok=True)
    plan = RunPlan("demo", workspace, Posture(PostureId.LOCAL), argv, workspace)

    async def go() -> CompletedRun:
        asyncio.get_running_loop().call_later(0.3, fault)
        return await service.run_once(plan, _ignore, CancelToken())

    return asyncio.run(go())


def _kept_result(done: CompletedRun, said: str) -> None:
    """The outcome stands, the record says why it is not in the history, the folder keeps it."""
    assert done.result.status is RunStatus.OK and done.result.stdout.text == "done\n"
    assert done.record.status == "ok"
    [note] = [n for n in done.record.notes if n.startswith("This run is not in the history")]
    assert said in note
    kept = json.loads((done.record.run_dir / RESULT_FILE).read_text())
    assert kept["status"] == "ok" and kept["stdout"]["text"] == "done\n"


def test_a_history_locked_mid_run_keeps_the_outcome(tmp_path: Path) -> None:
    locks: list[sqlite3.Connection] = []

    def lock() -> None:
        db = sqlite3.connect(DataLayout(tmp_path / "data").history_path, isolation_level=None)
        db.execute("BEGIN EXCLUSIVE")
        locks.append(db)

    try:
        done = _run(tmp_path / "data", tmp_path / "ws", lock, "sh", "-c", "sleep 1; echo done")
    finally:
        for db in locks:
            db.close()
    _kept_result(done, "database is locked")


def test_a_history_corrupted_mid_run_keeps_the_outcome(tmp_path: Path) -> None:
    history = DataLayout(tmp_path / "data").history_path

    def corrupt() -> None:
        for path in history.parent.glob(history.name + "*"):
            path.write_bytes(b"not a database, " * 512)

    done = _run(tmp_path / "data", tmp_path / "ws", corrupt, "sh", "-c", "sleep 1; echo done")
    _kept_result(done, "file is not a database")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs (root only: it is mounted)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    folder = tmp_path / "small"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_disk_filling_under_the_run_keeps_the_outcome(tmp_path: Path, small_disk: Path) -> None:
    script = "sleep 0.5; head -c 3000000 /dev/zero; echo done >&2"
    done = _run(small_disk / "data", tmp_path / "ws", lambda: None, "sh", "-c", script)
    assert done.result.status is RunStatus.OK, done.result.cause
    assert done.result.stderr.text == "done\n"
    assert done.result.stdout.total_bytes == 3_000_000
    [note] = [n for n in done.record.notes if n.startswith("The stdout log stops short: ")]
    assert "No space left on device" in note
