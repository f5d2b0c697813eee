"""Rows of the local postures: hardened spawn (also from a 500 MB app), QuickJS, the process
tree sampler, and the CLI's start-up, each against its floor.

Ours always goes through the public API: `HardenedExecutor.run` and `QuickJsExecutor.run` via
`build_executor` (or a `QuickJsWorkerPool`'s executor for the warm row),
`ProcessTreeSampler.sample`, the installed `workbench` command.
"""

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import psutil

from workbench.bench.rows import (
    BenchContext,
    Goal,
    Group,
    Outcome,
    RowSpec,
    checked_run,
    run_quiet,
    scratch_session,
    started_executor,
)
from workbench.bench.stats import Case, cpu_per_call, interleave, timed_call
from workbench.executors.process.reaper import reap_orphans
from workbench.executors.warm.quickjs import QuickJsWorkerPool
from workbench.monitor.process import ProcessTreeSampler, descendants, process_clock, run_tag
from workbench.postures.model import MIB, Posture, PostureId

BALLAST_BYTES = 500 * MIB
PAGE = 4096
SAMPLER_CALLS = 20  # samples per timed call of the sampler rows
TREE_SIZE = 4  # processes in the tree the sampler rows read

SPAWN = RowSpec(
    "hardened-spawn",
    "hardened spawn (env, session, limits, pipes)",
    "hardened run of /bin/true",
    "os.posix_spawn(/bin/true) + waitpid",
    Goal("<= 2.5x", max_ratio=2.5),
)
SPAWN_BIG = RowSpec(
    "hardened-spawn-500mb",
    "hardened spawn, app RSS 500 MB",
    "hardened run of /bin/true",
    "os.posix_spawn(/bin/true) + waitpid",
    Goal("<= 2.5x (no worse than small)", max_ratio=2.5),
)
QUICKJS_FIRST = RowSpec(
    "quickjs-first-result",
    "QuickJS first result, fresh isolated process",
    "quickjs run of console.log(1 + 2)",
    "python -c 'import _quickjs'",
    Goal("<= 1.5x", max_ratio=1.5),
)
QUICKJS_WARM = RowSpec(
    "quickjs-warm",
    "QuickJS warm worker (pre-spawned, one run each)",
    "quickjs run of console.log(1 + 2), warm worker",
    "the same run, cold worker",
    Goal("<= 0.5x cold", max_ratio=0.5),
)
SAMPLER_LOCAL = RowSpec(
    "sampler-local",
    f"10 Hz samples, local tree of {TREE_SIZE} processes",
    "ProcessTreeSampler.sample()",
    "read /proc/PID/stat + statm of the tree",
    Goal("<= 3x, < 2% of a core at 10 Hz", max_ratio=3.0, max_ours_s=0.002),
    cpu=True,
)
CLI_START = RowSpec(
    "cli-start",
    "CLI start",
    "workbench --version",
    "python -c pass",
    Goal("<= 5x", max_ratio=5.0),
)


def posix_spawn_true() -> None:
    """The spawn floor: posix_spawn /bin/true and wait for it."""
    pid = os.posix_spawn("/bin/true", ["/bin/true"], {})
    os.waitpid(pid, 0)


async def spawn_rows(
    context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
) -> None:
    """Hardened runs of /bin/true against posix_spawn, then again from a 500 MB process."""
    rounds = context.rounds(30, 10)
    session = scratch_session(context.scratch / "hardened")
    async with started_executor(Posture(PostureId.HARDENED), session) as executor:
        cases = [
            Case("ours", checked_run(executor, ("/bin/true",))),
            Case("floor", timed_call(posix_spawn_true)),
        ]
        if SPAWN.id in wanted:
            stats = await interleave(cases, rounds)
            outcomes[SPAWN.id] = Outcome(stats["ours"], stats["floor"])
        if SPAWN_BIG.id in wanted:
            ballast = bytearray(BALLAST_BYTES)
            ballast[::PAGE] = b"\x01" * len(range(0, BALLAST_BYTES, PAGE))  # fault every page
            rss = psutil.Process().memory_info().rss
            stats = await interleave(cases, rounds)
            del ballast
            note = f"app RSS {rss / MIB:.0f} MiB while measured"
            outcomes[SPAWN_BIG.id] = Outcome(stats["ours"], stats["floor"], note=note)


