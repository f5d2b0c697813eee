"""The sqlite3 run history: written at start, completed at the end, readable after a crash."""

import concurrent.futures
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from workbench.errors import UsageError
from workbench.executors.types import RunResult, RunStatus
from workbench.postures.model import PostureId
from workbench.runs.diagnosis import Change, Diagnosis, Evidence, Kind
from workbench.runs.history import RunFilter, RunHistory
from workbench.runs.record import RunOrigin, RunRecord, RunState, record_to_dict
from workbench.workspace.changes import ChangeKind, EntryType, FileChange

MakeRecord = Callable[..., RunRecord]


def test_run_is_recorded_at_start_and_completed_at_the_end(
    history: RunHistory, record_factory: MakeRecord, result: RunResult
) -> None:
    history.start(record_factory("20260101-000000-aaaaaa"))
    started = history.get("20260101-000000-aaaaaa")
    assert (started.state, started.outcome, started.result) == (RunState.RUNNING, "running", None)

    done = history.finish("20260101-000000-aaaaaa", result, notes=("a note",))

    assert done.state is RunState.FINISHED
    assert (done.outcome, done.exit_code, done.notes) == ("failed", 3, ("a note",))
    assert done.result is not None and done.result["stdout"]["text"].startswith("<script>")
    assert [c.path for c in done.changes] == [c.path for c in result.changes]
    assert done.argv == ("sh", "-c", "echo hi")


def test_resolve_accepts_id_unique_prefix_and_last(
    history: RunHistory, record_factory: MakeRecord
) -> None:
    history.start(record_factory("20260101-000000-aaaaaa", 1.0))
    history.start(record_factory("20260101-000000-abbbbb", 2.0))
    history.start(record_factory("20260102-000000-cccccc", 3.0))
    assert history.resolve("last").run_id == "20260102-000000-cccccc"
    assert history.resolve("20260102").run_id == "20260102-000000-cccccc"
    assert history.resolve("20260101-000000-ab").run_id == "20260101-000000-abbbbb"
    with pytest.raises(UsageError, match="matches several runs"):
        history.resolve("20260101-000000-a")
    with pytest.raises(UsageError, match="No run matches"):
        history.resolve("1999")
    with pytest.raises(UsageError, match="No run matches"):
        history.resolve("%")
    assert [r.run_id for r in history.recent()] == [
        "20260102-000000-cccccc",
        "20260101-000000-abbbbb",
        "20260101-000000-aaaaaa",
    ]


def test_abandoned_run_keeps_its_cause(history: RunHistory, record_factory: MakeRecord) -> None:
    history.start(record_factory("r-err"))
    record = history.abandon("r-err", RunStatus.ERROR, "executor could not start")
    assert (record.outcome, record.cause, record.result) == (
        "error",
        "executor could not start",
        None,
    )


_CRASH = """
import os, signal, sys
from pathlib import Path
from workbench.postures.model import PostureId
from workbench.runs.diagnosis import Change, Diagnosis, Evidence, Kind
from workbench.runs.history import RunHistory
from workbench.runs.record import RunRecord
p = Path("/tmp/ws")
RunHistory(Path(sys.argv[1])).start(RunRecord("crashed", "demo", p, "local", ("true",), p, p, 1.0))
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_record_of_a_killed_process_reads_back_as_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    done = subprocess.run([sys.executable, "-c", _CRASH, str(path)], check=False)
    assert done.returncode == -signal.SIGKILL

    record = RunHistory(path).get("crashed")

    assert record.state is RunState.INTERRUPTED
    assert record_to_dict(record)["outcome"] == "interrupted"


def test_odd_paths_survive_and_serialise_as_valid_json(
    history: RunHistory, record_factory: MakeRecord
) -> None:
    odd = Path(os.fsdecode(b"/tmp/bad-\xff-\n-name"))
    argv = ("printf", os.fsdecode(b"\xfe"))
    history.start(replace(record_factory("odd"), workspace=odd, argv=argv))
    loaded = history.get("odd")
    assert loaded.workspace == odd
    assert loaded.argv == argv
    text = json.dumps(record_to_dict(loaded), ensure_ascii=False)
    text.encode("utf-8")  # strict: no lone surrogates
    assert json.loads(text)["workspace"] == "/tmp/bad-\\xff-\n-name"


def test_changed_paths_are_stored_and_read_back_exactly(
    history: RunHistory, record_factory: MakeRecord, result: RunResult
) -> None:
    names = ["a\\b", "new\nline", "tab\tand\x1b[2J", "evil\u202etxt"]
    changes = tuple(FileChange(name, ChangeKind.ADDED, after_type=EntryType.FILE) for name in names)
    history.start(record_factory("r1"))
    history.finish("r1", replace(result, changes=changes))

    loaded = history.get("r1")

    assert [change.path for change in loaded.changes] == names
    document = json.loads(json.dumps(record_to_dict(loaded), ensure_ascii=False))
    assert [change["path"] for change in document["result"]["changes"]] == names


FIRST_SCHEMA = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, started_at REAL NOT NULL, ended_at REAL, state TEXT NOT NULL,
    status TEXT, cause TEXT NOT NULL DEFAULT '', exit_code INTEGER, skill_name TEXT NOT NULL,
    skill_dir BLOB NOT NULL, posture TEXT NOT NULL, argv TEXT NOT NULL, workspace BLOB NOT NULL,
    run_dir BLOB NOT NULL, owner_pid INTEGER NOT NULL, owner_started REAL NOT NULL,
    notes TEXT NOT NULL DEFAULT '[]', result TEXT
);
INSERT INTO runs VALUES ('20250101-000000-aaaaaa', 1.0, 2.0, 'finished', 'failed', 'boom', 1,
    'old', X'2f736b696c6c', 'local', '["true"]', X'2f7773', X'2f7275', 1, 1.0, '[]', NULL);
"""


