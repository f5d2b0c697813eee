"""`workbench history list|show|export|restore|prune`: the recorded runs on the command line.

`list` keeps the runs of one skill, posture, outcome, origin (`run`, `compare`, `lab`) or
session when asked, and shows the runs of one comparison or probe-lab run under a line naming
their session. `prune` keeps the last N runs, or the runs of the last N days, and removes the
rest with what they kept (`runs.retention`). RUN is a run id, a unique prefix of one, or
`last`. `show` prints the run's report as plain
text (or its record as JSON); `export` writes a report as HTML, JSON or Markdown to a file or
stdout; `restore` puts the run's workspace back as it was before the run, and refuses (exit 1)
when the workspace changed after the run ended, unless `--force`: restoring would lose those
later changes. A restore that could not put everything back exits 1 and says what is left.
"""

import argparse
import shlex
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.cli.output import emit_json, warn
from workbench.errors import UsageError, WorkspaceError
from workbench.executors.types import RunStatus
from workbench.runs.record import (
    RunOrigin,
    RunRecord,
    RunState,
    by_session,
    plain_text,
    record_to_dict,
)

if TYPE_CHECKING:  # the rest is imported by the handlers that use it: every command loads us
    from workbench.runs.history import RunHistory
    from workbench.runs.layout import DataLayout

EXPORT_FORMATS = ("html", "json", "md")
# A finished run's status, or the state of one that is not.
OUTCOMES = (*(s.value for s in RunStatus), RunState.RUNNING.value, RunState.INTERRUPTED.value)


def register(commands: "argparse._SubParsersAction[Any]") -> None:
    """Add the `history` subcommand group."""
    parser = commands.add_parser("history", help="list, show, export and restore past runs")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    listing = actions.add_parser("list", help="the most recent runs, newest first")
    listing.add_argument("--limit", type=int, default=50, help="how many runs (default 50)")
    listing.add_argument("--skill", metavar="NAME", help="only the runs of this skill")
    listing.add_argument("--posture", metavar="ID", help="only the runs under this posture")
    listing.add_argument("--status", choices=OUTCOMES, help="only the runs with this outcome")
    listing.add_argument("--origin", choices=[o.value for o in RunOrigin], help="what ran them")
    listing.add_argument("--session", metavar="ID", help="only one comparison's or lab run's")
    listing.set_defaults(handler=_list)
    prune = actions.add_parser("prune", help="remove old runs and what they kept")
    prune.add_argument("--keep-runs", type=int, metavar="N", help="keep the last N runs")
    prune.add_argument("--keep-days", type=float, metavar="N", help="keep N days of runs")
    prune.set_defaults(handler=_prune)
    show = actions.add_parser("show", help="one run: outcome, posture, warnings, changes")
    show.set_defaults(handler=_show)
    export = actions.add_parser("export", help="write a run's report (html, json or md)")
    export.add_argument("--format", required=True, choices=EXPORT_FORMATS)
    export.add_argument("--output", type=Path, metavar="FILE", help="default: stdout")
    export.set_defaults(handler=_export)
    restore = actions.add_parser("restore", help="put the workspace back as before the run")
    restore.add_argument("--force", action="store_true", help="even if it changed since")
    restore.set_defaults(handler=_restore)
    for action in (show, export, restore):
        action.add_argument("run", metavar="RUN", help="run id, unique prefix, or 'last'")
    for action in (listing, show, restore, prune):
        action.add_argument("--json", action="store_true", help="print one JSON document")


def _open() -> "tuple[DataLayout, RunHistory]":
    from workbench.runs.services import RunServices

    services = RunServices.open()
    return services.layout, services.history


def _list(args: argparse.Namespace) -> int:
    from workbench.runs.history import RunFilter

    _, history = _open()
    where = RunFilter(args.skill, args.posture, args.status, args.origin, args.session)
    records = history.recent(limit=max(1, args.limit), where=where)
    if args.json:
        emit_json("history", {"runs": [_row(record) for record in records]})
        return 0
    if not records:
        print("No runs yet." if where == RunFilter() else "No run matches.")
        return 0
    lines: list[tuple[str, ...] | str] = [_HEADERS]
    for session, runs in by_session(records):
        if session is not None:
            lines.append(_session_line(runs))
        lines += [_cells(record, indent="  " if session else "") for record in runs]
    widths = [max(len(line[i]) for line in lines if isinstance(line, tuple)) for i in range(6)]
    for line in lines:
        if isinstance(line, str):
            print(line)
        else:
            cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
            print("  ".join([*cells, line[-1]]).rstrip())
    return 0


