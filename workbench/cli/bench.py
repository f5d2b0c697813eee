"""`workbench bench`: measure what each posture costs against the floor, on this machine.

Progress goes to stderr; stdout gets the table, or with `--json` exactly one document
(`skill-workbench/bench/1`). Missed goals are results, not failures: the exit code is 0 when
the bench ran, 2 for a bad option.
"""

import argparse
import os
import sys
from typing import Any

from workbench.cli.output import emit_json, warn
from workbench.errors import PostureError, UsageError
from workbench.postures.model import PostureId, parse_posture_id


def register(commands: "argparse._SubParsersAction[Any]") -> None:
    """Add the `bench` subcommand."""
    parser = commands.add_parser(
        "bench",
        help="measure what each posture costs against the lowest-level way (the floor)",
        description="Time each posture's operations against their floor, interleaved in one "
        "process, and say which goals this machine meets. About 2 minutes; --quick under 1.",
    )
    parser.add_argument(
        "--postures", metavar="A,B", help="only these postures' rows (plus the shared ones)"
    )
    parser.add_argument("--rows", metavar="ID,ID", help="only these rows (ids as in --json)")
    parser.add_argument("--quick", action="store_true", help="fewer rounds, no 50k-file tree")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(handler=_bench)


def _postures(text: str | None) -> list[PostureId] | None:
    if text is None:
        return None
    try:
        return [parse_posture_id(name.strip()) for name in text.split(",") if name.strip()]
    except PostureError as error:
        raise UsageError(str(error)) from None


def _bench(args: argparse.Namespace) -> int:
    import asyncio

    from workbench.bench.report import bench_payload, format_table
    from workbench.bench.suite import run_bench
    from workbench.platform import loops

    rows = [r.strip() for r in args.rows.split(",") if r.strip()] if args.rows else None
    bench = run_bench(args.quick, _postures(args.postures), rows, lambda t: warn(f"bench: {t}"))
    # Not asyncio.run(): it waits for every worker thread, and a hung call never returns.
    loop = asyncio.new_event_loop()
    loops.give_blocking_threads(loop)
    try:
        run = loop.run_until_complete(bench)
    finally:
        loop.close()
    if args.json:
        emit_json("bench", bench_payload(run))
    else:
        print(format_table(run))
    if run.hung:  # a thread is stuck in a call that never returned: do not wait for it
        warn("bench: a measurement never returned; exiting without waiting for it")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0
