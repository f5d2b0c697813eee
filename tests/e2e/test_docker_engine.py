"""The Docker engine CI starts is real: postures see it, and the sandbox image runs."""

import json
import subprocess
import sys

import docker
import pytest

from workbench.postures import DEFAULT_IMAGE

pytestmark = pytest.mark.docker


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
