"""The capability preview against real runs: the probe lab's cells and the bundled examples'
runs, under every posture, must agree with what the preview predicted for at least
`MIN_AGREEMENT` of the measured (posture, skill) pairs (the README reports the rate); so must
the runs of the diagnosis tests' skills (`tests/fixtures/failing`), which fail for sandbox
reasons."""

import asyncio
from pathlib import Path

import pytest

from workbench.executors import build_executor
from workbench.postures.model import PostureId
from workbench.probes.agreement import measure
from workbench.runs.history import RunHistory
from workbench.runs.layout import DataLayout
from workbench.runs.service import RunService

MIN_AGREEMENT = 0.9
FAILING = Path(__file__).parents[1] / "fixtures" / "failing"


@pytest.fixture
def service(traversable_tmp_path: Path, docker_runtimes: set[str]) -> RunService:
    """A run service over a tmp data folder, where every posture runs."""
    if "runsc" not in docker_runtimes:
        pytest.skip("the engine has no runsc runtime: the gVisor posture cannot be measured")
    layout = DataLayout(traversable_tmp_path / "data")
    return RunService(layout, RunHistory(layout.history_path), build_executor)


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.gvisor
@pytest.mark.timeout(900)
def test_the_preview_predicts_nine_in_ten_probes_and_examples(service: RunService) -> None:
    agreement = asyncio.run(measure(service, list(PostureId)))
    report = "\n".join(agreement.lines())
    print(report)
    assert len(agreement.measured()) >= 80, report  # every probe and example was measured
    assert agreement.rate() >= MIN_AGREEMENT, report


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.gvisor
@pytest.mark.timeout(600)
def test_the_preview_predicts_the_failing_skills(service: RunService) -> None:
    agreement = asyncio.run(measure(service, list(PostureId), examples=[FAILING], lab=False))
    report = "\n".join(agreement.lines())
    print(report)
    assert len(agreement.measured()) >= 35, report
    assert agreement.rate() >= MIN_AGREEMENT, report
