"""The run service: snapshot, run, diff, record and restore, over the real local executor."""

import asyncio
import os
import tempfile
import threading
import time
from pathlib import Path

import pytest

from workbench.errors import ExecutorError, WorkspaceError
from workbench.executors import Executor, build_executor
from workbench.executors.types import (
    CancelToken,
    OutputChunk,
    OutputSink,
    RunRequest,
    RunResult,
    SessionSpec,
    Stream,
)
from workbench.postures.model import Posture, PostureId
from workbench.runs.history import RunHistory
from workbench.runs.layout import SHARED, DataLayout
from workbench.runs.record import RunState
from workbench.runs.service import RunPlan, RunService
from workbench.runs.undo import restore_run
from workbench.workspace.blobs import BlobSession
from workbench.workspace.changes import ChangeKind
from workbench.workspace.snapshot import RACY_NS

SCRIPT = (
    "echo out; echo err >&2; echo new > added.txt; printf more >> edit.txt; rm gone.txt; "
    "chmod 755 tool.sh; rm swap.txt; ln -s edit.txt swap.txt; exit 3"
)


def _workspace(root: Path) -> Path:
    root.mkdir()
    (root / "edit.txt").write_text("text\n")
    (root / "gone.txt").write_text("bye\n")
    (root / "tool.sh").write_text("#!/bin/sh\n")
    (root / "tool.sh").chmod(0o644)
    (root / "swap.txt").write_text("a file\n")
    return root


def _service(tmp_path: Path, build=build_executor) -> RunService:
    layout = DataLayout(tmp_path / "data")
    return RunService(layout, RunHistory(layout.history_path), build)


def _ignore(chunk: OutputChunk) -> None:
    del chunk


def _plan(workspace: Path, *argv: str) -> RunPlan:
    return RunPlan("demo", workspace, Posture(PostureId.LOCAL), tuple(argv), workspace)


def test_run_reports_changes_records_them_and_restores(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path / "ws")
    service = _service(tmp_path)
    chunks: list[OutputChunk] = []

    def sink(chunk: OutputChunk) -> None:
        chunks.append(chunk)

    plan = _plan(workspace, "sh", "-c", SCRIPT)
    done = asyncio.run(service.run_once(plan, sink, CancelToken()))

    assert {c.path: c.kind for c in done.result.changes} == {
        "added.txt": ChangeKind.ADDED,
        "edit.txt": ChangeKind.MODIFIED,
        "gone.txt": ChangeKind.DELETED,
        "swap.txt": ChangeKind.TYPE_CHANGED,
        "tool.sh": ChangeKind.MODE_CHANGED,
    }
    assert done.result.run_id == plan.run_id == done.record.run_id
    assert done.result.exit_code == 3 and done.record.outcome == "failed"
    assert b"out\n" in b"".join(c.data for c in chunks if c.stream is Stream.STDOUT)
    assert done.result.warnings  # the local posture always warns
    stored = service.history.get(plan.run_id)
    assert [c.path for c in stored.changes] == [c.path for c in done.result.changes]

    report = restore_run(service.layout, stored)

    assert report.complete
    assert sorted(p.name for p in workspace.iterdir()) == [
        "edit.txt",
        "gone.txt",
        "swap.txt",
        "tool.sh",
    ]
    assert (workspace / "edit.txt").read_text() == "text\n"
    assert not (workspace / "swap.txt").is_symlink()
    assert (workspace / "tool.sh").stat().st_mode & 0o777 == 0o644


def test_restore_refuses_when_the_workspace_changed_since(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path / "ws")
    service = _service(tmp_path)
    done = asyncio.run(service.run_once(_plan(workspace, "touch", "x"), _ignore, CancelToken()))
    (workspace / "edit.txt").write_text("my later work\n")
    with pytest.raises(WorkspaceError, match=r"changed after run .* edit.txt \(modified\)"):
        restore_run(service.layout, done.record)
    assert (workspace / "edit.txt").read_text() == "my later work\n"
    assert restore_run(service.layout, done.record, force=True).complete
    assert not (workspace / "x").exists()


def test_a_run_restored_once_can_be_restored_again_until_the_workspace_changes(
    tmp_path: Path,
) -> None:
    workspace = _workspace(tmp_path / "ws")
    service = _service(tmp_path)
    done = asyncio.run(service.run_once(_plan(workspace, "touch", "x"), _ignore, CancelToken()))
    assert restore_run(service.layout, done.record).complete
    assert restore_run(service.layout, done.record).complete  # as the first restore left it
    assert not (workspace / "x").exists()
    (workspace / "later.txt").write_text("my later work\n")
    with pytest.raises(WorkspaceError, match=r"changed after run .* later.txt \(added\)"):
        restore_run(service.layout, done.record)
    assert (workspace / "later.txt").exists()


