"""The network between the app and a remote engine as a fault source: a link cut mid-copy, an
engine that stops answering, a slow link. The causes are clear, the run's outcome is kept and
the workspace is never half-written. A real engine that does not see our files, behind a real
TCP link the test cuts (`faulty_link`)."""

import asyncio
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.docker.faulty_link import FaultyLink
from tests.unit.workspace.conftest import _listing
from workbench.executors.docker import executor as docker_executor
from workbench.executors.docker.executor import DockerExecutor
from workbench.executors.types import CancelToken, RunRequest, RunResult, RunStatus, SessionSpec
from workbench.postures.model import MIB, Posture, PostureId

pytestmark = [pytest.mark.docker, pytest.mark.remote_engine, pytest.mark.timeout(120)]

WORKSPACE_ARCHIVE = "archive?path=%2Fworkspace"
WRITE = "head -c 4000000 /dev/urandom > made.bin && echo changed >> kept.txt"
IMPATIENT_S = 5  # the stall test's engine client timeout (see `impatient_remote`)


class Remote:
    """A started docker executor on the remote engine, through a faulty link."""

    def __init__(self, engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
        target = urlparse(engine.replace("tcp://", "http://"))
        self.link = FaultyLink(target.hostname or "", target.port or 0)
        monkeypatch.setenv("DOCKER_HOST", self.link.url)
        self.base = Path(tempfile.mkdtemp(prefix="wb-faults-"))
        (self.base / "skill").mkdir()
        (self.base / "skill" / "SKILL.md").write_text("---\nname: demo\n---\n")
        self.workspace = self.base / "workspace"
        self.workspace.mkdir()
        (self.workspace / "kept.txt").write_text("before\n")
        (self.workspace / "big.bin").write_bytes(os.urandom(4 * MIB))
        spec = SessionSpec(self.base / "skill", "demo", self.workspace, self.base / "runs")
        self.loop = asyncio.new_event_loop()
        self.executor = DockerExecutor(Posture(PostureId.DOCKER))
        self.loop.run_until_complete(self.executor.start(spec))
        self.said: list[str] = []

    def run(self, script: str) -> RunResult:
        request = RunRequest(("sh", "-c", script), on_progress=self.said.append)
        run = self.executor.run(request, lambda chunk: None, CancelToken())
        return self.loop.run_until_complete(run)

    def close(self) -> None:
        self.loop.run_until_complete(self.executor.stop())
        self.loop.close()
        self.link.close()
        shutil.rmtree(self.base, ignore_errors=True)


def _started(remote_engine: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Remote]:
    started = Remote(remote_engine, monkeypatch)
    yield started
    started.close()


@pytest.fixture
def remote(remote_engine: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Remote]:
    yield from _started(remote_engine, monkeypatch)


@pytest.fixture
def impatient_remote(remote_engine: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Remote]:
    """A `Remote` whose engine client gives up on a silent engine after `IMPATIENT_S`, not the
    executor's `ENGINE_TIMEOUT_S`: the same path to the same cause, sooner."""
    monkeypatch.setattr(docker_executor, "ENGINE_TIMEOUT_S", IMPATIENT_S)
    yield from _started(remote_engine, monkeypatch)


def _cautions(result: RunResult) -> str:
    return " ".join(w.text for w in result.warnings)


def _fault_while_copying_back(remote: Remote, fault: str, cause: str) -> None:
    """`fault` strikes the copy back: the run's outcome is kept, the caution names `cause`,
    and the workspace is as it was."""
    before = _listing(remote.workspace)
    remote.link.fault("GET", WORKSPACE_ARCHIVE, fault, after=MIB)
    result = remote.run(WRITE)
    assert remote.link.struck.is_set()
    assert result.status is RunStatus.OK
    assert "The workspace was not brought back from the engine" in _cautions(result)
    assert cause in _cautions(result)
    assert _listing(remote.workspace) == before
    assert not (result.run_dir / "workspace-copy").exists()  # type: ignore[operator]


def test_a_link_cut_while_copying_back_keeps_the_outcome_and_the_workspace(
    remote: Remote,
) -> None:
    _fault_while_copying_back(remote, "cut", "the connection was cut")


def test_an_engine_that_stops_answering_while_copying_back_keeps_the_outcome_and_the_workspace(
    impatient_remote: Remote,
) -> None:
    _fault_while_copying_back(impatient_remote, "stall", "stopped answering")


def test_a_link_cut_while_copying_in_runs_nothing_and_says_why(remote: Remote) -> None:
    before = _listing(remote.workspace)
    remote.link.fault("PUT", WORKSPACE_ARCHIVE, "cut", after=MIB)
    result = remote.run(WRITE)
    assert result.status is RunStatus.ERROR
    assert result.cause.startswith("Could not copy the workspace to the engine")
    assert _listing(remote.workspace) == before
    again = remote.run("cat kept.txt; head -c 4 big.bin | wc -c")  # the link works again
    assert again.status is RunStatus.OK
    assert again.stdout.text == "before\n4\n"


def test_a_slow_link_copies_with_progress(remote: Remote) -> None:
    (remote.workspace / "bigger.bin").write_bytes(os.urandom(12 * MIB))  # more than buffers hold
    remote.link.bytes_per_s = 8 * MIB
    result = remote.run(WRITE)
    assert result.status is RunStatus.OK, result.cause
    assert (remote.workspace / "kept.txt").read_text() == "before\nchanged\n"
    assert (remote.workspace / "made.bin").stat().st_size == 4_000_000
    assert any(line.startswith("Copying the workspace to the engine") for line in remote.said)
    assert any(line.startswith("Copying the workspace back") for line in remote.said)
