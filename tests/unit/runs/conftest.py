"""Fixtures for the run tests: a finished `RunResult` with hostile output and some changes."""

from collections.abc import Callable
from pathlib import Path

import pytest

from workbench.executors.types import CapturedOutput, PostureCard, RunResult, RunStatus
from workbench.postures.description import assess
from workbench.postures.model import Posture, PostureId
from workbench.runs.history import RunHistory
from workbench.runs.record import RunRecord
from workbench.workspace.changes import ChangeKind, EntryType, FileChange

HOSTILE = "<script>alert('x')</script> & [click](javascript:evil) ```"


def make_result() -> RunResult:
    """A finished run of the local posture that printed hostile text and changed two files."""
    posture = Posture(PostureId.LOCAL)
    return RunResult(
        run_id="r1",
        status=RunStatus.FAILED,
        cause=f"exited with code 3 {HOSTILE}",
        exit_code=3,
        signal=None,
        wall_seconds=0.5,
        cpu_seconds=0.1,
        peak_rss_bytes=1000,
        peak_processes=1,
        stdout=CapturedOutput(HOSTILE + "\n", 80, False, Path("/tmp/stdout.log")),
        stderr=CapturedOutput("oops\n", 5, False, None),
        card=PostureCard(posture, checks=(("wall-clock timeout 60 s", True),)),
        warnings=tuple(assess(posture)),
        changes=(
            FileChange(f"{HOSTILE}.txt", ChangeKind.ADDED, after_type=EntryType.FILE),
            FileChange(
                "tool.sh",
                ChangeKind.MODE_CHANGED,
                EntryType.FILE,
                EntryType.FILE,
                before_mode=0o644,
                after_mode=0o755,
            ),
        ),
    )


def make_record(run_id: str, started_at: float = 1_700_000_000.0) -> RunRecord:
    """A just-started record of a run of `sh -c` in /tmp/ws."""
    return RunRecord(
        run_id=run_id,
        skill_name="demo",
        skill_dir=Path("/skills/demo"),
        posture="local",
        argv=("sh", "-c", "echo hi"),
        workspace=Path("/tmp/ws"),
        run_dir=Path(f"/tmp/runs/{run_id}"),
        started_at=started_at,
    )


@pytest.fixture
def result() -> RunResult:
    """`make_result()`: a failed local run with hostile text in its output and changes."""
    return make_result()


@pytest.fixture
def record_factory() -> Callable[..., RunRecord]:
    """`make_record(run_id, started_at=...)`."""
    return make_record


@pytest.fixture
def history(tmp_path: Path) -> RunHistory:
    """An empty history in a tmp folder."""
    return RunHistory(tmp_path / "data" / "history.sqlite3")
