"""Compare: one command of a skill under several postures, one run after the other.

Each run goes through `RunService.run_once` in its own fresh workspace: a copy of the source
workspace when one is given (so every posture starts from the same files), else an empty
folder. A posture the workbench could not run (its executor failed to start, the command does
not suit it) does not stop the others: its entry is the history's record of that failed run,
with status `error` and the cause. Stop (the cancel token) ends the run in progress and skips
the rest. `CompareRow` is the one summary of an entry that the CLI and the GUI both show; its
`difference` says, for a run that failed where another ended ok, which control made the
difference (the one its diagnosis names), or that the skill itself failed there.
"""

import asyncio
import shlex
import shutil
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from workbench.errors import UsageError, WorkbenchError, WorkspaceError
from workbench.executors.types import (
    CancelToken,
    OutputChunk,
    RunStatus,
    SkillEnvironment,
    new_run_id,
)
from workbench.postures.model import STRENGTH_ORDER, Posture, PostureId
from workbench.runs.record import RunOrigin, RunRecord
from workbench.runs.service import RunPlan, RunService


@dataclass(frozen=True, slots=True)
class CompareRequest:
    """What to compare: a skill, the postures with the command each runs, the source files."""

    skill_name: str
    skill_dir: Path
    runs: tuple[tuple[Posture, tuple[str, ...]], ...]
    """Each posture, in order, with the argv it runs."""
    source: Path | None = None
    """The workspace each run starts from a copy of; None: each starts empty."""
    environments: dict[PostureId, SkillEnvironment] = field(default_factory=dict)
    """The skill's environment under each posture that has one built."""


@dataclass(frozen=True, slots=True)
class CompareRow:
    """One posture's run in a comparison, as a table shows it."""

    posture: str
    run_id: str
    outcome: str
    cause: str
    wall_seconds: float | None
    peak_rss_bytes: int | None
    peak_processes: int | None
    changes: int
    difference: str = ""


SKILL_ITSELF = "no control: the skill itself failed here"


def difference(record: RunRecord, records: Sequence[RunRecord]) -> str:
    """What made `record` fail where another of `records` ended ok: the control its diagnosis
    names, or `SKILL_ITSELF`; "" for a run that ended ok, or when none of them did."""
    if record.outcome == RunStatus.OK or all(r.outcome != RunStatus.OK for r in records):
        return ""
    diagnosis = record.diagnosis
    if diagnosis is None:
        return ""
    return diagnosis.control or SKILL_ITSELF


def compare_row(record: RunRecord, records: Sequence[RunRecord] = ()) -> CompareRow:
    """The summary of one run among `records`, the comparison's runs so far (the figures are
    None when the run produced no result)."""
    result = record.result or {}
    return CompareRow(
        posture=record.posture,
        run_id=record.run_id,
        outcome=record.outcome,
        cause=record.cause,
        wall_seconds=result.get("wall_seconds"),
        peak_rss_bytes=result.get("peak_rss_bytes"),
        peak_processes=result.get("peak_processes"),
        changes=len(record.changes),
        difference=difference(record, records),
    )


def default_postures(available: Collection[PostureId], argv: Sequence[str]) -> list[PostureId]:
    """What to compare `argv` under when the user names no postures: the available ones that
    can run it, never `local` (only ever the user's choice): for a `.js` script QuickJS, for
    anything else the sandboxing shell postures, strongest first."""
    if argv and argv[0].endswith(".js"):
        return [PostureId.QUICKJS] if PostureId.QUICKJS in available else []
    return [posture_id for posture_id in STRENGTH_ORDER if posture_id in available]


def shell_command(posture_id: PostureId, text: str) -> tuple[str, ...]:
    """The argv for a command typed as one line: `sh -c TEXT`, or for QuickJS the script and
    its arguments split like a shell would (`UsageError` when the quoting is broken)."""
    if posture_id is not PostureId.QUICKJS:
        return ("sh", "-c", text)
    try:
        return tuple(shlex.split(text))
    except ValueError as error:
        raise UsageError(
            f"Cannot split the command into a script and arguments: {error}."
        ) from None


async def run_compare(
    service: RunService,
    request: CompareRequest,
    cancel: CancelToken,
    on_record: Callable[[RunRecord], None] | None = None,
) -> list[RunRecord]:
    """Run `request` (see the module doc); `on_record` gets each posture's record as it ends.

    Returns the records in the order of `request.runs`, without the postures skipped by Stop.
    """
    records: list[RunRecord] = []
    session = new_run_id()
    for posture, argv in request.runs:
        if cancel.cancelled:
            break
        run_id = new_run_id()
        workspace = service.layout.fresh_workspace(run_id)
        if request.source is not None:
            await asyncio.to_thread(_copy_workspace, request.source, workspace, service)
        environment = request.environments.get(posture.id)
        plan = RunPlan(
            request.skill_name,
            request.skill_dir,
            posture,
            argv,
            workspace,
            run_id=run_id,
            environment=environment,
            origin=RunOrigin.COMPARE,
            session=session,
        )
        try:
            record = (await service.run_once(plan, _ignore_output, cancel)).record
        except WorkbenchError:
            record = await asyncio.to_thread(service.history.get, run_id)
        records.append(record)
        if on_record is not None:
            on_record(record)
    return records


def _ignore_output(chunk: OutputChunk) -> None:
    del chunk  # the output is kept in each run's record and logs


def _copy_workspace(source: Path, target: Path, service: RunService) -> None:
    """Copy `source` to the new folder `target`, links as links, leaving out the data folder."""
    data_root = service.layout.root.resolve()

    def skip_data_folder(folder: str, names: list[str]) -> set[str]:
        return {name for name in names if (Path(folder) / name).resolve() == data_root}

    try:
        shutil.copytree(source, target, symlinks=True, ignore=skip_data_folder)
    except OSError as error:
        raise WorkspaceError(
            f"Cannot copy the workspace {source} for the comparison: {error}"
        ) from None
