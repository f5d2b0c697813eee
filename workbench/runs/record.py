"""Run records: the history's view of one run, and the one JSON form of a result.

`result_to_dict` is the only serialisation of a `RunResult`: the history stores it, exports
and `--json` print it (inside `record_to_dict`). Text that is not valid Unicode (file names with
stray bytes) is written with backslash escapes, so every document is valid UTF-8 JSON. A changed
path is kept as it is (JSON escapes it by itself); only what shows it to people uses
`workspace.changes.path_text`.
"""

import dataclasses
import re
from enum import Enum, StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.ansi import reveal_bidi
from workbench.runs.diagnosis.model import Diagnosis
from workbench.workspace.changes import ChangeKind, EntryType, FileChange

if TYPE_CHECKING:  # the executors package is heavy to import; these modules only name it
    from workbench.executors.types import RunResult


class RunOrigin(StrEnum):
    """What started a run: a run of its own, a comparison, or the probe lab."""

    RUN = "run"
    COMPARE = "compare"
    LAB = "lab"


class RunState(StrEnum):
    """Where a recorded run is in its life."""

    RUNNING = "running"  # started, and the process that runs it is alive
    FINISHED = "finished"  # ended; `status` says how
    INTERRUPTED = "interrupted"  # started, but the process that ran it is gone (crash, kill)


@dataclasses.dataclass(frozen=True, slots=True)
class RunRecord:
    """One run as the history keeps it.

    `status` is a `RunStatus` value once finished; `result` is `result_to_dict` of the result
    (None when the workbench failed before the command could end). `notes` are the workspace
    notes (unreadable folders, files too big to keep, ...). `diagnosis` says why a failed run
    failed; `rerun_of` names the run this one re-ran with a change. `origin` is a `RunOrigin`
    value; the runs of one comparison or one probe-lab run share a `session` id.
    """

    run_id: str
    skill_name: str
    skill_dir: Path
    posture: str
    argv: tuple[str, ...]
    workspace: Path
    run_dir: Path
    started_at: float
    state: RunState = RunState.RUNNING
    ended_at: float | None = None
    status: str | None = None
    cause: str = ""
    exit_code: int | None = None
    notes: tuple[str, ...] = ()
    result: dict[str, Any] | None = None
    diagnosis: Diagnosis | None = None
    rerun_of: str | None = None
    origin: str = RunOrigin.RUN
    session: str | None = None

    @property
    def outcome(self) -> str:
        """The status once finished, else the state (`running` or `interrupted`)."""
        return self.status if self.state is RunState.FINISHED and self.status else self.state

    @property
    def changes(self) -> tuple[FileChange, ...]:
        """The workspace changes, rebuilt from the stored result."""
        if self.result is None:
            return ()
        return tuple(change_from_dict(item) for item in self.result.get("changes", []))


def by_session(records: list[RunRecord]) -> list[tuple[str | None, list[RunRecord]]]:
    """`records` in order, grouped: each session's runs together, where its first run in
    `records` is; a run of no session alone (its session None)."""
    groups: list[tuple[str | None, list[RunRecord]]] = []
    sessions: dict[str, list[RunRecord]] = {}
    for record in records:
        if record.session is None:
            groups.append((None, [record]))
        elif record.session in sessions:
            sessions[record.session].append(record)
        else:
            sessions[record.session] = [record]
            groups.append((record.session, sessions[record.session]))
    return groups


def to_jsonable(value: Any) -> Any:
    """Dataclasses, enums, paths, tuples and text made into plain, valid JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return to_jsonable(value.value)
    if isinstance(value, Path):
        return json_text(str(value))
    if isinstance(value, str):
        return json_text(value)
    if isinstance(value, list | tuple):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if value is None or isinstance(value, bool | int | float):
        return value
    if callable(value):
        return None  # e.g. a live callback: not data
    return json_text(repr(value))


def json_text(text: str) -> str:
    """`text`, with any undecodable bytes (surrogate escapes) shown as `\\xNN`."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain_text(text: str) -> str:
    """Text safe for a terminal: control characters shown as `\\xNN` (newline, tab kept),
    bidi controls as markers (`⟨U+202E⟩`)."""
    return reveal_bidi(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text))


def network_line(attempt: dict[str, Any]) -> str:
    """One attempt of a run's network log (its JSON form) in words, e.g. "allowed: CONNECT
    pypi.org:443 at 0.52 s, 1,024 bytes up, 5,120 down"."""
    line = (
        f"{attempt['verdict']}: {attempt['method']} {attempt['host']}:{attempt['port']} "
        f"at {attempt['t']:.2f} s"
    )
    if attempt["verdict"] == "allowed":
        line += f", {attempt['bytes_sent']:,} bytes up, {attempt['bytes_received']:,} down"
    return f"{line} ({attempt['detail']})" if attempt.get("detail") else line


def result_to_dict(result: "RunResult") -> dict[str, Any]:
    """The JSON form of a `RunResult` (see the module doc)."""
    document: dict[str, Any] = to_jsonable(result)
    return document


def record_to_dict(record: RunRecord) -> dict[str, Any]:
    """The JSON form of a history record, its result included."""
    document: dict[str, Any] = to_jsonable(record)
    document["outcome"] = record.outcome
    return document


def change_from_dict(item: dict[str, Any]) -> FileChange:
    """A `FileChange` back from its JSON form."""
    fields = {f.name for f in dataclasses.fields(FileChange)}
    values = {key: value for key, value in item.items() if key in fields}
    values["kind"] = ChangeKind(values["kind"])
    for side in ("before_type", "after_type"):
        if values.get(side) is not None:
            values[side] = EntryType(values[side])
    return FileChange(**values)
