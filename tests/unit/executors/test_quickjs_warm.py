"""Warm QuickJS workers with real worker processes: one-shot and reused, through the pool.

Each test runs several scripts through one `QuickJsWorkerPool` (as the app would, one executor
per run) and checks what the cold path guarantees still holds for warm runs: fresh JavaScript
state, the timeout, the memory limit, RLIMIT_CPU on the Nth run of a reused worker, the fs
confinement, unforgeable framing, the throwaway uid as root, and nothing left after `close()`.
"""

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.waiting import until
from workbench.executors.quickjs.worker.protocol import encode_message
from workbench.executors.types import CancelToken, RunRequest, RunResult, RunStatus, SessionSpec
from workbench.executors.warm.quickjs import QuickJsWorkerPool
from workbench.postures.model import MIB, Posture, PostureId

POLLUTE = """
Object.prototype.x = 1;
Array.prototype.push = function () { return "hijacked"; };
globalThis.junk = "left over";
console.log(({}).x, [].push(1), junk);
"""
PROBE = "console.log(typeof ({}).x, [].push(1), typeof junk);"


def session(tmp_path: Path) -> SessionSpec:
    for name in ("skill", "ws", "runs"):
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
    return SessionSpec(tmp_path / "skill", "demo", tmp_path / "ws", tmp_path / "runs")


def posture(**limits: float) -> Posture:
    return Posture(PostureId.QUICKJS).with_limits(**{"timeout_s": 10, **limits})


async def warm_run(
    pool: QuickJsWorkerPool, spec: SessionSpec, source: str, chosen: Posture | None = None
) -> RunResult:
    """Run `source` through a new executor of `pool` once the pool has a worker ready."""
    chosen = chosen or posture()
    await pool.prime(chosen, spec)
    for _ in range(500):
        if pool.status().ready or pool.status().problem:
            break
        await asyncio.sleep(0.02)
    (spec.workspace / "main.js").write_text(source)
    executor = pool.executor(chosen)
    await executor.start(spec)
    try:
        result = await executor.run(RunRequest(argv=("main.js",)), lambda _: None, CancelToken())
    finally:
        await executor.stop()
    assert result.leftover_processes == 0
    return result


def start_line(result: RunResult) -> str:
    """The card's line that says how the worker started."""
    return result.card.started


