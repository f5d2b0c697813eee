"""Compare: one command under several postures, each in its own copy of the workspace."""

import asyncio
from pathlib import Path

import pytest

from workbench.errors import UsageError
from workbench.executors import build_executor
from workbench.executors.types import CancelToken
from workbench.postures.model import Posture, PostureId
from workbench.runs.compare import (
    CompareRequest,
    compare_row,
    default_postures,
    run_compare,
    shell_command,
)
from workbench.runs.history import RunHistory
from workbench.runs.layout import DataLayout
from workbench.runs.record import RunRecord
from workbench.runs.service import RunService

APPEND = ("sh", "-c", "cat seed.txt; echo more >> seed.txt; echo new > made.txt")


def _service(root: Path) -> RunService:
    layout = DataLayout(root)
    return RunService(layout, RunHistory(layout.history_path), build_executor)


def _source(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    source.mkdir()
    (source / "seed.txt").write_text("seed\n")
    (source / "link").symlink_to("seed.txt")
    return source


def _request(source: Path | None, *runs: tuple[PostureId, tuple[str, ...]]) -> CompareRequest:
    """A comparison of a skill (any folder will do) in `source`, or in empty workspaces."""
    plans = tuple((Posture(posture_id), argv) for posture_id, argv in runs)
    return CompareRequest("demo", Path(__file__).parent, plans, source)


def test_each_posture_runs_in_its_own_copy_of_the_workspace(tmp_path: Path) -> None:
    source = _source(tmp_path)
    service = _service(tmp_path / "data")
    seen: list[str] = []
    request = _request(
        source,
        (PostureId.LOCAL, APPEND),
        (PostureId.LOCAL, ("sh", "-c", "cat seed.txt; exit 4")),
    )
    records = asyncio.run(
        run_compare(service, request, CancelToken(), lambda r: seen.append(r.run_id))
    )

    assert [r.run_id for r in records] == seen and len(set(seen)) == 2
    first, second = records
    assert first.workspace != second.workspace != source
    assert (first.workspace / "seed.txt").read_text() == "seed\nmore\n"
    assert (second.workspace / "seed.txt").read_text() == "seed\n"  # not the first run's file
    assert (second.workspace / "link").is_symlink()
    assert (source / "seed.txt").read_text() == "seed\n" and not (source / "made.txt").exists()
    rows = [compare_row(r) for r in records]
    assert [(r.outcome, r.changes) for r in rows] == [("ok", 2), ("failed", 0)]
    assert rows[1].cause == "exited with code 4"
    assert rows[0].wall_seconds is not None and rows[0].peak_processes is not None
    assert service.history.get(first.run_id).outcome == "ok"


def test_a_posture_that_cannot_run_it_does_not_stop_the_others(tmp_path: Path) -> None:
    service = _service(tmp_path / "data")
    request = _request(None, (PostureId.QUICKJS, APPEND), (PostureId.LOCAL, ("true",)))
    refused, ran = asyncio.run(run_compare(service, request, CancelToken()))
    assert refused.posture == "quickjs" and refused.outcome == "error"
    assert "JavaScript" in refused.cause
    assert ran.posture == "local" and ran.outcome == "ok"
    assert list(ran.workspace.iterdir()) == []  # no source: an empty workspace


def test_stop_skips_the_postures_not_yet_run(tmp_path: Path) -> None:
    service = _service(tmp_path / "data")
    cancel = CancelToken()

    def stop_after_first(record: RunRecord) -> None:
        del record
        cancel.cancel()

    request = _request(None, (PostureId.LOCAL, ("true",)), (PostureId.LOCAL, ("true",)))
    records = asyncio.run(run_compare(service, request, cancel, stop_after_first))
    assert len(records) == 1
    assert len(service.history.recent()) == 1


def test_the_data_folder_inside_the_source_is_not_copied(tmp_path: Path) -> None:
    source = _source(tmp_path)
    service = _service(source / ".workbench-data")
    request = _request(source, (PostureId.LOCAL, ("true",)))
    (record,) = asyncio.run(run_compare(service, request, CancelToken()))
    assert sorted(p.name for p in record.workspace.iterdir()) == ["link", "seed.txt"]
    assert record.outcome == "ok" and record.changes == ()


def test_shell_command_wraps_shells_and_splits_quickjs_scripts() -> None:
    assert shell_command(PostureId.HARDENED, "echo 'a b'") == ("sh", "-c", "echo 'a b'")
    assert shell_command(PostureId.QUICKJS, "main.js 'a b' c") == ("main.js", "a b", "c")
    with pytest.raises(UsageError, match="Cannot split"):
        shell_command(PostureId.QUICKJS, "main.js 'unclosed")


def test_default_postures_fit_the_command_and_never_include_local() -> None:
    everything = set(PostureId)
    shell = default_postures(everything, ("sh", "-c", "true"))
    assert shell == [PostureId.GVISOR, PostureId.DOCKER, PostureId.BUBBLEWRAP, PostureId.HARDENED]
    assert default_postures({PostureId.LOCAL, PostureId.HARDENED}, ("true",)) == [
        PostureId.HARDENED
    ]
    assert default_postures(everything, ("main.js", "x")) == [PostureId.QUICKJS]
    assert default_postures({PostureId.LOCAL}, ("true",)) == []


def test_each_failing_cell_names_the_control_that_made_the_difference(tmp_path: Path) -> None:
    service = _service(tmp_path / "data")
    fork = ("sh", "-c", "for i in $(seq 24); do sleep 1 & done; wait")
    limited = Posture(PostureId.HARDENED).with_limits(pids=6)
    quick = Posture(PostureId.LOCAL).with_limits(timeout_s=0.5)
    request = CompareRequest(
        "demo",
        Path(__file__).parent,
        ((Posture(PostureId.LOCAL), fork), (limited, fork), (quick, fork)),
    )
    records = asyncio.run(run_compare(service, request, CancelToken()))
    rows = [compare_row(record, records) for record in records]
    assert [row.outcome for row in rows] == ["ok", "limit_exceeded", "timed_out"]
    assert [row.difference for row in rows] == [
        "",
        "process limit 6",
        "wall-clock timeout 0.5 s",
    ]
    assert compare_row(records[1]).difference == ""  # alone, nothing ended ok to differ from
