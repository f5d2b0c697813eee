"""`workbench compare`: one command of a skill under several postures, side by side.

The postures run one after the other (`workbench.runs.compare`), each in its own fresh
workspace: a copy of `--workspace DIR` when given (DIR itself is never changed), else an
empty folder. Without `--postures` the command is compared under every posture that can run it
here, never `local`, which only the user chooses. The limits, network and command options are
`workbench run`'s. Each posture's warnings and the progress go to stderr; then a table (or, with
`--json`, exactly one document) goes to stdout. Exit code: 0 when every posture ran the command,
whatever each outcome (comparing outcomes is the point); 125 when the workbench could not run
it under at least one posture; 130 when Ctrl-C stopped it (the rest are skipped). Where the
command ended ok under one posture and failed under another, the failing row's `difference`
names the control that did it (its diagnosis's); the JSON has each run's whole diagnosis.
"""

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.cli.output import emit_json, warn
from workbench.cli.run import (
    EXIT_CANCELLED,
    EXIT_NOT_RUN,
    add_run_options,
    cancel_on_signals,
    command_argv,
    posture_from_args,
    skill_environment,
    warn_posture,
)
from workbench.errors import PostureError, UsageError
from workbench.postures.model import PostureId, parse_posture_id
from workbench.runs.record import plain_text, to_jsonable
from workbench.skills import default_roots, find_skill

if TYPE_CHECKING:  # imported when a comparison runs: they are heavy, every command loads us
    from workbench.runs.compare import CompareRequest, CompareRow
    from workbench.runs.record import RunRecord
    from workbench.runs.service import RunService

_HEADERS = (
    "posture", "outcome", "wall", "memory", "procs", "changes", "run", "difference", "cause",
)  # fmt: skip


def register(commands: "argparse._SubParsersAction[Any]") -> None:
    """Add the `compare` subcommand."""
    parser = commands.add_parser(
        "compare",
        help="run one command under several postures and compare",
        description="Run COMMAND under each posture, each in a fresh copy of the workspace, "
        "and compare outcomes, causes, peaks and changes.",
    )
    parser.add_argument("--skill", required=True, help="a skill folder, or a skill's name")
    parser.add_argument(
        "--postures", metavar="A,B,...", help="default: every posture that can run it here"
    )
    parser.add_argument(
        "--workspace", type=Path, help="folder each run starts from a copy of (default: empty)"
    )
    add_run_options(parser)
    parser.set_defaults(handler=_compare)


def _compare(args: argparse.Namespace) -> int:
    from workbench.platform import loops
    from workbench.runs.compare import CompareRequest, compare_row
    from workbench.runs.services import RunServices

    argv = command_argv(args, "compare")
    posture_ids = _posture_ids(args.postures, argv)
    postures = [posture_from_args(posture_id, args, "compare") for posture_id in posture_ids]
    if args.workspace is not None and not args.workspace.is_dir():
        raise UsageError(f"workbench compare: --workspace {args.workspace} is not a folder")
    skill = find_skill(args.skill, default_roots())
    if not skill.usable:
        warn(f"warning: skill {skill.name} has errors (`workbench skills show`); running anyway")
    for posture in postures:
        warn_posture(posture)
    source = None if args.workspace is None else args.workspace.absolute()
    runs = tuple((posture, argv) for posture in postures)
    services = RunServices.open()
    environments = {
        posture.id: found
        for posture in postures
        if (found := skill_environment(skill, posture, services.layout, args.no_env)) is not None
    }
    request = CompareRequest(skill.name, skill.path, runs, source, environments)
    records = loops.run(_compare_with_signals(services.runs, request))
    rows = [compare_row(record, records) for record in records]
    if args.json:
        emit_json(
            "compare",
            {
                "skill": skill.name,
                "argv": list(argv),
                "postures": [p.value for p in posture_ids],
                "runs": [_row_json(row, record) for row, record in zip(rows, records, strict=True)],
            },
        )
    else:
        _print_table(rows)
    if len(records) < len(runs) or any(row.outcome == "cancelled" for row in rows):
        skipped = [posture.id.value for posture, _ in runs[len(records) :]]
        warn(f"stopped; not run under: {', '.join(skipped)}" if skipped else "stopped")
        return EXIT_CANCELLED
    return EXIT_NOT_RUN if any(row.outcome == "error" for row in rows) else 0


def _posture_ids(text: str | None, argv: tuple[str, ...]) -> list[PostureId]:
    if text is not None:
        try:
            chosen = [parse_posture_id(part.strip()) for part in text.split(",") if part.strip()]
        except PostureError as error:
            raise UsageError(str(error)) from None
        if not chosen:
            raise UsageError("workbench compare: --postures names no posture")
        return list(dict.fromkeys(chosen))
    from workbench.cli.postures import runnable_here
    from workbench.runs.compare import default_postures

    chosen = default_postures(runnable_here(), argv)
    if not chosen:
        raise UsageError(
            "workbench compare: no posture that can run this command is available here; "
            "name some with --postures (local only if you accept running without a sandbox)"
        )
    warn(f"comparing under: {', '.join(p.value for p in chosen)}")
    return chosen


async def _compare_with_signals(
    service: "RunService", request: "CompareRequest"
) -> "list[RunRecord]":
    from workbench.runs.compare import run_compare

    def progress(record: "RunRecord") -> None:
        said = f"{record.posture}: {record.outcome} ({plain_text(record.cause)})"
        warn(f"error: {said}" if record.outcome == "error" else said)

    with cancel_on_signals() as cancel:
        return await run_compare(service, request, cancel, progress)


def _row_json(row: "CompareRow", record: "RunRecord") -> dict[str, Any]:
    document: dict[str, Any] = to_jsonable(
        {
            "posture": row.posture,
            "run_id": row.run_id,
            "outcome": row.outcome,
            "cause": row.cause,
            "exit_code": record.exit_code,
            "wall_seconds": row.wall_seconds,
            "peak_rss_bytes": row.peak_rss_bytes,
            "peak_processes": row.peak_processes,
            "changes": row.changes,
            "workspace": record.workspace,
            "difference": row.difference,
            "diagnosis": record.diagnosis,
        }
    )
    return document


def _print_table(rows: "list[CompareRow]") -> None:
    lines = [_HEADERS] + [
        (
            row.posture,
            row.outcome,
            "-" if not row.wall_seconds else f"{row.wall_seconds:.2f}s",
            "-" if not row.peak_rss_bytes else f"{row.peak_rss_bytes / 2**20:.1f}MiB",
            "-" if not row.peak_processes else str(row.peak_processes),
            str(row.changes),
            row.run_id,
            row.difference or "-",
            " ".join(plain_text(row.cause).split()),
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(_HEADERS) - 1)]
    for line in lines:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        print("  ".join([*cells, line[-1]]).rstrip())
    if rows:
        print(f"\ndetails: workbench history show RUN (e.g. {rows[0].run_id})")