async def quickjs_rows(
    context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
) -> None:
    """A fresh QuickJS worker per run against a bare interpreter that loads the engine; then
    warm workers, one-shot and reused, against that cold run."""
    session = scratch_session(context.scratch / "quickjs")
    (session.workspace / "first.js").write_text("console.log(1 + 2);\n")
    floor = [sys.executable, "-c", "import _quickjs"]
    posture = Posture(PostureId.QUICKJS)
    argv = ("first.js",)
    async with started_executor(posture, session) as executor:
        cold = Case("cold", checked_run(executor, argv, want="3"))
        if QUICKJS_FIRST.id in wanted:
            cases = [cold, Case("floor", timed_call(lambda: run_quiet(floor)))]
            stats = await interleave(cases, context.rounds(20, 6))
            outcomes[QUICKJS_FIRST.id] = Outcome(
                stats["cold"], stats["floor"], note="ours: run() until its result is in hand"
            )
        if QUICKJS_WARM.id not in wanted:
            return
        one_shot, reused = QuickJsWorkerPool(size=1), QuickJsWorkerPool(size=1, reuse=True)
        warm_executors = [one_shot.executor(posture), reused.executor(posture)]
        try:
            cases = [cold]
            pairs = zip(("warm", "reused"), (one_shot, reused), warm_executors, strict=True)
            for name, pool, warm in pairs:
                await warm.start(session)
                await pool.prime(posture, session)
                cases.append(Case(name, when_ready(pool, checked_run(warm, argv, want="3"))))
            stats = await interleave(cases, context.rounds(20, 6))
        finally:
            for warm in warm_executors:
                await warm.stop()
            for pool in (one_shot, reused):
                await pool.close()
    note = (
        f"reused worker (fresh context, same process): {stats['reused'].median * 1000:.1f} ms; "
        "ours: run() until its result is in hand, the worker's start not counted"
    )
    outcomes[QUICKJS_WARM.id] = Outcome(stats["warm"], stats["cold"], note=note)


def when_ready(
    pool: QuickJsWorkerPool, measure: Callable[[], Awaitable[float]]
) -> Callable[[], Awaitable[float]]:
    """`measure`, once `pool` has a worker ready (the wait is not timed)."""

    async def ready_then_measure() -> float:
        for _ in range(1000):
            if pool.status().ready:
                return await measure()
            if pool.status().problem:
                break
            await asyncio.sleep(0.005)
        raise RuntimeError(f"no warm QuickJS worker: {pool.status().problem or 'none in 5 s'}")

    return ready_then_measure


def read_tree_raw(root: int) -> tuple[int, int]:
    """The sampler floor: CPU ticks and resident pages of `root`'s tree, read from /proc."""
    ticks = pages = 0
    for pid in descendants([root]):
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:  # noqa: PTH123 - the raw floor
                fields = stat.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{pid}/statm", "rb") as statm:  # noqa: PTH123
                pages += int(statm.read().split()[1])
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks, pages


async def sampler_rows(
    context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
) -> None:
    """CPU per sample of the process tree sampler against reading /proc directly."""
    del wanted
    shell = " & ".join(["sleep 60"] * (TREE_SIZE - 1)) + " & echo forked; wait"
    since = process_clock() - 0.05
    tree = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", shell, stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert tree.stdout is not None
        await tree.stdout.readline()  # every child is forked: the tree is whole
        loop = asyncio.get_running_loop()
        sampler = ProcessTreeSampler(psutil.Process(tree.pid), run_tag("bench"), loop.time())
        cases = [
            Case("ours", cpu_per_call(sampler.sample, SAMPLER_CALLS)),
            Case("floor", cpu_per_call(lambda: read_tree_raw(tree.pid), SAMPLER_CALLS)),
        ]
        stats = await interleave(cases, context.rounds(15, 5))
    finally:
        os.killpg(tree.pid, signal.SIGKILL)
        await tree.wait()
        await asyncio.sleep(0.05)
        reap_orphans(since)  # the sleeps, re-parented to this process (a child subreaper)
    note = f"{stats['ours'].median * 10 * 100:.2f}% of a core at 10 Hz"
    outcomes[SAMPLER_LOCAL.id] = Outcome(stats["ours"], stats["floor"], note=note)


def workbench_command() -> list[str]:
    """The installed `workbench` command beside this interpreter, else `python -m workbench`."""
    script = Path(sys.executable).with_name("workbench")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "workbench"]


async def cli_rows(
    context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
) -> None:
    """`workbench --version` against an interpreter that does nothing."""
    del wanted
    ours = [*workbench_command(), "--version"]
    floor = [sys.executable, "-c", "pass"]
    cases = [
        Case("ours", timed_call(lambda: run_quiet(ours))),
        Case("floor", timed_call(lambda: run_quiet(floor))),
    ]
    stats = await interleave(cases, context.rounds(15, 5))
    outcomes[CLI_START.id] = Outcome(stats["ours"], stats["floor"], note=" ".join(ours))


GROUPS = (
    Group("spawn", (SPAWN, SPAWN_BIG), spawn_rows, PostureId.HARDENED),
    Group("quickjs", (QUICKJS_FIRST, QUICKJS_WARM), quickjs_rows, PostureId.QUICKJS),
    Group("sampler-local", (SAMPLER_LOCAL,), sampler_rows),
    Group("cli", (CLI_START,), cli_rows),
)