def test_a_database_of_an_older_version_opens_and_gains_the_new_columns(
    tmp_path: Path, record_factory: MakeRecord, result: RunResult
) -> None:
    path = tmp_path / "history.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(FIRST_SCHEMA)
    history = RunHistory(path)

    old = history.get("20250101-000000-aaaaaa")
    assert (old.outcome, old.cause, old.diagnosis, old.rerun_of) == ("failed", "boom", None, None)
    assert (old.origin, old.session) == (RunOrigin.RUN, None)  # a run of its own
    assert history.count(RunFilter(origin=RunOrigin.RUN)) == 1
    history.start(replace(record_factory("20260101-000000-bbbbbb"), rerun_of=old.run_id))
    diagnosis = Diagnosis(
        Kind.MISSING_TOOL,
        "The command runs pdftotext, which the sandbox image does not have.",
        "the sandbox image",
        Evidence("sh: 1: pdftotext: not found", "stderr", 2),
        "Add it.",
        Change(posture=PostureId.HARDENED, limits=(("pids", 512),)),
    )
    done = history.finish("20260101-000000-bbbbbb", result, diagnosis=diagnosis)
    assert done.diagnosis == diagnosis and done.rerun_of == old.run_id
    assert RunHistory(path).get(done.run_id).diagnosis == diagnosis  # opened again: no change
    document = json.loads(json.dumps(record_to_dict(done)))
    assert document["diagnosis"]["evidence"] == {
        "text": "sh: 1: pdftotext: not found",
        "stream": "stderr",
        "line": 2,
    }
    assert document["diagnosis"]["change"]["posture"] == "hardened"


def test_the_newest_run_of_a_workspace_is_found_without_reading_every_run(
    tmp_path: Path, record_factory: MakeRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "history.sqlite3"
    with sqlite3.connect(path) as db:  # a database of the first version, without the index
        db.executescript(FIRST_SCHEMA)
        db.executemany(
            "INSERT INTO runs VALUES (?, ?, 2.0, 'finished', 'ok', '', 0, 'old', X'2f', 'local', "
            "'[]', ?, X'2f7275', 1, 1.0, '[]', NULL)",
            [(f"other-{n}", float(n), f"/ws/{n}".encode()) for n in range(5000)],
        )
    history = RunHistory(path)
    history.start(replace(record_factory("20260101-000000-aaaaaa"), workspace=Path("/mine")))
    history.abandon("20260101-000000-aaaaaa", RunStatus.ERROR, "boom")
    steps = []
    connect = sqlite3.connect

    def counting(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db: sqlite3.Connection = connect(*args, **kwargs)
        db.set_progress_handler(lambda: steps.append(1), 100)  # a call every 100 steps
        return db

    monkeypatch.setattr(sqlite3, "connect", counting)
    assert history.last_run_dir(Path("/mine")) == Path("/tmp/runs/20260101-000000-aaaaaa")
    assert history.last_run_dir(Path("/elsewhere")) is None
    assert len(steps) < 10  # reading the 5,001 runs takes far more than 1,000 steps


def test_threads_record_runs_side_by_side(
    history: RunHistory, record_factory: MakeRecord, result: RunResult
) -> None:
    def record_runs(thread: int) -> None:
        for n in range(20):
            run_id = f"20260101-0000{thread:02d}-{n:06d}"
            history.start(record_factory(run_id))
            history.finish(run_id, result)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(record_runs, range(8)))

    assert history.count(RunFilter(outcome="failed")) == 160


def test_filters_keep_a_skill_posture_outcome_origin_or_session(
    history: RunHistory, record_factory: MakeRecord, result: RunResult
) -> None:
    plain = record_factory("20260101-000000-aaaaaa", 1.0)
    compared = replace(
        record_factory("20260101-000000-bbbbbb", 2.0),
        posture="hardened",
        origin=RunOrigin.COMPARE,
        session="s1",
    )
    probe = replace(
        record_factory("20260101-000000-cccccc", 3.0),
        skill_name="probe-read",
        origin=RunOrigin.LAB,
        session="s2",
    )
    for record in (plain, compared, probe):
        history.start(record)
    history.finish(plain.run_id, result)  # failed
    history.finish(compared.run_id, replace(result, status=RunStatus.LIMIT_EXCEEDED))

    def ids(where: RunFilter) -> list[str]:
        return [r.run_id[-1] for r in history.recent(where=where)]

    assert ids(RunFilter()) == ["c", "b", "a"]
    assert ids(RunFilter(skill="probe-read")) == ["c"]
    assert ids(RunFilter(posture="hardened")) == ["b"]
    assert ids(RunFilter(outcome="limit_exceeded")) == ["b"]
    assert ids(RunFilter(outcome="running")) == ["c"]  # this process runs it still
    assert ids(RunFilter(outcome="interrupted")) == []
    assert ids(RunFilter(origin=RunOrigin.RUN)) == ["a"]
    assert ids(RunFilter(origin=RunOrigin.LAB, session="s2")) == ["c"]
    assert history.count(RunFilter(origin=RunOrigin.COMPARE)) == 1
    assert history.count(RunFilter(outcome="running")) == 1
    assert history.get(probe.run_id).session == "s2"
    assert history.values("skill_name") == ["demo", "probe-read"]
    history.delete([plain.run_id, probe.run_id])
    assert ids(RunFilter()) == ["b"]
