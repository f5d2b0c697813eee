"""The preview agreement's runs of example skills: pairs in the skills' then the postures' order
however the runs interleave, and a posture whose session cannot start is left unmeasured, not
fatal. Real runs under local; the docker posture's engine is one that does not answer."""

import asyncio
from pathlib import Path

import pytest

from workbench.executors import build_executor
from workbench.postures.model import PostureId
from workbench.probes.agreement import measure
from workbench.runs.history import RunHistory
from workbench.runs.layout import DataLayout
from workbench.runs.service import RunService

DOCKER, LOCAL = PostureId.DOCKER, PostureId.LOCAL


def _skill(root: Path, name: str, command: str) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    front = f"name: {name}\ndescription: an example\nmetadata:\n  command: {command}\n"
    (folder / "SKILL.md").write_text(f"---\n{front}---\n")


def test_pairs_keep_the_order_and_a_session_that_cannot_start_is_not_measured(
    traversable_tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")  # nothing answers there
    examples = traversable_tmp_path / "examples"
    _skill(examples, "alpha", "echo alpha")
    _skill(examples, "beta", "exit 3")
    layout = DataLayout(traversable_tmp_path / "data")
    service = RunService(layout, RunHistory(layout.history_path), build_executor)

    agreement = asyncio.run(measure(service, [DOCKER, LOCAL], examples=[examples], lab=False))

    pairs = agreement.pairs
    assert [(pair.skill, pair.posture) for pair in pairs] == [
        ("alpha", DOCKER),
        ("alpha", LOCAL),
        ("beta", DOCKER),
        ("beta", LOCAL),
    ]
    for pair in pairs:
        if pair.posture is DOCKER:
            assert pair.actual is None
            assert pair.evidence.startswith("the workbench could not run it: ")
        else:
            assert pair.actual is not None, pair.evidence
    assert len(agreement.measured()) == 2
