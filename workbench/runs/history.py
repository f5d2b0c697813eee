"""`RunHistory`: every run, recorded in sqlite3 (`history.sqlite3` in the data folder).

The row is written when a run starts (state `running`, with the pid and start time of the
process running it) and completed when it ends, each in its own short transaction (WAL mode,
a fresh connection per call, so any thread may use it). A run whose process died half-way
(crash, kill -9, power cut) keeps its row and reads back as `interrupted`. Paths are stored as
bytes, so no file name is ever refused. Listings take a `RunFilter` (skill, posture, outcome,
origin, session); `delete` removes rows (retention does the rest, `runs.retention`). A database
made by an older version gets the columns it lacks (`diagnosis`, `rerun_of`, `origin`,
`session`) when it is opened; its runs read back without them (as runs of their own).
"""

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from workbench.errors import HistoryError, UsageError
from workbench.platform.sqlite_wal import set_up_wal
from workbench.runs.diagnosis.model import Diagnosis, diagnosis_from_dict
from workbench.runs.record import RunRecord, RunState, result_to_dict, to_jsonable

if TYPE_CHECKING:  # the executors package is heavy to import; this module only names it
    from workbench.executors.types import RunResult, RunStatus

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    started_at REAL NOT NULL,
    ended_at REAL,
    state TEXT NOT NULL,
    status TEXT,
    cause TEXT NOT NULL DEFAULT '',
    exit_code INTEGER,
    skill_name TEXT NOT NULL,
    skill_dir BLOB NOT NULL,
    posture TEXT NOT NULL,
    argv TEXT NOT NULL,
    workspace BLOB NOT NULL,
    run_dir BLOB NOT NULL,
    owner_pid INTEGER NOT NULL,
    owner_started REAL NOT NULL,
    notes TEXT NOT NULL DEFAULT '[]',
    result TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_start ON runs (started_at);
CREATE INDEX IF NOT EXISTS runs_by_workspace ON runs (workspace, started_at);
"""
_ADDED_COLUMNS = {  # newer than the first schema
    "diagnosis": "TEXT",
    "rerun_of": "TEXT",
    "origin": "TEXT NOT NULL DEFAULT 'run'",
    "session": "TEXT",
}
_COLUMNS = (
    "run_id, started_at, ended_at, state, status, cause, exit_code, skill_name, skill_dir, "
    "posture, argv, workspace, run_dir, owner_pid, owner_started, notes, result, diagnosis, "
    "rerun_of, origin, session"
)
_LIVE_STATES = (RunState.RUNNING, RunState.INTERRUPTED)  # told apart only by the owner's life


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs a listing keeps: each field given must match exactly (`outcome` is a
    `RunStatus` value, `running` or `interrupted`; `origin` a `RunOrigin` value)."""

    skill: str | None = None
    posture: str | None = None
    outcome: str | None = None
    origin: str | None = None
    session: str | None = None

    def sql(self) -> tuple[str, list[Any]]:
        """The WHERE clause (empty or starting with ` WHERE`) and its parameters."""
        clauses, values = [], []
        for column, value in (
            ("skill_name", self.skill),
            ("posture", self.posture),
            ("origin", self.origin),
            ("session", self.session),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                values.append(value)
        if self.outcome in _LIVE_STATES:
            clauses.append("state = ?")
            values.append(RunState.RUNNING.value)
        elif self.outcome is not None:
            clauses.append("state = ? AND status = ?")
            values += [RunState.FINISHED.value, self.outcome]
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), values

    def keeps(self, record: RunRecord) -> bool:
        """What SQL cannot tell: a `running` row whose owner died reads `interrupted`."""
        return self.outcome not in _LIVE_STATES or record.outcome == self.outcome


