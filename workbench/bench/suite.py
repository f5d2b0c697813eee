"""The bench's catalogue of rows, which of them run here, and running them.

`select_groups()` keeps the rows the user asked for (`--postures`, `--rows`); `machine_gaps()`
says, once per run, what this machine lacks (no engine, no runsc, no image, a posture not
implemented in this build); `run_bench()` measures each group in turn in a scratch folder,
skipping (with the reason) the groups whose needs are missing, and turning a group that
fails into rows with the error rather than ending the whole run.
"""

import asyncio
import os
import platform
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from workbench.bench import (
    app_rows,
    bubblewrap_rows,
    docker_rows,
    environment_rows,
    local_rows,
    workspace_rows,
)
from workbench.bench.rows import BenchContext, Group, Need, Outcome, RowResult
from workbench.errors import UsageError
from workbench.executors import implemented_postures
from workbench.executors.availability import docker_engine_runtimes, probe_availability
from workbench.postures.model import DEFAULT_IMAGE, PostureId

# How long one row may take, its fixtures included (a 50k-file tree takes over a minute to
# build on a slow disk), before its group is taken to hang; by --quick.
ROW_LIMIT_S = {False: 120.0, True: 40.0}
ABORT_WAIT_S = 10.0
GROUPS: tuple[Group, ...] = (
    *local_rows.GROUPS,
    *bubblewrap_rows.GROUPS,
    *workspace_rows.GROUPS,
    *environment_rows.GROUPS,
    *app_rows.GROUPS,
    *docker_rows.GROUPS,
)


class GroupHung(TimeoutError):
    """A group did not finish in its time; a call it made may still be blocked."""


@dataclass(frozen=True, slots=True)
class BenchRun:
    """A finished bench: every selected row, how long it all took, and the machine.

    `hung` is true when a group gave up on a measurement that never returned: a thread may
    still be blocked in it, so the process should exit without waiting for its threads.
    """

    rows: tuple[RowResult, ...]
    seconds: float
    quick: bool
    machine: dict[str, object]
    hung: bool = False


def row_ids() -> list[str]:
    """Every row id, in table order."""
    return [row.id for group in GROUPS for row in group.rows]


def select_groups(
    postures: Iterable[PostureId] | None, rows: Iterable[str] | None
) -> list[tuple[Group, frozenset[str]]]:
    """The groups to run and the ids of their selected rows.

    `postures` keeps the rows of those postures plus the rows that belong to none (workspace,
    samplers, CLI); `rows` keeps only the named rows. Unknown row ids are a `UsageError`.
    """
    wanted_rows = set(rows) if rows is not None else None
    if wanted_rows is not None and (unknown := wanted_rows - set(row_ids())):
        raise UsageError(
            f"unknown bench row(s): {', '.join(sorted(unknown))}; "
            f"known rows: {', '.join(row_ids())}"
        )
    wanted_postures = set(postures) if postures is not None else None
    selected = []
    for group in GROUPS:
        if wanted_postures is not None and group.posture not in (None, *wanted_postures):
            continue
        ids = frozenset(
            row.id for row in group.rows if wanted_rows is None or row.id in wanted_rows
        )
        if ids:
            selected.append((group, ids))
    return selected


