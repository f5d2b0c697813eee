"""The Docker engine CI starts is real: postures see it, the sandbox image runs, and no
container outlives a workbench killed mid-run."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest
from docker.errors import NotFound

from tests.e2e.test_cli_run import env, skill, workbench
from workbench.executors.docker.owner import name_owner
from workbench.executors.docker.spec import LABEL_APP
from workbench.postures.model import DEFAULT_IMAGE

pytestmark = pytest.mark.docker
__all__ = ["env", "skill"]  # fixtures
SKILL_RUNNING_S = 60.0


def test_postures_report_the_engine(docker_runtimes: set[str]) -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "workbench", "postures", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    postures = {p["id"]: p for p in json.loads(shown.stdout)["postures"]}
    assert postures["docker"]["available"] is True
    assert postures["gvisor"]["available"] is ("runsc" in docker_runtimes)
    if not postures["gvisor"]["available"]:
        assert "runsc" in postures["gvisor"]["availability_reason"]


def test_sandbox_image_runs_locked_down(docker_runtimes: set[str]) -> None:
    client = docker.from_env()
    try:
        output = client.containers.run(
            DEFAULT_IMAGE,
            ["sh", "-c", "id -u; touch /etc/x 2>/dev/null || echo read-only"],
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            remove=True,
        )
    finally:
        client.close()
    assert output.decode().split() == ["1000", "read-only"]


def session_of(client: docker.DockerClient, pid: int) -> str:
    """The id of the session container process `pid` owns (by its name), or ""."""
    for item in client.api.containers(filters={"label": [LABEL_APP]}):
        owners = [name_owner(name).split(" ") for name in item["Names"]]
        if any(len(fields) == 5 and fields[3] == str(pid) for fields in owners):
            return str(item["Id"])
    return ""


def killed_mid_run(
    client: docker.DockerClient, env: dict[str, str], options: tuple[str | Path, ...]
) -> str:
    """Start `workbench run OPTIONS` of a skill that sleeps, SIGKILL it once the skill runs in
    its container; that container's id (still running, as the engine says)."""
    workspace = Path(options[options.index("--workspace") + 1])
    argv = [sys.executable, "-m", "workbench", "run", *map(str, options), "--timeout", "120"]
    command = ["--", "sh", "-c", "touch started; sleep 300"]
    with subprocess.Popen(
        [*argv, *command], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as cli:
        try:
            deadline = time.monotonic() + SKILL_RUNNING_S
            while not (workspace / "started").exists():
                assert cli.poll() is None and time.monotonic() < deadline, "the skill never ran"
                time.sleep(0.2)
            container = session_of(client, cli.pid)
        finally:
            cli.send_signal(signal.SIGKILL)
    assert container, "no session container names the CLI as its owner"
    assert client.api.inspect_container(container)["State"]["Running"] is True
    return container


def gone(client: docker.DockerClient, container_id: str) -> bool:
    try:
        client.api.inspect_container(container_id)
    except NotFound:
        return True
    return False


@pytest.mark.slow
@pytest.mark.parametrize(
    ("posture", "warm", "next_command"),
    [
        ("docker", False, "run"),
        ("gvisor", False, "pool drain"),
        ("docker", True, "pool status"),
        ("docker", False, "gui"),
    ],
)
def test_a_workbench_killed_mid_run_leaves_no_container_past_the_next_command(
    docker_runtimes: set[str],
    env: dict[str, str],
    skill: Path,
    tmp_path: Path,
    posture: str,
    warm: bool,
    next_command: str,
) -> None:
    if posture == "gvisor" and "runsc" not in docker_runtimes:
        pytest.skip("the engine has no runsc runtime")
    (tmp_path / "ws").mkdir()
    session = ("--skill", skill, "--workspace", tmp_path / "ws")
    commands: dict[str, tuple[str | Path, ...]] = {
        "run": ("run", *session, "--posture", "docker", "--", "true"),
        "pool drain": ("pool", "drain"),
        "pool status": ("pool", "status"),
        "gui": ("gui", "--skills", tmp_path, "--screenshot", tmp_path / "start.png"),
    }
    client = docker.from_env()
    try:
        if warm:  # the run takes a container `workbench pool fill` started, which has no owner
            filled = workbench(env, "pool", "fill", *session, "--size", "1")
            assert filled.returncode == 0, filled.stderr
        container = killed_mid_run(client, env, (*session, "--posture", posture))
        after = workbench(env, *commands[next_command])
        assert after.returncode == 0, after.stderr
        assert gone(client, container)
    finally:
        workbench(env, "pool", "drain")
        client.close()