class RunHistory:
    """The history store at `path` (created on first use); a call waits up to `timeout_s` for
    another process's lock on it."""

    def __init__(self, path: Path, timeout_s: float = 10.0) -> None:
        self.path = path
        self.timeout_s = timeout_s
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with self._transaction() as db:
                set_up_wal(db, path, _SCHEMA)
                _add_columns(db)
        except OSError as error:
            raise HistoryError(f"Cannot create the run history at {path}: {error}") from None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        try:
            with closing(sqlite3.connect(self.path, timeout=self.timeout_s)) as db, db:
                yield db
        except sqlite3.Error as error:
            raise HistoryError(f"The run history at {self.path} failed: {error}") from None

    def start(self, record: RunRecord) -> None:
        """Record a run that is starting now, owned by this process."""
        me = psutil.Process()
        with self._transaction() as db:
            db.execute(
                f"INSERT INTO runs ({_COLUMNS}) VALUES ({', '.join('?' * 21)})",
                (
                    record.run_id,
                    record.started_at,
                    None,
                    RunState.RUNNING.value,
                    None,
                    "",
                    None,
                    record.skill_name,
                    os.fsencode(record.skill_dir),
                    record.posture,
                    json.dumps(record.argv),
                    os.fsencode(record.workspace),
                    os.fsencode(record.run_dir),
                    me.pid,
                    me.create_time(),
                    "[]",
                    None,
                    None,
                    record.rerun_of,
                    record.origin,
                    record.session,
                ),
            )

    def finish(
        self,
        run_id: str,
        result: "RunResult",
        notes: tuple[str, ...] = (),
        diagnosis: Diagnosis | None = None,
    ) -> RunRecord:
        """Complete a run's record with its result and diagnosis; returns the completed record."""
        self._end(run_id, result.status, result.cause, result.exit_code, notes, result, diagnosis)
        return self.get(run_id)

    def abandon(self, run_id: str, status: "RunStatus", cause: str) -> RunRecord:
        """Complete a run that ended without a result (the workbench failed or was cancelled)."""
        self._end(run_id, status, cause, None, (), None, None)
        return self.get(run_id)

    def _end(
        self,
        run_id: str,
        status: "RunStatus",
        cause: str,
        exit_code: int | None,
        notes: tuple[str, ...],
        result: "RunResult | None",
        diagnosis: Diagnosis | None,
    ) -> None:
        document = None if result is None else json.dumps(result_to_dict(result))
        diagnosed = None if diagnosis is None else json.dumps(to_jsonable(diagnosis))
        with self._transaction() as db:
            db.execute(
                "UPDATE runs SET ended_at = ?, state = ?, status = ?, cause = ?, exit_code = ?, "
                "notes = ?, result = ?, diagnosis = ? WHERE run_id = ?",
                (
                    time.time(),
                    RunState.FINISHED.value,
                    status.value,
                    cause,
                    exit_code,
                    json.dumps(notes),
                    document,
                    diagnosed,
                    run_id,
                ),
            )

    def recent(self, limit: int = 200, where: RunFilter = RunFilter()) -> list[RunRecord]:
        """The most recent runs that `where` keeps, newest first (at most `limit`)."""
        clause, values = where.sql()
        query = f"SELECT {_COLUMNS} FROM runs{clause} ORDER BY started_at DESC, run_id DESC"
        records: list[RunRecord] = []
        with self._transaction() as db:
            for row in db.execute(query, values):
                record = _record(row)
                if where.keeps(record):
                    records.append(record)
                    if len(records) >= limit:
                        break
        return records

    def count(self, where: RunFilter = RunFilter()) -> int:
        """How many runs the history holds (of those `where` keeps)."""
        if where.outcome in _LIVE_STATES:
            return len(self.recent(limit=2**31, where=where))
        clause, values = where.sql()
        with self._transaction() as db:
            (total,) = db.execute(f"SELECT COUNT(*) FROM runs{clause}", values).fetchone()
        return int(total)

    def values(self, column: str) -> list[str]:
        """The distinct skills (`skill_name`) or postures (`posture`) of the runs, sorted."""
        if column not in ("skill_name", "posture"):
            raise ValueError(f"not a listed column: {column}")
        with self._transaction() as db:
            rows = db.execute(f"SELECT DISTINCT {column} FROM runs ORDER BY {column}")
            return [row[0] for row in rows]

    def delete(self, run_ids: Iterable[str]) -> None:
        """Remove these runs' rows (their folders are the caller's to remove)."""
        with self._transaction() as db:
            db.executemany("DELETE FROM runs WHERE run_id = ?", [(run_id,) for run_id in run_ids])

    def get(self, run_id: str) -> RunRecord:
        """The run with exactly this id; `HistoryError` if there is none."""
        with self._transaction() as db:
            row = db.execute(f"SELECT {_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise HistoryError(f"No run {run_id!r} in the history.")
        return _record(row)

    def last_run_dir(self, workspace: Path) -> Path | None:
        """The folder of the newest finished run in `workspace`, if there is one."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT run_dir FROM runs WHERE workspace = ? AND state = ? "
                "ORDER BY started_at DESC LIMIT 1",
                (os.fsencode(workspace), RunState.FINISHED.value),
            ).fetchone()
        return None if row is None else Path(os.fsdecode(row[0]))

    def resolve(self, ref: str) -> RunRecord:
        """The run named by its id, a unique prefix of it, or `last` (the newest run).

        A name that matches no run, or several, is the user's mistake: `UsageError`.
        """
        if ref == "last":
            newest = self.recent(limit=1)
            if not newest:
                raise UsageError("The history is empty: no run yet.")
            return newest[0]
        pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self._transaction() as db:
            ids = [
                row[0]
                for row in db.execute(
                    "SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\\' LIMIT 6", (pattern,)
                )
            ]
        if ref in ids:
            return self.get(ref)
        if not ids:
            raise UsageError(f"No run matches {ref!r}; see `workbench history list`.")
        if len(ids) > 1:
            raise UsageError(f"{ref!r} matches several runs ({', '.join(ids[:5])}, ...).")
        return self.get(ids[0])


def _record(row: tuple[Any, ...]) -> RunRecord:
    (
        run_id,
        started_at,
        ended_at,
        state,
        status,
        cause,
        exit_code,
        skill_name,
        skill_dir,
        posture,
        argv,
        workspace,
        run_dir,
        owner_pid,
        owner_started,
        notes,
        result,
        diagnosis,
        rerun_of,
        origin,
        session,
    ) = row
    run_state = RunState(state)
    if run_state is RunState.RUNNING and not _alive(owner_pid, owner_started):
        run_state = RunState.INTERRUPTED
    return RunRecord(
        run_id=run_id,
        skill_name=skill_name,
        skill_dir=Path(os.fsdecode(skill_dir)),
        posture=posture,
        argv=tuple(json.loads(argv)),
        workspace=Path(os.fsdecode(workspace)),
        run_dir=Path(os.fsdecode(run_dir)),
        started_at=started_at,
        state=run_state,
        ended_at=ended_at,
        status=status,
        cause=cause,
        exit_code=exit_code,
        notes=tuple(json.loads(notes)),
        result=None if result is None else json.loads(result),
        diagnosis=None if diagnosis is None else diagnosis_from_dict(json.loads(diagnosis)),
        rerun_of=rerun_of,
        origin=origin,
        session=session,
    )


def _add_columns(db: sqlite3.Connection) -> None:
    """Give a database made by an older version the columns it lacks."""
    have = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    for name, kind in _ADDED_COLUMNS.items():
        if name not in have:
            try:
                db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
            except sqlite3.OperationalError as error:  # another process added it just now
                if "duplicate column" not in str(error):
                    raise


def _alive(pid: int, started: float) -> bool:
    """True when process `pid` exists and is the same process (same start time)."""
    try:
        return abs(psutil.Process(pid).create_time() - started) < 0.01
    except psutil.Error:
        return False
