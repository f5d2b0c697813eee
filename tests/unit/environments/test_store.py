"""The environments folder: complete environments or none, content-addressed ids, and the
build folders of builders that are gone cleared."""

import json
import os
from pathlib import Path

import pytest

from workbench.environments.store import Environment, EnvironmentStore, Inputs
from workbench.environments.targets import Target, TargetKind
from workbench.errors import EnvironmentBuildError

TARGET = Target(TargetKind.IMAGE, "3.11", "x86_64", "2.36", "/usr/bin/python3", "img", "sha256:1")


def inputs(*python: str, target: Target = TARGET) -> Inputs:
    return Inputs(python=python, node=(), system=(), target=target)


def publish(store: EnvironmentStore, asked: Inputs) -> Environment:
    folder = store.begin(asked.env_id)
    (folder / "python").mkdir()
    (folder / "python" / "mod.py").write_text("x = 1\n")
    environment = Environment(asked.env_id, folder, asked, "s", "/skills/s", 1.0, ("six 1.17",))
    return store.publish(folder, environment)


def test_the_id_is_the_content_of_the_inputs() -> None:
    assert inputs("six", "PyYAML").env_id == inputs("PyYAML", "six").env_id
    assert inputs("six").env_id != inputs("six==1.16").env_id
    other = Target(
        TargetKind.IMAGE, "3.11", "x86_64", "2.36", "/usr/bin/python3", "img", "sha256:2"
    )
    assert inputs("six").env_id != inputs("six", target=other).env_id


def test_a_published_environment_reads_back_whole_and_open_to_other_users(tmp_path: Path) -> None:
    store = EnvironmentStore(tmp_path / "envs")
    asked = inputs("six")
    placed = publish(store, asked)
    assert placed.path == tmp_path / "envs" / asked.env_id
    assert store.get(asked.env_id) == placed
    assert store.list() == [placed]
    assert (placed.path / "python" / "mod.py").stat().st_mode & 0o777 == 0o644
    assert placed.for_run().python == ("python",)
    assert not [p for p in (tmp_path / "envs").iterdir() if p.name.startswith(".")]


def test_a_failed_or_interrupted_build_leaves_nothing_and_touches_no_other(tmp_path: Path) -> None:
    store = EnvironmentStore(tmp_path / "envs")
    kept = publish(store, inputs("six"))
    folder = store.begin(inputs("pyyaml").env_id)
    (folder / "half.py").write_text("")
    store.discard(folder)
    gone = tmp_path / "envs" / f".build-{inputs('x').env_id}-999999999-abcdef"  # no such pid
    gone.mkdir()
    alive = tmp_path / "envs" / f".build-{inputs('y').env_id}-{os.getpid()}-abcdef"
    alive.mkdir()
    store.begin(inputs("z").env_id)  # clears what builders that are gone left
    assert not gone.exists() and alive.exists()
    assert store.list() == [kept]
    assert store.get(inputs("pyyaml").env_id) is None


def test_a_manifest_that_is_not_one_is_no_environment(tmp_path: Path) -> None:
    store = EnvironmentStore(tmp_path / "envs")
    (tmp_path / "envs" / "abc").mkdir(parents=True)
    (tmp_path / "envs" / "abc" / "manifest.json").write_text(json.dumps({"env_id": 1}))
    assert store.list() == []
    assert store.get("../abc") is None
    with pytest.raises(EnvironmentBuildError, match="No environment 'abc'"):
        store.remove("abc")


def test_removing_takes_it_away_at_once(tmp_path: Path) -> None:
    store = EnvironmentStore(tmp_path / "envs")
    placed = publish(store, inputs("six"))
    assert store.remove(placed.env_id) == placed
    assert store.list() == [] and not placed.path.exists()
    assert list((tmp_path / "envs").iterdir()) == []


def test_the_skill_record_keeps_edits_until_reset(tmp_path: Path) -> None:
    store = EnvironmentStore(tmp_path / "envs")
    skill = tmp_path / "skill"
    store.update_skill_record(skill, python=["six"], built={"image": "abc"})
    assert store.skill_record(skill)["python"] == ["six"]
    store.update_skill_record(skill, python=None)
    assert "python" not in store.skill_record(skill)
    assert store.skill_record(skill)["built"] == {"image": "abc"}
