"""`workbench probe`: the sandbox probe lab's scoreboard, every probe under every posture.

The handler picks the postures (by default every one that is available on this machine and
implemented in this build; named ones that cannot run are listed as skipped, with why), runs
`run_lab` with Ctrl-C wired to stop it (the lab still removes what it planted), and prints
the scoreboard: a table of verdicts, then one line per cell with the control or the reason
and the run id (`workbench history show RUN`). With `--json`, stdout holds one
`skill-workbench/probe/1` document. Exit code: 0 when every verdict is the one the posture's
description promises, 1 when one is not (an unexpected leak or containment), 130 when
interrupted. `--preview` measures the capability preview instead (`probes.agreement`): the
lab's cells and the bundled examples' runs against what the preview predicted for each, one
line per (skill, posture) and the agreement rate (`skill-workbench/preview-agreement/1` with
`--json`); it exits 0 unless interrupted.
"""

import argparse
from typing import Any

from workbench.cli.output import emit_json, warn
from workbench.cli.postures import probe_all
from workbench.cli.run import cancel_on_signals
from workbench.errors import PostureError, UsageError
from workbench.executors import implemented_postures
from workbench.platform import loops
from workbench.postures.model import PostureId, parse_posture_id
from workbench.probes.agreement import Agreement, measure
from workbench.probes.lab import Cell, Scoreboard, run_lab, scoreboard_to_dict
from workbench.probes.verdict import Verdict
from workbench.runs.record import plain_text, to_jsonable
from workbench.runs.service import RunService
from workbench.runs.services import RunServices

EXIT_UNEXPECTED = 1
EXIT_INTERRUPTED = 130
_MARK = {
    Verdict.CONTAINED: "contained",
    Verdict.NOT_CONTAINED: "NOT CONTAINED",
    Verdict.NOT_APPLICABLE: "n/a",
}


def register(commands: "argparse._SubParsersAction[Any]") -> None:
    """Add the `probe` subcommand."""
    parser = commands.add_parser(
        "probe",
        help="run the sandbox probe lab: what does each posture really stop?",
        description="Run small, bounded experiments (read a planted secret, write outside the "
        "workspace, reach the host's loopback, fork, fill the disk, ...) under each posture "
        "and print what each one contained.",
    )
    parser.add_argument(
        "--postures", metavar="a,b,...", help="postures to probe (default: every available one)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "--preview",
        action="store_true",
        help="measure the capability preview against these runs and the bundled examples'",
    )
    parser.set_defaults(handler=_probe)


def choose_postures(text: str | None) -> tuple[list[PostureId], dict[PostureId, str]]:
    """The postures to run (`text` names them, else every posture) and, for each one left
    out because it is unavailable here or not implemented in this build, the reason."""
    availability = probe_all()
    implemented = implemented_postures()
    if text:
        try:
            asked = list(dict.fromkeys(parse_posture_id(p.strip()) for p in text.split(",")))
        except PostureError as error:
            raise UsageError(str(error)) from None
    else:
        asked = list(PostureId)
    chosen, skipped = [], {}
    for posture_id in asked:
        if not availability[posture_id].available:
            skipped[posture_id] = availability[posture_id].reason
        elif posture_id not in implemented:
            skipped[posture_id] = "not implemented in this build yet"
        else:
            chosen.append(posture_id)
    return chosen, skipped


def _probe(args: argparse.Namespace) -> int:
    chosen, skipped = choose_postures(args.postures)
    for posture_id, reason in skipped.items():
        warn(f"skipped {posture_id}: {reason}")
    if not chosen:
        raise UsageError("workbench probe: none of the chosen postures can run here")
    service = RunServices.open().runs
    warn(f"probing {', '.join(chosen)}; every probe is a recorded run (workbench history)")
    if args.preview:
        return _preview_agreement(chosen, service, args.json)
    board = loops.run(_run_with_signals(chosen, service))
    if args.json:
        document = scoreboard_to_dict(board)
        document["skipped"] = [{"posture": p.value, "reason": r} for p, r in skipped.items()]
        emit_json("probe", document)
    else:
        print(render_scoreboard(board))
    if board.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_UNEXPECTED if board.unexpected() else 0


def _preview_agreement(chosen: list[PostureId], service: RunService, as_json: bool) -> int:
    agreement, stopped = loops.run(_measure_with_signals(chosen, service))
    if as_json:
        pairs = [to_jsonable(pair) | {"agrees": pair.agrees} for pair in agreement.pairs]
        emit_json("preview-agreement", {"pairs": pairs, "rate": agreement.rate()})
    else:
        print("\n".join(plain_text(line) for line in agreement.lines()))
    return EXIT_INTERRUPTED if stopped else 0


async def _run_with_signals(chosen: list[PostureId], service: RunService) -> Scoreboard:
    with cancel_on_signals() as cancel:
        return await run_lab(chosen, service, cancel=cancel, on_cell=_progress)


async def _measure_with_signals(
    chosen: list[PostureId], service: RunService
) -> tuple[Agreement, bool]:
    with cancel_on_signals() as cancel:
        return await measure(service, chosen, cancel), cancel.cancelled


def _progress(cell: Cell) -> None:
    warn(f"  {cell.posture}/{cell.probe}: {cell.verdict}")


def render_scoreboard(board: Scoreboard) -> str:
    """The scoreboard as text: a verdict table, then each cell's control or reason."""
    width = max((len(p.value) for p in board.probes), default=5) + 2
    columns = [max(len(p.value), 13) + 2 for p in board.postures]
    header = "probe".ljust(width) + "".join(
        p.value.ljust(w) for p, w in zip(board.postures, columns, strict=True)
    )
    lines = [header.rstrip()]
    for probe in board.probes:
        row = probe.value.ljust(width)
        for posture_id, column in zip(board.postures, columns, strict=True):
            cell = board.cell(posture_id, probe)
            text = "-" if cell is None else _MARK[cell.verdict] + ("!" * cell.unexpected)
            row += text.ljust(column)
        lines.append(row.rstrip())
    lines.append("")
    for cell in board.cells:
        flag = f"  UNEXPECTED (promised: {cell.expected})" if cell.unexpected else ""
        lines.append(
            f"{cell.posture}/{cell.probe}: {cell.verdict} - {plain_text(cell.explanation())} "
            f"[run {cell.run_id}]{flag}"
        )
    lines.append("")
    summary = f"{len(board.cells)} cells in {board.seconds:.1f} s"
    unexpected = board.unexpected()
    if unexpected:
        summary += f"; {len(unexpected)} differ from the postures' descriptions (marked !)"
    else:
        summary += "; every verdict matches its posture's description"
    if board.interrupted:
        summary += "; INTERRUPTED before the end"
    lines.append(summary)
    return "\n".join(lines)
