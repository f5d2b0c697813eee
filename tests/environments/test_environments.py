"""Skill environments for real: packages from PyPI and npm, run under every posture.

One environment per target is built for the session (`conftest.built`); these tests run the
skill's scripts with it under local, hardened, docker and gvisor, check it is read-only there
and named in the record, and that a failed, interrupted or starved build leaves nothing.
"""

import asyncio
import contextlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import docker
import psutil
import pytest

from tests.environments.conftest import Built
from workbench.cli import main
from workbench.environments.build import BuildStep, build, remove_image
from workbench.environments.resolve import EnvState, status
from workbench.environments.store import EnvironmentStore, Inputs
from workbench.errors import EnvironmentBuildError
from workbench.executors import build_executor
from workbench.executors.availability import probe_availability
from workbench.executors.types import CancelToken, RunResult, RunStatus, SkillEnvironment
from workbench.platform.paths import APP_NAME
from workbench.postures.model import Posture, PostureId
from workbench.runs.diagnosis import Change, Kind
from workbench.runs.history import RunHistory
from workbench.runs.layout import DataLayout
from workbench.runs.rerun import rerun_plan
from workbench.runs.service import RunPlan, RunService
from workbench.workspace.safe_walk import remove_tree

pytestmark = pytest.mark.timeout(300)

PYTHON_PROBE = ("sh", "-c", 'python3 "$SKILL_DIR/scripts/probe.py"')


def run(built: Built, posture: Posture, argv: tuple[str, ...], env: SkillEnvironment | None):
    """Run `argv` of the session's skill under `posture` with `env`, in a fresh workspace."""
    layout = built.layout
    service = RunService(layout, RunHistory(layout.history_path), build_executor)
    workspace = layout.root / "workspaces" / os.urandom(4).hex()
    workspace.mkdir(parents=True)
    workspace.chmod(0o777)
    plan = RunPlan(built.skill.name, built.skill.path, posture, argv, workspace, environment=env)
    return asyncio.run(service.run_once(plan, lambda _chunk: None, CancelToken()))


def assert_ran_with(result: RunResult, env_id: str, seen_at: str, read_only: bool) -> None:
    assert result.status is RunStatus.OK, result.stderr.text
    lines = result.stdout.text.splitlines()
    assert lines[0] == "six: 1.17.0" or lines[0].startswith("six: ")
    assert lines[1].startswith(f"yaml from {seen_at}")
    assert lines[2] == ("environment read-only" if read_only else "environment writable")
    assert result.card.environment == env_id


def runs_as_its_owner(posture_id: PostureId) -> bool:
    """Whether the command runs as the environment's owner (or root), who may change it: local
    always, hardened unless the workbench runs as root (then a throwaway uid runs it)."""
    return posture_id is PostureId.LOCAL or (posture_id is PostureId.HARDENED and os.geteuid() != 0)


@pytest.mark.parametrize("posture_id", [PostureId.LOCAL, PostureId.HARDENED, PostureId.BUBBLEWRAP])
def test_process_postures_put_the_environment_on_the_path(
    built: Built, posture_id: PostureId
) -> None:
    posture = Posture(posture_id)
    if posture_id is PostureId.BUBBLEWRAP:
        available = probe_availability(posture_id, None)
        if not available.available:
            pytest.skip(available.reason)
    environment = built.for_posture(posture)
    done = run(built, posture, PYTHON_PROBE, environment.for_run())
    read_only = not runs_as_its_owner(posture_id)
    assert_ran_with(done.result, environment.env_id, str(environment.path / "python"), read_only)
    record = built.layout.history_path
    assert record.exists()
    assert done.record.result is not None
    assert done.record.result["card"]["environment"] == environment.env_id


def test_a_rerun_from_history_takes_the_skills_environment(built: Built) -> None:
    posture = Posture(PostureId.LOCAL)
    environment = built.for_posture(posture)
    first = run(built, posture, PYTHON_PROBE, environment.for_run()).record
    plan = rerun_plan(first, Change(), built.layout)
    assert plan.environment is not None and plan.rerun_of == first.run_id
    service = RunService(built.layout, RunHistory(built.layout.history_path), build_executor)
    again = asyncio.run(service.run_once(plan, lambda _chunk: None, CancelToken()))
    assert_ran_with(again.result, environment.env_id, str(environment.path / "python"), False)