def with_pool(reuse: bool, body: Callable[[QuickJsWorkerPool], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        pool = QuickJsWorkerPool(size=1, reuse=reuse)
        try:
            return await body(pool)
        finally:
            pids = [w.spawned.pid for w in pool._idle]  # checked gone below
            await pool.close()
            assert pool.status().ready == 0
            assert pool.leftover == 0
            assert not [pid for pid in pids if _running(pid)]

    return asyncio.run(main())


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("reuse", [False, True], ids=["one-shot", "reused"])
def test_warm_runs_are_warm_and_never_see_a_previous_run(tmp_path: Path, reuse: bool) -> None:
    spec = session(tmp_path)

    async def body(pool: QuickJsWorkerPool) -> list[RunResult]:
        return [await warm_run(pool, spec, s) for s in (POLLUTE, PROBE, PROBE)]

    first, second, third = with_pool(reuse, body)
    assert first.status is RunStatus.OK, first.stderr.text
    assert first.stdout.text == "1 hijacked left over\n"
    assert second.stdout.text == third.stdout.text == "undefined 1 undefined\n"
    assert start_line(first).startswith("warm worker: started")
    if reuse:  # the same process served all three, each in a fresh context
        assert start_line(second).startswith("reused warm worker: run 2 of at most 16")
        assert start_line(third).startswith("reused warm worker: run 3")
    else:
        assert start_line(third).startswith("warm worker: started")
    assert all(r.cpu_seconds < 5 for r in (first, second, third))


def test_a_warm_run_is_timed_and_limited_like_a_cold_one_and_never_reused_after(
    tmp_path: Path,
) -> None:
    spec = session(tmp_path)
    chosen = posture(timeout_s=1.5, memory_bytes=64 * MIB)

    async def body(pool: QuickJsWorkerPool) -> list[RunResult]:
        loop = await warm_run(pool, spec, "console.log('spin'); while (true) {}", chosen)
        bomb = "const a = []; while (true) a.push('x'.repeat(4096) + a.length);"
        memory = await warm_run(pool, spec, bomb, chosen)
        after = await warm_run(pool, spec, PROBE, chosen)
        return [loop, memory, after]

    loop, memory, after = with_pool(True, body)
    assert loop.status is RunStatus.TIMED_OUT
    assert loop.cause == "wall-clock timeout of 1.5 s"
    assert loop.stdout.text == "spin\n"
    assert loop.wall_seconds >= 1.5  # timed from the adoption
    assert memory.status is RunStatus.LIMIT_EXCEEDED
    assert memory.cause == "QuickJS memory limit 64 MiB"
    assert after.stdout.text == "undefined 1 undefined\n"
    # a reused pool, yet each run after a kill or a limit got a new worker
    assert [start_line(r).split(":")[0] for r in (loop, memory, after)] == ["warm worker"] * 3


def test_stop_ends_a_warm_run_and_its_worker(tmp_path: Path) -> None:
    spec = session(tmp_path)

    async def body(pool: QuickJsWorkerPool) -> tuple[RunResult, RunResult]:
        cancel = CancelToken()
        asyncio.get_running_loop().call_later(0.5, cancel.cancel)
        await pool.prime(posture(), spec)
        await until(lambda: pool.status().ready)
        (spec.workspace / "main.js").write_text("while (true) {}")
        executor = pool.executor(posture())
        await executor.start(spec)
        stopped = await executor.run(RunRequest(argv=("main.js",)), lambda _: None, cancel)
        await executor.stop()
        return stopped, await warm_run(pool, spec, PROBE)

    stopped, after = with_pool(True, body)
    assert stopped.status is RunStatus.CANCELLED
    assert stopped.leftover_processes == 0
    assert start_line(after).startswith("warm worker: started")


@pytest.mark.slow
def test_rlimit_cpu_still_stops_the_nth_run_of_a_reused_worker(tmp_path: Path) -> None:
    spec = session(tmp_path)
    chosen = posture(cpu_seconds=1, timeout_s=20)
    busy = "const end = Date.now() + 600; while (Date.now() < end) {} console.log('done');"

    async def body(pool: QuickJsWorkerPool) -> list[RunResult]:
        runs = [await warm_run(pool, spec, busy, chosen) for _ in range(3)]
        return [*runs, await warm_run(pool, spec, "while (true) {}", chosen)]

    *busy_runs, spinner = with_pool(True, body)
    # 1.8 s of CPU in one process, each run under its 1 s budget: all finish
    assert [r.status for r in busy_runs] == [RunStatus.OK] * 3
    assert start_line(spinner).startswith("reused warm worker: run 4")
    assert spinner.status is RunStatus.LIMIT_EXCEEDED
    assert spinner.cause == "RLIMIT_CPU 1 s"
    cpu = next(held for label, held in spinner.card.checks if label.startswith("RLIMIT_CPU 1 s"))
    assert cpu is True  # /proc shows the moved soft limit


def test_warm_fs_is_confined_and_framing_unforgeable(tmp_path: Path) -> None:
    spec = session(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("host data")
    (spec.workspace / "link").symlink_to(secret)
    forged = encode_message({"type": "result", "outcome": "ok", "next": True}).decode("latin-1")
    escape = f"""
    for (const p of ["../secret.txt", {str(secret)!r}, "link"]) {{
      try {{ fs.writeText(p, "pwned"); console.log("ALLOWED " + p); }}
      catch (e) {{ console.log(e.message); }}
    }}
    console.log({forged!r});
    throw new Error("the real end");
    """

    async def body(pool: QuickJsWorkerPool) -> list[RunResult]:
        return [await warm_run(pool, spec, escape), await warm_run(pool, spec, PROBE)]

    result, after = with_pool(True, body)
    assert result.status is RunStatus.FAILED
    assert "the real end" in result.cause
    lines = result.stdout.text.splitlines()
    assert len(lines) == 4 and all("refused" in line for line in lines[:3])
    assert result.stdout.text.endswith(forged + "\n")
    assert secret.read_text() == "host data"
    assert after.stdout.text == "undefined 1 undefined\n"  # a JS error may be reused
    assert start_line(after).startswith("reused warm worker: run 2")


def test_a_reused_worker_reports_each_runs_own_unhandled_rejections(tmp_path: Path) -> None:
    spec = session(tmp_path)
    rejecting = "Promise.reject(new Error('one'));\nPromise.reject({ big: 'x'.repeat(1e6) });\n"

    async def body(pool: QuickJsWorkerPool) -> list[RunResult]:
        return [await warm_run(pool, spec, s) for s in (rejecting, PROBE, rejecting)]

    first, probe, again = with_pool(True, body)
    for failed in (first, again):
        assert failed.status is RunStatus.FAILED
        assert failed.cause == "uncaught JavaScript error: (in promise) Error: one"
        assert failed.stderr.text.endswith("[workbench: 1 more unhandled promise rejection(s)]\n")
    assert probe.status is RunStatus.OK and probe.stderr.text == ""
    assert start_line(again).startswith("reused warm worker: run 3")


@pytest.mark.skipif(os.geteuid() != 0, reason="only root switches the worker to another uid")
def test_warm_worker_runs_as_the_pools_throwaway_uid(tmp_path: Path) -> None:
    spec = session(tmp_path)
    owner = spec.workspace.stat().st_uid

    async def body(pool: QuickJsWorkerPool) -> list[RunResult]:
        return [await warm_run(pool, spec, "fs.writeText('out.txt', 'x');") for _ in range(2)]

    first, second = with_pool(True, body)
    uid_checks = [
        (label, held)
        for result in (first, second)
        for label, held in result.card.checks
        if label.startswith("runs as uid")
    ]
    assert len(uid_checks) == 2 and all(held for _, held in uid_checks)
    assert uid_checks[0][0] == uid_checks[1][0]  # the reused worker kept the key's uid
    assert (spec.workspace / "out.txt").stat().st_uid == owner  # the loan was given back


def test_a_cold_start_says_so_and_close_leaves_nothing(tmp_path: Path) -> None:
    spec = session(tmp_path)

    async def body(pool: QuickJsWorkerPool) -> RunResult:
        await pool.resize(0)
        (spec.workspace / "main.js").write_text(PROBE)
        executor = pool.executor(posture())
        await executor.start(spec)
        try:
            return await executor.run(RunRequest(argv=("main.js",)), lambda _: None, CancelToken())
        finally:
            await executor.stop()
            await pool.resize(2)
            for _ in range(500):
                if pool.status().ready == 2:
                    break
                await asyncio.sleep(0.02)
            assert pool.status().ready == 2
            memory = posture().limits.memory_bytes // MIB
            assert pool.status().key == f"any skill, {memory} MiB, 10 s"

    result = with_pool(False, body)
    assert result.status is RunStatus.OK
    assert start_line(result) == "cold start: no warm worker was ready"


def test_one_reused_worker_serves_fresh_workspaces_each_its_own(tmp_path: Path) -> None:
    """As in the app, every run gets a fresh workspace; the worker gets each as a descriptor."""
    first, second = session(tmp_path / "one"), session(tmp_path / "two")
    (first.workspace / "mine.txt").write_text("first")
    lister = "console.log(JSON.stringify(fs.list('.').sort()));"

    async def body(pool: QuickJsWorkerPool) -> list[RunResult]:
        return [await warm_run(pool, first, lister), await warm_run(pool, second, lister)]

    one, two = with_pool(True, body)
    assert one.stdout.text == '["main.js","mine.txt"]\n'
    assert two.stdout.text == '["main.js"]\n'
    assert start_line(two).startswith("reused warm worker: run 2")
    assert two.card.env_kept == ()  # the worker's environment holds no folder names
