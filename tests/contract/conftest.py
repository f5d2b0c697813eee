"""The contract harness: started executors of every available posture, one event loop per test.

Adding a posture to the contract suite is one line in `CONTRACT_POSTURES`. The docker posture
runs twice: on the engine this machine uses, and (`docker-remote`) on the engine named by
`WORKBENCH_REMOTE_ENGINE`, which does not see the test's files (`.ci/remote-engine` starts one),
so every case also holds with the workspace copied in and out.
"""

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from workbench.executors import Executor, build_executor
from workbench.executors.types import (
    CancelToken,
    OutputChunk,
    RunRequest,
    RunResult,
    SessionSpec,
)
from workbench.monitor.sample import ResourceSample
from workbench.postures.model import Posture, PostureId

REMOTE_DOCKER = "docker-remote"  # the docker posture on the engine that does not see our files
DOCKER_ON_BOTH_ENGINES = [
    pytest.param(PostureId.DOCKER, marks=pytest.mark.docker),
    pytest.param(REMOTE_DOCKER, marks=[pytest.mark.docker, pytest.mark.remote_engine]),
]
CONTRACT_POSTURES = [
    PostureId.LOCAL,
    PostureId.HARDENED,
    PostureId.BUBBLEWRAP,
    DOCKER_ON_BOTH_ENGINES[0],
    pytest.param(PostureId.GVISOR, marks=[pytest.mark.docker, pytest.mark.gvisor]),
    DOCKER_ON_BOTH_ENGINES[1],
]
CONTAINER_POSTURES = {PostureId.DOCKER, PostureId.GVISOR}  # gated on a Docker engine
# Postures whose processes the host sees. A container's escapees end with the container, which
# the run service removes after every run; gVisor's are not visible here. (Bubblewrap's stay in
# its PID namespace, whose PID 1 is its own.)
HOST_POSTURES = [PostureId.LOCAL, PostureId.HARDENED, PostureId.BUBBLEWRAP]


def zombie_children(since: float) -> list[int]:
    """Zombie children of this (subreaper) test process born after `since`."""
    return [
        child.pid
        for child in psutil.Process().children()
        if child.status() == psutil.STATUS_ZOMBIE and child.create_time() >= since
    ]


@dataclass
class Ran:
    """A finished run and everything the sink received."""

    result: RunResult
    chunks: list[OutputChunk] = field(default_factory=list)
    samples: list[ResourceSample] = field(default_factory=list)


class Harness:
    """A started executor of one posture on a fresh skill folder and workspace."""

    def __init__(self, posture_id: PostureId, base: Path) -> None:
        self.posture_id = posture_id
        self.loop = asyncio.new_event_loop()
        self.skill_dir = base / "skill"
        self.workspace = base / "workspace"
        self.skill_dir.mkdir()
        self.workspace.mkdir()
        self.session = SessionSpec(self.skill_dir, "skill", self.workspace, base / "runs")
        self._started: list[Executor] = []
        try:
            self.executor = self.start(Posture(posture_id))
        except BaseException:
            self.loop.close()  # left open, it would fail a later test as an unraisable warning
            raise

    def start(self, posture: Posture, session: SessionSpec | None = None) -> Executor:
        """Build and start an executor for `posture` in this harness's session (or `session`)."""
        executor = build_executor(posture)
        try:
            self.loop.run_until_complete(executor.start(session or self.session))
        except BaseException:
            with contextlib.suppress(Exception):  # its engine client and sockets
                self.loop.run_until_complete(executor.stop())
            raise
        self._started.append(executor)
        return executor

    def posture(self, **limits: float) -> Posture:
        """This harness's posture with some limits changed."""
        return Posture(self.posture_id).with_limits(**limits)

    def run(
        self,
        *argv: str,
        executor: Executor | None = None,
        cancel_after: float | None = None,
        **request: object,
    ) -> Ran:
        """Run `argv` to its end; `cancel_after` presses Stop after that many seconds."""
        executor = executor or self.executor
        ran_chunks: list[OutputChunk] = []
        ran_samples: list[ResourceSample] = []
        req = RunRequest(tuple(argv), on_sample=ran_samples.append, **request)  # type: ignore[arg-type]
        cancel = CancelToken()

        def sink(chunk: OutputChunk) -> None:
            ran_chunks.append(chunk)

        async def go() -> RunResult:
            if cancel_after is not None:
                self.loop.call_later(cancel_after, cancel.cancel)
            return await executor.run(req, sink, cancel)

        result = self.loop.run_until_complete(go())
        return Ran(result, ran_chunks, ran_samples)

    def close(self) -> None:
        for executor in self._started:
            self.loop.run_until_complete(executor.stop())
        self.loop.close()


@pytest.fixture
def reachable_dir() -> Iterator[Path]:
    """A temporary folder that a throwaway uid can reach (tmp_path's parents are 0700)."""
    base = Path(tempfile.mkdtemp(prefix="wb-contract-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _started(request: pytest.FixtureRequest, base: Path) -> Iterator[Harness]:
    posture_id = request.param
    if posture_id == REMOTE_DOCKER:
        request.getfixturevalue("remote_engine")
        posture_id = PostureId.DOCKER
    if posture_id in CONTAINER_POSTURES:
        request.getfixturevalue("docker_runtimes")  # skips (or fails) without an engine
    h = Harness(posture_id, base)
    yield h
    h.close()


@pytest.fixture(params=CONTRACT_POSTURES, ids=str)
def harness(request: pytest.FixtureRequest, reachable_dir: Path) -> Iterator[Harness]:
    """A started executor of each contract posture."""
    yield from _started(request, reachable_dir)


@pytest.fixture(params=DOCKER_ON_BOTH_ENGINES, ids=str)
def container_harness(request: pytest.FixtureRequest, reachable_dir: Path) -> Iterator[Harness]:
    """A started executor of the docker posture, on the local engine and on the remote one."""
    yield from _started(request, reachable_dir)


@pytest.fixture(params=HOST_POSTURES, ids=lambda p: p.value)
def host_harness(request: pytest.FixtureRequest, reachable_dir: Path) -> Iterator[Harness]:
    """A started executor of each posture whose processes run on the host, as the app's."""
    h = Harness(request.param, reachable_dir)
    yield h
    h.close()


@pytest.fixture
def hardened(reachable_dir: Path) -> Iterator[Harness]:
    """A started hardened executor (for the posture's own tests)."""
    h = Harness(PostureId.HARDENED, reachable_dir)
    yield h
    h.close()


@pytest.fixture
def bubblewrap(reachable_dir: Path) -> Iterator[Harness]:
    """A started bubblewrap executor (for the posture's own tests)."""
    h = Harness(PostureId.BUBBLEWRAP, reachable_dir)
    yield h
    h.close()