@pytest.mark.docker
@pytest.mark.parametrize(
    "posture_id",
    [PostureId.DOCKER, pytest.param(PostureId.GVISOR, marks=pytest.mark.gvisor)],
)
def test_container_postures_mount_the_environment_read_only(
    built: Built, posture_id: PostureId, docker_runtimes: set[str]
) -> None:
    if posture_id is PostureId.GVISOR and "runsc" not in docker_runtimes:
        pytest.skip("the engine has no runsc runtime")
    environment = built.image()
    for_run = environment.for_run()
    done = run(built, Posture(posture_id), PYTHON_PROBE, for_run)
    assert_ran_with(done.result, environment.env_id, "/opt/skill-env/python/yaml", True)
    assert done.result.stdout.text.splitlines()[2] == "environment read-only"
    checks = dict(done.result.card.checks)
    assert checks["Skill environment mounted read-only at /opt/skill-env"] is True
    assert done.result.card.image_id.startswith("sha256:")
    node = run(
        built, Posture(posture_id), ("sh", "-c", 'node "$SKILL_DIR/scripts/pad.js"'), for_run
    )
    assert node.result.status is RunStatus.OK, node.result.stderr.text
    assert node.result.stdout.text == "00042\n"


@pytest.mark.docker
def test_without_its_environment_a_run_says_what_it_lacks(
    built: Built, docker_runtimes: set[str]
) -> None:
    done = run(built, Posture(PostureId.DOCKER), PYTHON_PROBE, None)
    assert done.result.status is RunStatus.FAILED
    diagnosis = done.record.diagnosis
    assert diagnosis is not None and diagnosis.kind is Kind.MISSING_MODULE
    assert diagnosis.cause == "It imports six, which the sandbox image does not have."
    assert diagnosis.suggestion.startswith("Add six to the skill's requirements.txt")
    build = f"workbench env build --skill {shlex.quote(built.skill.name)} --posture docker"
    assert build in diagnosis.suggestion  # the run's own skill, ready to paste
    assert diagnosis.change is not None and diagnosis.change.build_env
    posture = Posture(PostureId.DOCKER)
    yaml = run(built, posture, ("python3", "-c", "import yaml.constructor"), None).record
    assert yaml.diagnosis is not None and yaml.diagnosis.kind is Kind.MISSING_MODULE
    assert yaml.diagnosis.suggestion.startswith("Add PyYAML to the skill's requirements.txt")
    pdf = run(built, posture, ("sh", "-c", "pdftotext in.pdf out.txt"), None).record
    assert pdf.diagnosis is not None and pdf.diagnosis.kind is Kind.MISSING_TOOL
    assert "Debian package poppler-utils" in pdf.diagnosis.suggestion


@pytest.mark.docker
def test_the_state_follows_the_requirements(built: Built, docker_runtimes: set[str]) -> None:
    environment = built.image()
    posture = Posture(PostureId.DOCKER)
    assert status(built.skill, posture, built.store).state is EnvState.BUILT
    built.store.update_skill_record(built.skill.path, python=["PyYAML", "six", "idna"])
    try:
        changed = status(built.skill, posture, built.store)
        assert changed.state is EnvState.OUT_OF_DATE
        assert changed.environment == environment
        assert changed.edited
    finally:
        built.store.update_skill_record(built.skill.path, python=None)
    assert status(built.skill, posture, built.store).state is EnvState.BUILT


def test_a_second_build_of_the_same_inputs_is_a_cache_hit(built: Built) -> None:
    first = built.host()
    steps: list[BuildStep] = []
    again = build(first.inputs, built.skill, built.store, steps.append)
    assert again == first
    assert [step.text for step in steps] == [f"environment {first.env_id} is built already"]


def assert_left_nothing(built: Built, before: list[str]) -> None:
    assert [env.env_id for env in built.store.list()] == before
    assert not [p for p in built.store.root.iterdir() if p.name.startswith(".build-")]


def test_a_package_that_does_not_exist_fails_naming_it(built: Built) -> None:
    base = built.host()
    before = [env.env_id for env in built.store.list()]
    asked = Inputs(("six", "workbench-no-such-package-q7x"), (), (), base.inputs.target)
    with pytest.raises(EnvironmentBuildError) as raised:
        build(asked, built.skill, built.store, lambda _step: None)
    assert str(raised.value).startswith("installing the Python packages (uv) failed:")
    assert "workbench-no-such-package-q7x" in str(raised.value)
    assert_left_nothing(built, before)
    assert (base.path / "python" / "six.py").is_file()  # the earlier one is untouched


def test_a_registry_that_cannot_be_reached_fails_at_its_step(
    built: Built, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    base = built.host()
    before = [env.env_id for env in built.store.list()]
    monkeypatch.setenv("UV_DEFAULT_INDEX", "http://127.0.0.1:9/simple")  # nothing listens
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "cache"))
    asked = Inputs(("six==1.16.0",), (), (), base.inputs.target)
    with pytest.raises(EnvironmentBuildError, match=r"^installing the Python packages \(uv\)"):
        build(asked, built.skill, built.store, lambda _step: None)
    assert_left_nothing(built, before)