_HEADERS = ("RUN", "STARTED", "OUTCOME", "POSTURE", "SKILL", "CHANGES", "COMMAND")


def _session_line(runs: list[RunRecord]) -> str:
    """`compare 20261126-070001-ab12cd: workspace-report, 3 runs listed`."""
    skills = ", ".join(dict.fromkeys(plain_text(r.skill_name) for r in runs))
    count = f"{len(runs)} run{'s' * (len(runs) != 1)} listed"
    return f"{runs[0].origin} {runs[0].session}: {_one_line(skills)}, {count}"


def _cells(record: RunRecord, indent: str) -> tuple[str, ...]:
    started = datetime.fromtimestamp(record.started_at).strftime("%Y-%m-%d %H:%M:%S")
    return (
        indent + record.run_id,
        started,
        record.outcome,
        record.posture,
        _one_line(plain_text(record.skill_name), 30),
        str(len(record.changes)),
        _one_line(shlex.join(record.argv)),
    )


def _prune(args: argparse.Namespace) -> int:
    from workbench.runs.retention import Retention, prune

    if args.keep_runs is None and args.keep_days is None:
        raise UsageError("workbench history prune: give --keep-runs N, --keep-days N or both")
    layout, history = _open()
    report = prune(layout, history, Retention(args.keep_runs, args.keep_days))
    if args.json:
        emit_json(
            "history-prune",
            {
                "removed": list(report.removed),
                "freed_bytes": report.freed_bytes,
                "sweep_skipped": report.sweep_skipped or None,
            },
        )
    else:
        print(report.sentence())
    return 0


def _row(record: RunRecord) -> dict[str, Any]:
    """A run without its result: what a listing needs."""
    row = record_to_dict(record)
    del row["result"]
    row["changes"] = len(record.changes)
    return row


def _one_line(text: str, width: int = 60) -> str:
    text = plain_text(text).replace("\n", "\\n").replace("\t", "\\t")
    return text if len(text) <= width else text[: width - 3] + "..."


def _show(args: argparse.Namespace) -> int:
    from workbench.runs.reports import ExportFormat, export_record

    layout, history = _open()
    record = history.resolve(args.run)
    if args.json:
        emit_json("run", record_to_dict(record))
    else:
        sys.stdout.write(export_record(record, ExportFormat.TEXT, layout.blobs))
    return 0


def _export(args: argparse.Namespace) -> int:
    from workbench.runs.reports import ExportFormat, export_record

    layout, history = _open()
    record = history.resolve(args.run)
    report = export_record(record, ExportFormat(args.format), layout.blobs)
    if args.output is None:
        sys.stdout.write(report)
        return 0
    try:
        args.output.write_text(report, encoding="utf-8")
    except OSError as error:
        raise WorkspaceError(f"Cannot write {args.output}: {error.strerror}.") from None
    warn(f"wrote {args.output}")
    return 0


def _restore(args: argparse.Namespace) -> int:
    from workbench.runs.undo import restore_run

    layout, history = _open()
    record = history.resolve(args.run)
    try:
        report = restore_run(layout, record, force=args.force)
    except WorkspaceError as error:
        if args.json:
            emit_json("restore", {"run_id": record.run_id, "restored": False, "error": str(error)})
        warn(f"error: {error}")
        return 1
    if args.json:
        emit_json(
            "restore",
            {
                "run_id": record.run_id,
                "workspace": str(record.workspace),
                "restored": True,
                "complete": report.complete,
                "undone": report.undone,
                "left": report.left,
                "notes": list(report.notes),
            },
        )
    for note in report.notes:
        warn(f"note: {plain_text(note)}")
    done = f"{record.workspace} as before run {record.run_id}: {report.undone} path(s) put back"
    if report.complete:
        warn(f"restored {done}")
    else:
        warn(f"error: PARTLY restored {done}, {report.left} could not be (see the notes above)")
    return 0 if report.complete else 1