def _image_present() -> bool:
    done = subprocess.run(
        ["docker", "image", "inspect", DEFAULT_IMAGE],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def machine_gaps() -> dict[Need | PostureId, str]:
    """What this machine lacks, each with the sentence a skipped row shows."""
    gaps: dict[Need | PostureId, str] = {}
    runtimes = docker_engine_runtimes()
    if runtimes is None:
        gaps[Need.ENGINE] = "no Docker engine answers"
    elif "runsc" not in runtimes:
        gaps[Need.RUNSC] = "the Docker engine has no runsc (gVisor) runtime"
    if shutil.which("docker") is None:
        gaps[Need.DOCKER_CLI] = "the docker command is not installed (the floor uses it)"
    elif Need.ENGINE not in gaps and not _image_present():
        gaps[Need.IMAGE] = f"the image {DEFAULT_IMAGE} is missing (workbench image build)"
    if shutil.which("git") is None:
        gaps[Need.GIT] = "git is not installed (the floor uses it)"
    implemented = implemented_postures()
    for posture in PostureId:
        if posture not in implemented:
            gaps[posture] = f"the {posture} posture is not implemented in this build"
        elif not (available := probe_availability(posture, runtimes)).available:
            gaps[posture] = available.reason
    return gaps


def _skip_reason(group: Group, gaps: dict[Need | PostureId, str]) -> str:
    keys: list[Need | PostureId] = [*group.needs]
    if group.posture is not None:
        keys.append(group.posture)
    return next((gaps[key] for key in keys if key in gaps), "")


def machine_facts() -> dict[str, object]:
    """What the figures depend on: cores, load, Python, the platform."""
    return {
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "executable": sys.executable,
    }


async def run_bench(
    quick: bool,
    postures: Iterable[PostureId] | None = None,
    rows: Iterable[str] | None = None,
    progress: Callable[[str], None] = lambda text: None,
) -> BenchRun:
    """Measure the selected rows (see the module docstring)."""
    selected = select_groups(postures, rows)
    started = time.perf_counter()
    facts = machine_facts()
    gaps = machine_gaps()
    results: list[RowResult] = []
    scratch = await asyncio.to_thread(tempfile.TemporaryDirectory, prefix="workbench-bench-")
    try:
        folder = Path(scratch.name)
        await asyncio.to_thread(folder.chmod, 0o755)  # the hardened throwaway uid must reach it
        token = secrets.token_hex(4)
        for group, ids in selected:
            context = BenchContext(quick, folder / group.id, f"bench-{token}")
            results.extend(await _run_group(group, ids, context, gaps, progress))
    finally:
        await asyncio.to_thread(scratch.cleanup)
    facts["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    hung = any(row.error.startswith(GroupHung.__name__) for row in results)
    return BenchRun(tuple(results), time.perf_counter() - started, quick, facts, hung)


async def _within(
    group: Group, context: BenchContext, ids: frozenset[str], outcomes: dict[str, Outcome]
) -> None:
    """Run the group into `outcomes`; `GroupHung` (after aborting it) when a row of it hangs:
    the group's next outcome is due within `ROW_LIMIT_S` of its start or its last one (seen to
    within a twentieth of that)."""
    limit = ROW_LIMIT_S[context.quick]
    task = asyncio.create_task(group.run(context, ids, outcomes))
    loop = asyncio.get_running_loop()
    delivered, since = 0, loop.time()
    while True:
        done, _ = await asyncio.wait({task}, timeout=limit / 20)
        if done:
            return task.result()
        if len(outcomes) > delivered:
            delivered, since = len(outcomes), loop.time()
        elif loop.time() - since >= limit:
            break
    if group.abort is not None:
        await asyncio.to_thread(group.abort, context)
    task.cancel()
    await asyncio.wait({task}, timeout=ABORT_WAIT_S)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: the timeout is what gets reported
    raise GroupHung(f"gave up after {limit:g} s without a row: a measurement did not finish")


async def _run_group(
    group: Group,
    ids: frozenset[str],
    context: BenchContext,
    gaps: dict[Need | PostureId, str],
    progress: Callable[[str], None],
) -> list[RowResult]:
    specs = [row for row in group.rows if row.id in ids]
    blank = [RowResult(spec, group.id, group.posture) for spec in specs]
    if reason := _skip_reason(group, gaps):
        progress(f"skipping {group.id}: {reason}")
        return [replace(row, skipped=reason) for row in blank]
    progress(f"measuring {group.id} ({', '.join(spec.id for spec in specs)})")
    context.scratch.mkdir(mode=0o755)
    outcomes: dict[str, Outcome] = {}
    try:
        await _within(group, context, ids, outcomes)
    except Exception as error:  # a failing group is reported in its rows; the rest still run
        message = f"{type(error).__name__}: {error}"
        progress(f"{group.id} failed: {message}")
        blank = [row if row.spec.id in outcomes else replace(row, error=message) for row in blank]
    missing = Outcome(skipped="not measured")
    return [
        replace(
            row,
            ours=(outcome := outcomes.get(row.spec.id, missing)).ours,
            floor=outcome.floor,
            skipped=outcome.skipped,
            note=outcome.note,
        )
        for row in blank
    ]
