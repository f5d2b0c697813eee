"""Rows of the container postures (`docker`, and `gvisor` on runsc) and the cgroup sampler.

Ours goes through the executor (`build_executor`): `start()` of a session (and of one taking a
container from a warm pool, against the cold start), `run()` of `true`, the first output
chunk of a run, and Stop (the run's `CancelToken`) of a running `sleep`, with the time until
`run()` returns. The floors are the docker command-line client on the same
engine, image and runtime: `docker run --rm --network none IMAGE true`, `docker exec` into our
session's container, and `docker kill` of a container running `sleep`. Every container the
floors start carries `BENCH_LABEL` and is removed at the end; if a measurement hangs, `abort`
removes this run's containers (ours by their skill label) so that the calls stuck on them return.
"""

import asyncio
import contextlib
import os
import subprocess
import time
from collections.abc import Awaitable, Callable

from workbench.bench.rows import (
    COMMAND_LIMIT_S,
    BenchContext,
    Goal,
    Group,
    Need,
    Outcome,
    RowSpec,
    checked_run,
    run_quiet,
    scratch_session,
    started_executor,
)
from workbench.bench.stats import Case, cpu_per_call, interleave, timed_call
from workbench.executors import Executor, build_executor
from workbench.executors.types import CancelToken, OutputChunk, RunRequest, RunResult, RunStatus
from workbench.executors.warm.containers import ContainerPool
from workbench.postures.model import DEFAULT_IMAGE, Posture, PostureId

BENCH_LABEL = "org.skill-workbench.bench"  # = the run's token, on every floor container
READY = ("sh", "-c", "echo ready; exec sleep 60")
WAIT_S = 30.0
SAMPLER_CALLS = 50


def _rows(posture: PostureId) -> tuple[RowSpec, ...]:
    name = "Docker" if posture is PostureId.DOCKER else "gVisor"
    cli = "docker" + (" --runtime runsc" if posture is PostureId.GVISOR else "")
    return (
        RowSpec(
            f"{posture}-session-start",
            f"{name} session start (network none)",
            "executor start()",
            f"{cli} run --rm --network none IMAGE true",
            Goal("<= 0.8x", max_ratio=0.8),
        ),
        RowSpec(
            f"{posture}-warm-start",
            f"{name} session start (warm pool)",
            "executor start() taking a pooled container",
            "executor start() starting one (cold)",
            Goal("<= 0.5x", max_ratio=0.5),
        ),
        RowSpec(
            f"{posture}-round-trip",
            f"{name} command round trip (true, exit code)",
            "run() of true",
            "docker exec CONTAINER true",
            Goal("<= 0.85x", max_ratio=0.85),
        ),
        RowSpec(
            f"{posture}-first-chunk",
            f"{name} first output chunk",
            "run() until the first chunk",
            "our round trip of true",
            Goal("<= round trip + 10 ms", max_excess_s=0.010),
        ),
        RowSpec(
            f"{posture}-stop",
            f"{name} stop a running command",
            "Stop until run() returns",
            "docker kill CONTAINER",
            Goal("<= 0.25x", max_ratio=0.25),
        ),
    )


SAMPLER_CONTAINER = RowSpec(
    "sampler-container",
    "10 Hz samples, container cgroup",
    "CgroupFiles.usage() (the sampler's read)",
    "read the same cgroup files with os.read",
    Goal("<= 3x, < 2% of a core at 10 Hz", max_ratio=3.0, max_ours_s=0.002),
    cpu=True,
)