class _BrokenExecutor:
    """An executor whose start fails, to check the service's error path."""

    def __init__(self, posture: Posture) -> None:
        self.posture = posture
        self.stopped = 0

    async def start(self, session: SessionSpec) -> None:
        raise ExecutorError("cannot start: no engine")

    async def run(self, request: RunRequest, sink: OutputSink, cancel: CancelToken) -> RunResult:
        raise AssertionError("never reached")

    async def stop(self) -> None:
        self.stopped += 1


def test_executor_failure_is_recorded_and_the_executor_stopped(tmp_path: Path) -> None:
    made: list[_BrokenExecutor] = []

    def build(posture: Posture) -> Executor:
        made.append(_BrokenExecutor(posture))
        return made[-1]

    service = _service(tmp_path, build)
    plan = _plan(_workspace(tmp_path / "ws"), "true")
    with pytest.raises(ExecutorError):
        asyncio.run(service.run_once(plan, _ignore, CancelToken()))
    assert made[0].stopped == 1
    record = service.history.get(plan.run_id)
    assert (record.state, record.outcome, record.cause) == (
        RunState.FINISHED,
        "error",
        "cannot start: no engine",
    )


def test_the_executor_is_built_off_the_event_loop(tmp_path: Path) -> None:
    """A posture's first run imports its executor's modules as the executor is built: that
    must not stall an app's window, whose event loop runs the run."""
    builders: list[int] = []

    def build(posture: Posture) -> Executor:
        builders.append(threading.get_ident())
        return build_executor(posture)

    async def run() -> int:
        await _service(tmp_path, build).run_once(
            _plan(_workspace(tmp_path / "ws"), "true"), _ignore, CancelToken()
        )
        return threading.get_ident()

    loop_thread = asyncio.run(run())
    assert len(builders) == 1 and builders[0] != loop_thread


def test_next_run_in_the_same_workspace_reuses_hashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = _workspace(tmp_path / "ws")
    time.sleep(RACY_NS / 1e9 + 0.05)  # files older than the racy window of a snapshot
    service = _service(tmp_path)
    asyncio.run(service.run_once(_plan(workspace, "true"), _ignore, CancelToken()))
    reads: list[int] = []
    real_put = BlobSession.put_fd

    def counting_put(self: BlobSession, fd: int, size: int) -> tuple[str, int]:
        reads.append(fd)
        return real_put(self, fd, size)

    monkeypatch.setattr(BlobSession, "put_fd", counting_put)
    done = asyncio.run(service.run_once(_plan(workspace, "touch", "new"), _ignore, CancelToken()))
    assert len(reads) == 1  # only the new file was read: the rest reused the last run's hashes
    assert [c.path for c in done.result.changes] == ["new"]


def test_data_folder_inside_the_workspace_is_left_out(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path / "ws")
    layout = DataLayout(workspace / ".local" / "workbench")
    service = RunService(layout, RunHistory(layout.history_path), build_executor)

    done = asyncio.run(service.run_once(_plan(workspace, "touch", "x"), _ignore, CancelToken()))

    assert [c.path for c in done.result.changes] == ["x"]
    assert restore_run(layout, service.history.get(done.record.run_id)).complete
    assert not (workspace / "x").exists()
    assert service.history.resolve("last").run_id == done.record.run_id  # history intact


def test_the_data_folder_itself_is_refused_as_a_workspace(tmp_path: Path) -> None:
    layout = DataLayout(tmp_path / "data")
    service = RunService(layout, RunHistory(layout.history_path), build_executor)
    with pytest.raises(WorkspaceError, match="own data folder"):
        asyncio.run(service.run_once(_plan(layout.root, "true"), _ignore, CancelToken()))


def test_the_executor_logs_into_the_run_folder_of_the_history_id(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path / "ws")
    service = _service(tmp_path)
    plan = _plan(workspace, "sh", "-c", "echo logged")
    completed = asyncio.run(service.run_once(plan, _ignore, CancelToken()))
    assert completed.result.run_id == plan.run_id
    log_path = completed.result.stdout.log_path
    assert log_path is not None
    assert log_path.parent == service.layout.run_dir(plan.run_id)
    assert log_path.read_text() == "logged\n"


def test_fresh_workspaces_stay_reachable_for_the_hardened_posture_as_root() -> None:
    with tempfile.TemporaryDirectory() as base:  # /tmp itself is open to everyone
        Path(base).chmod(0o755)
        private = Path(base) / "private"
        private.mkdir(mode=0o700)
        in_private = DataLayout(private / "data").fresh_workspace("r1")
        in_open = DataLayout(Path(base) / "data").fresh_workspace("r2")
    assert in_open == Path(base) / "data" / "workspaces" / "r2"
    if os.geteuid() == 0:
        assert in_private == SHARED / "workspaces" / "r1"
    else:
        assert in_private == private / "data" / "workspaces" / "r1"