def test_an_interrupted_build_leaves_nothing_running_or_stored(
    built: Built, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    base = built.host()
    before = [env.env_id for env in built.store.list()]
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "cache"))  # so uv has work to do

    def interrupt(step: BuildStep) -> None:
        if step.text.startswith(("Using", "Resolved")):
            raise KeyboardInterrupt

    asked = Inputs(("six==1.15.0",), (), (), base.inputs.target)
    with pytest.raises(KeyboardInterrupt):
        build(asked, built.skill, built.store, interrupt)
    assert_left_nothing(built, before)
    running = [
        child
        for child in psutil.Process().children(recursive=True)
        if child.status() != psutil.STATUS_ZOMBIE and child.name() == "uv"
    ]
    assert running == []  # the build's uv was killed and reaped


def test_a_build_that_cannot_write_fails_and_keeps_nothing(built: Built, tmp_path: Path) -> None:
    """A file size limit stands in for a full disk: uv is stopped writing its download."""
    built.host()
    env = {
        **os.environ,
        "XDG_DATA_HOME": str(built.layout.root.parent / "xdg-starved"),
        "UV_CACHE_DIR": str(tmp_path / "cache"),
    }
    starved = subprocess.run(
        ["prlimit", "--fsize=65536", sys.executable, "-m", "workbench", "env", "build",
         "--skill", str(built.skill.path), "--posture", "local", "--python", "pillow"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert starved.returncode == 125, starved.stderr
    assert starved.stderr.splitlines()[-1].startswith(
        "error: installing the Python packages (uv) failed:"
    )
    store_root = DataLayout(built.layout.root.parent / "xdg-starved" / APP_NAME).environments
    try:
        assert not store_root.exists() or not [
            p for p in store_root.iterdir() if p.name not in ("skills", "targets.json")
        ]
    finally:
        remove_tree(store_root)


@pytest.fixture
def default_store() -> Iterator[Path]:
    """The environments folder of the test's own data folder, removed after it (as root it is
    under /var/tmp, outside the test's temporary folders)."""
    root = DataLayout.default().environments
    yield root
    for environment in EnvironmentStore(root).list():
        remove_image(environment)
    remove_tree(root)


def test_the_cli_shows_builds_lists_and_removes(
    built: Built, capsys: pytest.CaptureFixture[str], default_store: Path
) -> None:
    skill = str(built.skill.path)
    assert main(["env", "show", "--skill", skill, "--posture", "local", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["schema"] == "skill-workbench/env-show/1"
    assert shown["declared"]["python"] == ["PyYAML", "six"]
    assert shown["declared"]["python_from"] == ["scripts/requirements.txt"]
    assert shown["proposal"]["node"] == ["left-pad@1.3.0"]
    assert shown["state"] in ("missing", "built")
    assert main(["env", "build", "--skill", skill, "--posture", "local", "--json"]) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert document["schema"] == "skill-workbench/env-build/1"
    assert "PyYAML" in " ".join(document["installed"])
    assert document["installed_node"] == ["left-pad"]
    assert main(["env", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["environments"]
    assert [env["env_id"] for env in listed] == [document["env_id"]]
    assert main(["env", "rm", document["env_id"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["removed"] == [document["env_id"]]
    assert main(["env", "rm", document["env_id"]]) == 125
    assert capsys.readouterr().err.startswith(f"error: No environment '{document['env_id']}'")


@pytest.mark.docker
def test_debian_packages_go_into_a_derived_image_that_runs(
    built: Built, docker_runtimes: set[str]
) -> None:
    target = built.image().inputs.target
    derived = build(Inputs((), (), ("bc",), target), built.skill, built.store, lambda _s: None)
    assert derived.image == f"skill-workbench-env:{derived.env_id}"
    done = run(built, Posture(PostureId.DOCKER), ("sh", "-c", "echo '6*7' | bc"), derived.for_run())
    assert done.result.status is RunStatus.OK, done.result.stderr.text
    assert done.result.stdout.text == "42\n"
    assert done.result.card.image_id == derived.image_id
    before = [env.env_id for env in built.store.list()]
    missing = Inputs((), (), ("bc", "workbench-no-such-deb"), target)
    with pytest.raises(EnvironmentBuildError, match="workbench-no-such-deb"):
        build(missing, built.skill, built.store, lambda _s: None)
    assert_left_nothing(built, before)
    with contextlib.closing(docker.from_env()) as client:
        assert not client.images.list(name=f"skill-workbench-env:{missing.env_id}")