def _docker(*args: str) -> str:
    """Run the docker client; its stdout, stripped. Raises when it fails."""
    done = subprocess.run(
        ["docker", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=True,
        timeout=COMMAND_LIMIT_S,
    )
    return done.stdout.strip()


def _runtime_args(posture: PostureId) -> list[str]:
    return ["--runtime", "runsc"] if posture is PostureId.GVISOR else []


async def _until_output(
    executor: Executor, cancel: CancelToken
) -> tuple[asyncio.Task[RunResult], float]:
    """Start a run that prints and then sleeps; return its task and when its output arrived."""
    arrived: list[float] = []
    ready = asyncio.Event()

    def sink(chunk: OutputChunk, /) -> None:
        del chunk
        if not arrived:
            arrived.append(time.perf_counter())
            ready.set()

    run = asyncio.create_task(executor.run(RunRequest(READY), sink, cancel))
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait({run, waiter}, timeout=WAIT_S, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if not arrived:
        cancel.cancel()
        result = await run
        raise RuntimeError(f"no output from a running command: {result.status}: {result.cause}")
    return run, arrived[0]


def _first_chunk(executor: Executor) -> Callable[[], Awaitable[float]]:
    async def measure() -> float:
        cancel = CancelToken()
        start = time.perf_counter()
        run, arrived = await _until_output(executor, cancel)
        cancel.cancel()
        await run
        return arrived - start

    return measure


def _stop(executor: Executor) -> Callable[[], Awaitable[float]]:
    async def measure() -> float:
        cancel = CancelToken()
        run, _ = await _until_output(executor, cancel)
        start = time.perf_counter()
        cancel.cancel()
        result = await run
        elapsed = time.perf_counter() - start
        if result.status is not RunStatus.CANCELLED or result.leftover_processes:
            raise RuntimeError(f"Stop ended the run as {result.status}: {result.cause}")
        return elapsed

    return measure


def _session_start(posture: Posture, context: BenchContext) -> Callable[[], Awaitable[float]]:
    session = scratch_session(context.scratch / f"{posture.id}-starts", context.token)

    async def measure() -> float:
        executor = build_executor(posture)
        start = time.perf_counter()
        await executor.start(session)
        elapsed = time.perf_counter() - start
        await executor.stop()
        return elapsed

    return measure


def _warm_start(
    posture: Posture, context: BenchContext, pool: ContainerPool
) -> Callable[[], Awaitable[float]]:
    session = scratch_session(context.scratch / f"{posture.id}-warm-starts", context.token)

    async def measure() -> float:
        await pool.resize(1)
        await pool.prime(posture, session)
        await pool.settle()  # refilled before the clock starts
        executor = pool.executor(posture)
        start = time.perf_counter()
        await executor.start(session)
        elapsed = time.perf_counter() - start
        await executor.stop()
        if not executor.warm:
            raise RuntimeError(f"the pool had nothing ready: {pool.status().problem or 'none'}")
        return elapsed

    return measure


def _detached(context: BenchContext, posture: PostureId, *command: str) -> str:
    """Start a labelled floor container running `command`; its id."""
    label = f"{BENCH_LABEL}={context.token}"
    run = ["run", "-d", "--rm", "--network", "none", "--label", label, *_runtime_args(posture)]
    return _docker(*run, DEFAULT_IMAGE, *command)


def abort(context: BenchContext) -> None:
    """Remove every container of this bench run, ours and the floors'."""
    from workbench.executors.docker.spec import LABEL_SKILL

    for label in (f"{LABEL_SKILL}={context.token}", f"{BENCH_LABEL}={context.token}"):
        for container in _docker("ps", "-aq", "--filter", f"label={label}").split():
            with contextlib.suppress(subprocess.SubprocessError):
                _docker("rm", "-f", container)


def _kill_floor(
    context: BenchContext, posture: PostureId, started: list[str]
) -> Callable[[], Awaitable[float]]:
    async def measure() -> float:
        container = _detached(context, posture, "sleep", "60")
        started.append(container)
        start = time.perf_counter()
        _docker("kill", container)
        return time.perf_counter() - start

    return measure


async def container_rows(
    posture: PostureId, context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
) -> None:
    """The rows of one container posture; the last three share one started session."""
    start_row, warm_row, trip_row, chunk_row, stop_row = _rows(posture)
    started: list[str] = []
    pool = ContainerPool()
    try:
        if start_row.id in wanted:
            cli = ["docker", "run", "--rm", "--network", "none", *_runtime_args(posture)]
            cases = [
                Case("ours", _session_start(Posture(posture), context)),
                Case("floor", timed_call(lambda: run_quiet([*cli, DEFAULT_IMAGE, "true"]))),
            ]
            stats = await interleave(cases, context.rounds(8, 3))
            outcomes[start_row.id] = Outcome(stats["ours"], stats["floor"])
        if warm_row.id in wanted:
            cases = [
                Case("warm", _warm_start(Posture(posture), context, pool)),
                Case("cold", _session_start(Posture(posture), context)),
            ]
            stats = await interleave(cases, context.rounds(8, 3))
            outcomes[warm_row.id] = Outcome(stats["warm"], stats["cold"])
            await pool.close()
        if not {trip_row.id, chunk_row.id, stop_row.id} & wanted:
            return
        session = scratch_session(context.scratch / f"{posture}-session", context.token)
        async with started_executor(Posture(posture), session) as executor:
            container = str(getattr(executor, "container_id", ""))
            cases = [
                Case("trip", checked_run(executor, ("true",))),
                Case("exec", timed_call(lambda: run_quiet(["docker", "exec", container, "true"]))),
                Case("chunk", _first_chunk(executor)),
            ]
            stats = await interleave(cases, context.rounds(15, 5))
            outcomes[trip_row.id] = Outcome(stats["trip"], stats["exec"])
            outcomes[chunk_row.id] = Outcome(stats["chunk"], stats["trip"])
            if stop_row.id in wanted:
                cases = [
                    Case("ours", _stop(executor)),
                    Case("floor", _kill_floor(context, posture, started)),
                ]
                stats = await interleave(cases, context.rounds(8, 3))
                outcomes[stop_row.id] = Outcome(stats["ours"], stats["floor"])
    finally:
        await pool.close()
        for container in started:
            with contextlib.suppress(subprocess.SubprocessError):
                _docker("rm", "-f", container)


def read_files_raw(paths: tuple[str, ...]) -> list[bytes]:
    """The cgroup floor: open, read and close each file."""
    values = []
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            values.append(os.read(fd, 4096))
        finally:
            os.close(fd)
    return values


async def container_sampler_rows(
    context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
) -> None:
    """CPU per sample of the cgroup reader against reading the same files directly."""
    del wanted
    from workbench.executors.docker.sampler import CgroupFiles

    container = _detached(context, PostureId.DOCKER, "sleep", "300")
    try:
        pid = int(_docker("inspect", "-f", "{{.State.Pid}}", container))
        files = CgroupFiles.for_pid(pid)
        if files is None:
            reason = "the container's cgroup files are not readable from here"
            outcomes[SAMPLER_CONTAINER.id] = Outcome(skipped=reason)
            return
        paths = tuple(map(str, (files.cpu, files.memory, files.pids, files.memory_high_water)))
        cases = [
            Case("ours", cpu_per_call(files.usage, SAMPLER_CALLS)),
            Case("floor", cpu_per_call(lambda: read_files_raw(paths), SAMPLER_CALLS)),
        ]
        stats = await interleave(cases, context.rounds(15, 5))
    finally:
        with contextlib.suppress(subprocess.SubprocessError):
            _docker("rm", "-f", container)
    note = f"cgroup v{files.version}; {stats['ours'].median * 10 * 100:.3f}% of a core at 10 Hz"
    outcomes[SAMPLER_CONTAINER.id] = Outcome(stats["ours"], stats["floor"], note=note)


def _group(posture: PostureId) -> Group:
    async def run(
        context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
    ) -> None:
        await container_rows(posture, context, wanted, outcomes)

    needs: tuple[Need, ...] = (Need.ENGINE, Need.DOCKER_CLI, Need.IMAGE)
    if posture is PostureId.GVISOR:
        needs += (Need.RUNSC,)
    return Group(str(posture), _rows(posture), run, posture, needs, abort)


GROUPS = (
    _group(PostureId.DOCKER),
    _group(PostureId.GVISOR),
    Group(
        "sampler-container",
        (SAMPLER_CONTAINER,),
        container_sampler_rows,
        needs=(Need.ENGINE, Need.DOCKER_CLI, Need.IMAGE),
        abort=abort,
    ),
)
