"""The bench's row model: what a row measures, its goal, its result, and shared helpers.

A `RowSpec` names what the workbench does (`ours`), the floor it is compared with and the
`Goal`; a `Group` measures one or more rows that share an expensive set-up (a container
session, a 10k-file tree) and returns an `Outcome` per row. The suite turns each into a
`RowResult`, whose `ratio` is ours / floor (medians of the same run) and whose `met` says
whether the goal held. The helpers build the throwaway session folders and executors the
measurements run in.
"""

import contextlib
import os
import select
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from workbench.bench.stats import Stats
from workbench.executors import Executor, build_executor
from workbench.executors.types import (
    CancelToken,
    OutputChunk,
    RunRequest,
    RunStatus,
    SessionSpec,
)
from workbench.postures.model import Posture, PostureId

COMMAND_LIMIT_S = 30.0  # a floor's command (or a docker call) that takes longer has hung


class Need(StrEnum):
    """Something a group needs from the machine; without it, its rows are skipped."""

    ENGINE = "a Docker engine"
    RUNSC = "the runsc runtime"
    DOCKER_CLI = "the docker command"
    IMAGE = "the sandbox image"
    GIT = "git"


@dataclass(frozen=True, slots=True)
class Goal:
    """A row's goal: `text` for people, and the bounds it checks (None: not checked).

    `max_ratio` bounds ours / floor, `max_excess_s` bounds ours - floor, `max_ours_s` bounds
    ours alone (all on medians).
    """

    text: str
    max_ratio: float | None = None
    max_excess_s: float | None = None
    max_ours_s: float | None = None

    def met(self, ours: Stats, floor: Stats) -> bool:
        """True when every bound holds."""
        held = []
        if self.max_ratio is not None:
            held.append(ours.median <= self.max_ratio * floor.median)
        if self.max_excess_s is not None:
            held.append(ours.median - floor.median <= self.max_excess_s)
        if self.max_ours_s is not None:
            held.append(ours.median <= self.max_ours_s)
        return all(held)


@dataclass(frozen=True, slots=True)
class RowSpec:
    """One row of the table. `cpu` rows measure CPU seconds per call, the others wall time."""

    id: str
    title: str
    ours: str
    floor: str
    goal: Goal
    cpu: bool = False


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a group measured for one row, or why it skipped the row."""

    ours: Stats | None = None
    floor: Stats | None = None
    skipped: str = ""
    note: str = ""


@dataclass(frozen=True, slots=True)
class BenchContext:
    """What every group gets: the mode, a scratch folder removed after the run, and a token
    that tells this run's containers apart from anyone else's."""

    quick: bool
    scratch: Path
    token: str = "bench"

    def rounds(self, full: int, quick: int) -> int:
        """How many interleaved rounds a group runs in this mode."""
        return quick if self.quick else full


GroupRun = Callable[[BenchContext, frozenset[str], dict[str, Outcome]], Coroutine[Any, Any, None]]


@dataclass(frozen=True, slots=True)
class Group:
    """Rows measured together. `run` gets the ids of the selected rows, measures those and
    puts each row's `Outcome` into the dict it is given as soon as it has it (so a row that
    fails later does not lose the rows measured before it).

    `abort` (blocking) removes what a `run` that hangs left behind, so that the calls it is
    stuck in return.
    """

    id: str
    rows: tuple[RowSpec, ...]
    run: GroupRun
    posture: PostureId | None = None
    needs: tuple[Need, ...] = ()
    abort: Callable[[BenchContext], None] | None = None


@dataclass(frozen=True, slots=True)
class RowResult:
    """One finished row: its spec and measurements, or why it was skipped or failed."""

    spec: RowSpec
    group: str
    posture: PostureId | None
    ours: Stats | None = None
    floor: Stats | None = None
    skipped: str = ""
    error: str = ""
    note: str = ""

    @property
    def ratio(self) -> float | None:
        """Median of ours over median of the floor, when both were measured."""
        if self.ours is None or self.floor is None or self.floor.median <= 0:
            return None
        return self.ours.median / self.floor.median

    @property
    def met(self) -> bool | None:
        """Whether the goal held (None when the row was not measured)."""
        if self.ours is None or self.floor is None:
            return None
        return self.spec.goal.met(self.ours, self.floor)


def checked_run(
    executor: Executor, argv: tuple[str, ...], want: str = ""
) -> Callable[[], Awaitable[float]]:
    """A measure of one run of `argv` that fails unless it ends ok with `want` in stdout."""

    async def measure() -> float:
        start = time.perf_counter()
        result = await executor.run(RunRequest(argv), ignore_output, CancelToken())
        elapsed = time.perf_counter() - start
        if result.status is not RunStatus.OK or want not in result.stdout.text:
            raise RuntimeError(f"{' '.join(argv)} ended {result.status}: {result.cause}")
        return elapsed

    return measure


def ignore_output(chunk: OutputChunk, /) -> None:
    """An output sink that drops everything."""
    del chunk


def run_quiet(argv: Sequence[str], **options: Any) -> None:
    """Run a floor's command to its end, without output; raises when it fails or hangs.

    It returns as the command ends: it waits on a pidfd (`subprocess.run` with a timeout polls
    for the end, with sleeps that grow to 50 ms, which would add up to that to a floor).
    """
    argv = list(argv)
    with subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        **options,
    ) as process:
        ended = os.pidfd_open(process.pid)
        try:
            poll = select.poll()
            poll.register(ended, select.POLLIN)
            ready = poll.poll(COMMAND_LIMIT_S * 1000)
        finally:
            os.close(ended)
        if not ready:
            process.kill()
            raise subprocess.TimeoutExpired(argv, COMMAND_LIMIT_S)
        if code := process.wait():
            raise subprocess.CalledProcessError(code, argv)


def scratch_session(folder: Path, name: str = "bench-skill") -> SessionSpec:
    """A session over an empty skill folder and workspace created under `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)  # the hardened posture's throwaway uid must reach the folders
    skill, workspace = folder / name, folder / "workspace"
    for path in (skill, workspace):
        path.mkdir(exist_ok=True)
    (skill / "SKILL.md").write_text(f"---\nname: {name}\ndescription: bench\n---\n")
    return SessionSpec(skill, name, workspace, folder / "runs")


@contextlib.asynccontextmanager
async def started_executor(posture: Posture, session: SessionSpec) -> AsyncIterator[Executor]:
    """An executor for `posture`, started on `session` and always stopped afterwards."""
    executor = build_executor(posture)
    await executor.start(session)
    try:
        yield executor
    finally:
        await executor.stop()
