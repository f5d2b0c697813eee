"""The sandbox image on the real engine: its status, the offline builder's cache and recipe
label, the online build's error without a registry, and the bundled Python example in it."""

import asyncio
import json
import os
from pathlib import Path

import docker
import pytest

from workbench.cli import main
from workbench.executors.docker.executor import DockerExecutor
from workbench.executors.docker.image import (
    ImageError,
    build_offline,
    build_online,
    image_packages,
    image_status,
)
from workbench.executors.types import CancelToken, RunStatus
from workbench.platform.paths import example_skills_dir
from workbench.postures.model import DEFAULT_IMAGE, Posture, PostureId
from workbench.runs.history import RunHistory
from workbench.runs.layout import DataLayout
from workbench.runs.service import RunPlan, RunService

pytestmark = [pytest.mark.docker, pytest.mark.timeout(120)]

TEST_TAG = "skill-workbench-sandbox:image-test"


def test_the_default_image_is_current_with_its_runtimes(
    docker_runtimes: set[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["image", "status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["tag"] == DEFAULT_IMAGE
    assert status["exists"] is True
    assert status["current"] is True
    assert status["id"].startswith("sha256:")
    assert status["size_bytes"] > 0
    assert set(status["runtimes"]) == docker_runtimes


@pytest.fixture
def builder_cache(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The offline builder's real cache (the tests' XDG_CACHE_HOME is a fresh folder)."""
    monkeypatch.delenv("XDG_CACHE_HOME")
    cache = Path.home() / ".cache" / "skill-workbench"
    if not any(cache.glob("rootfs-*.tar")):
        pytest.skip("no cached root filesystem: run packaging/sandbox-image/build-offline.sh")
    return cache


def test_an_offline_build_reuses_the_cache_and_skips_a_current_image(
    docker_runtimes: set[str], builder_cache: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("the offline builder needs root")
    client = docker.from_env()
    try:
        lines: list[str] = []
        build_offline(TEST_TAG, lines.append)
        assert any("reusing the cached root filesystem" in line for line in lines)
        assert not any("debootstrap" in line for line in lines)
        status = image_status(TEST_TAG)
        assert status.exists and status.current
        again: list[str] = []
        build_offline(TEST_TAG, again.append)
        assert again == [
            f"build-offline: {TEST_TAG} is current (recipe {status.recipe}); nothing to do"
        ]
        assert image_status(TEST_TAG).image_id == status.image_id
    finally:
        client.api.remove_image(TEST_TAG, force=True)
        client.close()


def test_an_online_build_without_a_registry_suggests_offline(docker_runtimes: set[str]) -> None:
    with pytest.raises(ImageError, match="workbench image build --offline"):
        build_online(TEST_TAG, lambda _line: None)
    assert not image_status(TEST_TAG).exists


@pytest.mark.parametrize("posture_id", [PostureId.DOCKER, PostureId.GVISOR])
def test_the_python_example_runs_in_the_image(
    posture_id: PostureId, tmp_path: Path, docker_runtimes: set[str]
) -> None:
    if posture_id is PostureId.GVISOR and "runsc" not in docker_runtimes:
        pytest.skip("the engine has no runsc runtime")
    layout = DataLayout(tmp_path / "data")
    service = RunService(layout, RunHistory(layout.history_path), DockerExecutor)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello\n")
    tmp_path.chmod(0o755)
    argv = ("sh", "-c", 'python3 "$SKILL_DIR/scripts/report.py" && node -e "console.log(6*7)"')
    skill = example_skills_dir() / "workspace-report"
    plan = RunPlan("workspace-report", skill, Posture(posture_id), argv, workspace)
    completed = asyncio.run(service.run_once(plan, lambda _chunk: None, CancelToken()))
    assert completed.result.status is RunStatus.OK, completed.result.stderr.text
    assert completed.result.stdout.text.splitlines()[-1] == "42"
    assert "notes.txt" in (workspace / "report.md").read_text()


def test_the_image_holds_every_package_of_the_list(docker_runtimes: set[str]) -> None:
    """Whichever way it was built, the image has every package of packages.txt installed."""
    client = docker.from_env()
    try:
        listed = client.containers.run(
            DEFAULT_IMAGE,
            ["dpkg-query", "-W", "-f", "${Package} ${Status}\\n"],
            network_mode="none",
            remove=True,
        ).decode()
    finally:
        client.close()
    installed = {line.split()[0] for line in listed.splitlines() if line.endswith("ok installed")}
    assert set(image_packages()) <= installed
