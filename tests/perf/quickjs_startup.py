"""Cold start of the QuickJS worker against a warm (pre-spawned) and a reused worker.

Run it by hand: `.venv/bin/python tests/perf/quickjs_startup.py [RUNS]`. It prints timings and
asserts nothing (the numbers depend on the machine and its load). Phases of a real worker,
spawned as the executor spawns it, with a trivial script:

- spawn -> ready: interpreter start, the worker's imports, its rlimits. A warm worker has paid
  this before the run was asked for.
- spawn -> result: all a cold worker costs (the pipe is read as the messages come).
- per-run work: what is left for a warm worker, measured as the worker does it: the worker's
  `run()` called in this process once its imports (and the engine's) are done, a fresh
  context each time.

For reference: a bare `python -I` start, a bare `python -I -S` one (a fresh worker starts
without `site`), and the import of `workbench.executors`, which the worker paid when it lived
in that package (75 of its 89 ms then; that `__init__` is lazy
now). Last, the whole `QuickJsExecutor.run()` of the same script (spawn or adoption, sampling,
kill verification, result), which is what a user waits for: cold, with a warm one-shot worker
from a `QuickJsWorkerPool`, and with a reused one (the wait for the pool to be ready is not
timed).
"""

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.executors.quickjs.executor import QuickJsExecutor, worker_argv
from workbench.executors.quickjs.run import STACK_LIMIT_BYTES, worker_rlimits
from workbench.executors.quickjs.worker import main as worker
from workbench.executors.quickjs.worker.protocol import MessageDecoder
from workbench.executors.types import CancelToken, OutputChunk, RunRequest, SessionSpec
from workbench.executors.warm.quickjs import QuickJsWorkerPool
from workbench.postures.model import Posture, PostureId


def interpreter(code: str, *flags: str) -> float:
    """Seconds from spawning `python -I FLAGS -c code` to its exit."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-I", *flags, "-c", code], check=True)
    return time.perf_counter() - started


def run_request(workspace: Path, script: Path) -> dict[str, Any]:
    """The `run` part of a worker spec for `script`, as the executor writes it."""
    limits = Posture(PostureId.QUICKJS).limits
    return {
        "script_path": str(script),
        "display_name": script.name,
        "args": [],
        "workspace": str(workspace),
        "memory_limit": limits.memory_bytes,
        "stack_limit": STACK_LIMIT_BYTES,
        "started_at": time.time(),
        "deadline": time.time() + limits.timeout_s,
        "fetch": None,
    }


def cold_worker(workspace: Path, script: Path) -> tuple[float, float]:
    """Seconds from spawn to `ready` and from spawn to `result`, for one real worker."""
    read_fd, write_fd = os.pipe()
    spec = {
        "control_fd": write_fd,
        "rlimits": worker_rlimits(Posture(PostureId.QUICKJS).limits),
        "run": run_request(workspace, script),
    }
    argv = [*worker_argv(), json.dumps(spec)]
    started = time.perf_counter()
    worker = subprocess.Popen(argv, cwd=workspace, pass_fds=(write_fd,), env={})
    os.close(write_fd)
    decoder, stamps = MessageDecoder(), list[float]()
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while len(stamps) < 2 and (data := pipe.read(65536)):
            stamps += [time.perf_counter() for _ in decoder.feed(data)]
    worker.wait()
    if len(stamps) < 2:
        raise SystemExit("the worker ended without a result")
    return stamps[0] - started, stamps[1] - started


def warm_run(workspace: Path, script: Path) -> float:
    """Seconds for the per-run work of a worker whose imports are done."""
    with Path(os.devnull).open("wb") as control:
        started = time.perf_counter()
        result = worker.run(run_request(workspace, script), control.fileno())
        elapsed = time.perf_counter() - started
    if result["outcome"] != "ok":
        raise SystemExit(f"the warm run failed: {result}")
    return elapsed


def executor_run(workspace: Path, runs: Path, script: Path) -> float:
    """Seconds for one whole `QuickJsExecutor.run()` of `script`."""

    async def go() -> float:
        executor = QuickJsExecutor(Posture(PostureId.QUICKJS))
        await executor.start(SessionSpec(workspace, "perf", workspace, runs))

        def sink(chunk: OutputChunk) -> None:
            del chunk

        started = time.perf_counter()
        await executor.run(RunRequest(argv=(script.name,)), sink, CancelToken())
        elapsed = time.perf_counter() - started
        await executor.stop()
        return elapsed

    return asyncio.run(go())


def pooled_runs(
    workspace: Path, runs_dir: Path, script: Path, runs: int, reuse: bool
) -> list[float]:
    """Milliseconds for `runs` whole runs through a pool's executor, each with a worker ready."""

    async def go() -> list[float]:
        pool = QuickJsWorkerPool(size=1, reuse=reuse)
        executor = pool.executor(Posture(PostureId.QUICKJS))
        await executor.start(SessionSpec(workspace, "perf", workspace, runs_dir))
        times = []
        try:
            for _ in range(runs + 1):  # the first one waits for the pool's first worker
                while not pool.status().ready:  # noqa: ASYNC110 - a pool sets no Event to await
                    await asyncio.sleep(0.005)
                started = time.perf_counter()
                result = await executor.run(
                    RunRequest(argv=(script.name,)), lambda _: None, CancelToken()
                )
                times.append((time.perf_counter() - started) * 1000)
                if "warm" not in " ".join(label for label, _ in result.card.checks):
                    raise SystemExit("a pooled run started cold")
        finally:
            await executor.stop()
            await pool.close()
        return times[1:]

    return asyncio.run(go())


def timed(runs: int, measure: Callable[[], float]) -> list[float]:
    """`runs` measurements, in ms."""
    return [measure() * 1000 for _ in range(runs)]


def show(label: str, times: list[float]) -> float:
    """Print the median and minimum of `times`; return the minimum (the least noisy)."""
    print(f"{label:44s} median {statistics.median(times):6.1f} ms   min {min(times):6.1f} ms")
    return min(times)


def main(runs: int) -> None:
    """Measure every phase `runs` times and print the comparison."""
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        script = workspace / "main.js"
        script.write_text("const sum = scriptArgs.length + 1;")  # prints nothing
        print(f"{runs} runs each, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
        show("python -I (bare interpreter)", timed(runs, lambda: interpreter("pass")))
        show("python -I -S (bare, no site)", timed(runs, lambda: interpreter("pass", "-S")))
        old = timed(runs, lambda: interpreter("import workbench.executors"))
        show("python -I, import workbench.executors", old)
        phases = [cold_worker(workspace, script) for _ in range(runs)]
        show("cold worker: spawn -> ready", [p[0] * 1000 for p in phases])
        cold = show("cold worker: spawn -> result", [p[1] * 1000 for p in phases])
        warm_run(workspace, script)  # the engine import, which a warm worker does before
        warm = show("warm worker: per-run work", timed(runs, lambda: warm_run(workspace, script)))
        runs_dir = workspace / ".runs"
        whole = show(
            "whole executor run, cold worker",
            timed(runs, lambda: executor_run(workspace, runs_dir, script)),
        )
        pooled = pooled_runs(workspace, runs_dir, script, runs, reuse=False)
        warm_whole = show("whole executor run, warm worker", pooled)
        reused = pooled_runs(workspace, runs_dir, script, runs, reuse=True)
        show("whole executor run, reused worker", reused)
        print(
            f"per-run work of a warm worker {warm:.1f} ms against {cold:.1f} ms cold; "
            f"a whole run {warm_whole:.1f} ms against {whole:.1f} ms (from the minimums)"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
