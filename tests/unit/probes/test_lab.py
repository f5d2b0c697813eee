"""`run_lab` over the real run service: recorded cells, promises, cancel, failures, cleanup."""

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from workbench.cli.probe import render_scoreboard
from workbench.errors import PostureError
from workbench.executors import Executor, build_executor
from workbench.executors.types import CancelToken, OutputSink, RunRequest, RunResult, SessionSpec
from workbench.postures.model import Posture, PostureId
from workbench.probes.catalogue import ProbeId
from workbench.probes.lab import Cell, Scoreboard, run_lab, scoreboard_to_dict
from workbench.probes.site import CANARY_ENV
from workbench.probes.verdict import Verdict
from workbench.runs.history import RunHistory
from workbench.runs.layout import DataLayout
from workbench.runs.service import ExecutorFactory, RunService

PROBE_NAMES = {probe.value for probe in ProbeId}
QUICK = (ProbeId.ENV_SECRET, ProbeId.WRITE_OUTSIDE, ProbeId.LOOPBACK, ProbeId.DAEMON)


def make_service(root: Path, build: ExecutorFactory = build_executor) -> RunService:
    """A run service with its own data folder."""
    layout = DataLayout(root / "data")
    return RunService(layout, RunHistory(layout.history_path), build)


def test_local_cells_are_recorded_runs_with_the_promised_verdicts(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    lab_parent = tmp_path / "lab"
    lab_parent.mkdir()
    seen: list[Cell] = []
    board = asyncio.run(
        run_lab([PostureId.LOCAL], service, probes=QUICK, on_cell=seen.append, parent=lab_parent)
    )
    assert [cell.probe for cell in board.cells] == list(QUICK)
    assert sorted(seen, key=board.cells.index) == list(board.cells)  # each judged once
    verdicts = {cell.probe: cell.verdict for cell in board.cells}
    assert verdicts == {
        ProbeId.ENV_SECRET: Verdict.NOT_CONTAINED,
        ProbeId.WRITE_OUTSIDE: Verdict.NOT_CONTAINED,
        ProbeId.LOOPBACK: Verdict.NOT_CONTAINED,
        ProbeId.DAEMON: Verdict.CONTAINED,
    }
    assert board.unexpected() == []
    for cell in board.cells:
        record = service.history.get(cell.run_id)
        assert record.posture == "local"
        assert record.result is not None
    assert list(lab_parent.iterdir()) == []
    assert CANARY_ENV not in os.environ
    assert not board.interrupted


class Counting:
    """Builds real executors and notes when each one's session starts and stops, and when
    each run (by its probe) begins and ends."""

    def __init__(self) -> None:
        self.events: list[tuple[str, PostureId]] = []
        self.runs: list[tuple[str, PostureId, str]] = []

    def __call__(self, posture: Posture) -> Executor:
        executor = build_executor(posture)
        start, stop, run, events = executor.start, executor.stop, executor.run, self.events

        async def noted_run(
            request: RunRequest, sink: OutputSink, cancel: CancelToken
        ) -> RunResult:
            probe = next(arg for arg in request.argv if arg in PROBE_NAMES)
            self.runs.append(("begin", posture.id, probe))
            try:
                return await run(request, sink, cancel)
            finally:
                self.runs.append(("end", posture.id, probe))

        async def noted_start(session: SessionSpec) -> None:
            events.append(("start", posture.id))
            await start(session)

        async def noted_stop() -> None:
            events.append(("stop", posture.id))
            await stop()

        executor.start, executor.stop = noted_start, noted_stop  # type: ignore[method-assign]
        executor.run = noted_run  # type: ignore[method-assign]
        return executor


def test_a_posture_shares_a_session_and_postures_run_at_once(tmp_path: Path) -> None:
    counting = Counting()
    probes = (*QUICK, ProbeId.CPU)
    postures = [PostureId.LOCAL, PostureId.HARDENED]
    service = make_service(tmp_path, counting)
    reachable = Path(tempfile.mkdtemp(prefix="wb-lab-"))  # a throwaway uid can reach it
    reachable.chmod(0o755)
    try:
        board = asyncio.run(run_lab(postures, service, probes=probes, parent=reachable))
    finally:
        shutil.rmtree(reachable)
    assert board.unexpected() == []
    assert [(c.posture, c.probe) for c in board.cells] == [(p, q) for p in postures for q in probes]
    # Per posture: one session for the probes that only look, and one each for `cpu` and
    # `daemon` (a probe that pushes a limit, or asks what survives a run, runs alone).
    starts = [posture for event, posture in counting.events if event == "start"]
    assert sorted(starts) == sorted(postures * 3)
    first_stop = next(n for n, (event, _) in enumerate(counting.events) if event == "stop")
    assert set(starts[:first_stop]) == set(postures)  # both postures were running at once
    stops = [posture for event, posture in counting.events if event == "stop"]
    assert sorted(stops) == sorted(starts)
    # `daemon` asks the host which processes outlived its run: it runs after every other host
    # run has ended, and one posture's after the other's.
    first = counting.runs.index(("begin", postures[0], "daemon"))
    first = min(first, counting.runs.index(("begin", postures[1], "daemon")))
    assert [probe for _, _, probe in counting.runs[first:]] == ["daemon"] * 2 * len(postures)
    assert [event for event, _, _ in counting.runs[first:]] == ["begin", "end"] * len(postures)


@pytest.mark.docker
def test_disk_and_fork_end_a_container_postures_shared_session(
    tmp_path: Path, docker_runtimes: set[str]
) -> None:
    del docker_runtimes  # the engine's gate: skips without one
    counting = Counting()
    probes = (ProbeId.ENV_SECRET, ProbeId.DISK, ProbeId.FORK, ProbeId.DAEMON)
    service = make_service(tmp_path, counting)
    board = asyncio.run(run_lab([PostureId.DOCKER], service, probes=probes, parent=tmp_path))
    assert board.unexpected() == []
    assert [cell.verdict for cell in board.cells] == [Verdict.CONTAINED] * len(probes)
    # One container for the probe that looks and, after it, `disk` and `fork`; one for
    # `daemon`, whose run ends its session.
    starts = [posture for event, posture in counting.events if event == "start"]
    assert starts == [PostureId.DOCKER] * 2
    shared = [probe for event, _, probe in counting.runs if event == "begin" and probe != "daemon"]
    assert shared == ["env-secret", "disk", "fork"]


def test_a_cancelled_lab_stops_and_still_cleans_up(tmp_path: Path) -> None:
    cancel = CancelToken()
    cancel.cancel()
    lab_parent = tmp_path / "lab"
    lab_parent.mkdir()
    board = asyncio.run(
        run_lab([PostureId.LOCAL], make_service(tmp_path), cancel=cancel, parent=lab_parent)
    )
    assert board.interrupted
    assert board.cells == ()
    assert list(lab_parent.iterdir()) == []


def test_a_posture_that_cannot_run_gives_not_applicable_cells(tmp_path: Path) -> None:
    def refuse(posture: Posture) -> Executor:
        raise PostureError(f"The {posture.id.value} posture is not implemented yet.")

    service = make_service(tmp_path, refuse)
    board = asyncio.run(run_lab([PostureId.DOCKER], service, probes=QUICK[:2], parent=tmp_path))
    assert [cell.verdict for cell in board.cells] == [Verdict.NOT_APPLICABLE] * 2
    assert all("not implemented yet" in cell.detail for cell in board.cells)
    assert all(cell.unexpected for cell in board.cells)
    assert service.history.get(board.cells[0].run_id).status == "error"


def test_the_json_form_names_every_cell_with_its_run(tmp_path: Path) -> None:
    cell = Cell(
        probe=ProbeId.LOOPBACK,
        posture=PostureId.HARDENED,
        verdict=Verdict.NOT_CONTAINED,
        detail="the lab's listener on 127.0.0.1 received the probe's token",
        note="can still reach the network",
        expected=Verdict.NOT_CONTAINED,
        run_id="run-1",
        status="ok",
    )
    board = Scoreboard(
        postures=(PostureId.HARDENED,),
        probes=(ProbeId.LOOPBACK,),
        cells=(cell,),
        limits=Posture(PostureId.HARDENED).limits,
        as_root=False,
        interrupted=False,
        seconds=1.234,
    )
    document = scoreboard_to_dict(board)
    assert document["cells"] == [
        {
            "probe": "loopback",
            "posture": "hardened",
            "verdict": "not contained",
            "expected": "not contained",
            "unexpected": False,
            "note": "can still reach the network",
            "detail": cell.detail,
            "run_id": "run-1",
            "status": "ok",
        }
    ]
    assert document["probes"][0]["skill"] == "probe-loopback"
    assert 'the posture warns: "can still reach the network"' in cell.explanation()


def test_the_text_scoreboard_marks_surprises_and_keeps_hostile_text_inert() -> None:
    contained = Cell(
        probe=ProbeId.FORK,
        posture=PostureId.LOCAL,
        verdict=Verdict.CONTAINED,
        detail="fork-failed \x1b]0;pwned\x07",
        note="",
        expected=Verdict.NOT_CONTAINED,
        run_id="run-2",
        status="ok",
    )
    board = Scoreboard(
        postures=(PostureId.LOCAL, PostureId.QUICKJS),
        probes=(ProbeId.FORK,),
        cells=(contained,),
        limits=Posture(PostureId.LOCAL).limits,
        as_root=True,
        interrupted=True,
        seconds=2.0,
    )
    text = render_scoreboard(board)
    lines = text.splitlines()
    assert lines[0].split() == ["probe", "local", "quickjs"]
    assert lines[1].split() == ["fork", "contained!", "-"]
    assert "UNEXPECTED (promised: not contained)" in text
    assert "[run run-2]" in text
    assert "\x1b" not in text
    assert "INTERRUPTED" in text
