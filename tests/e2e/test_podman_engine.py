"""The docker posture on a real Podman engine, through its Docker-compatible socket.

The same code as for Docker (`DOCKER_HOST=unix:///run/podman/podman.sock`): the engine is
named as Podman, and the sandbox's limits act and are reported as they are under Docker.
CI starts `podman system service` on that socket and loads the sandbox image into it.
"""

import json
import os
import socket
from pathlib import Path
from typing import Any

import docker
import pytest
from docker.errors import DockerException

from tests.e2e.test_cli_run import workbench

pytestmark = [pytest.mark.podman, pytest.mark.slow, pytest.mark.timeout(120)]

PODMAN_SOCKET = "/run/podman/podman.sock"
SKILL = Path(__file__).parents[2] / "resources" / "skills" / "workspace-report"


@pytest.fixture(scope="module")
def podman_host() -> str:
    """`DOCKER_HOST` for Podman's socket; skips when no Podman answers there."""
    host = f"unix://{PODMAN_SOCKET}"
    # A plain connection first: docker-py leaks its socket when the engine is not there (a
    # stale socket file left by an ended service), and the leak surfaces in a later test.
    with socket.socket(socket.AF_UNIX) as probe:
        if probe.connect_ex(PODMAN_SOCKET):
            pytest.skip(f"no Podman answers on {PODMAN_SOCKET} (see .ci/run)")
    try:
        client = docker.DockerClient(base_url=host, timeout=5)
    except DockerException:
        pytest.skip(f"no Podman answers on {PODMAN_SOCKET} (see .ci/run)")
    try:
        components = client.version().get("Components", [])
    finally:
        client.close()
    if not any("podman" in str(part.get("Name", "")).lower() for part in components):
        pytest.skip(f"the engine on {PODMAN_SOCKET} is not Podman")
    return host


def _json(host: str, *args: str) -> dict[str, Any]:
    """The document `workbench ARGS` prints (with --json among ARGS) on the engine at `host`."""
    document: dict[str, Any] = json.loads(
        workbench({**os.environ, "DOCKER_HOST": host}, *args).stdout
    )
    return document


def _run(host: str, *options_and_command: str) -> dict[str, Any]:
    document = _json(
        host, "run", "--skill", str(SKILL), "--posture", "docker", "--json", *options_and_command
    )
    result: dict[str, Any] = document["result"]
    return result


def test_postures_name_podman_and_offer_the_docker_posture(podman_host: str) -> None:
    document = _json(podman_host, "postures", "--json")
    assert document["engine"] == f"podman at {podman_host} (DOCKER_HOST)"
    docker_posture = next(p for p in document["postures"] if p["id"] == "docker")
    assert docker_posture["available"] is True, docker_posture


def test_a_run_writes_the_workspace_as_the_sandbox_user(podman_host: str) -> None:
    result = _run(podman_host, "--", "sh", "-c", "id -u > uid.txt")
    assert result["status"] == "ok", result["cause"]
    assert [change["path"] for change in result["changes"]] == ["uid.txt"]
    checks = dict(map(tuple, result["card"]["checks"]))
    assert all(checks.values()), checks


@pytest.mark.parametrize(
    ("options", "command", "status", "cause"),
    [
        (
            ("--memory", "64m"),
            ("python3", "-c", "b = []\nwhile True: b.append(bytearray(10**7))"),
            "oom_killed",
            "memory limit 64 MiB",
        ),
        (("--timeout", "2"), ("sh", "-c", "sleep 60 & sleep 60 & sleep 60"), "timed_out", "2 s"),
        (
            ("--pids", "32"),
            ("sh", "-c", "for i in $(seq 100); do sleep 5 & done; wait"),
            "limit_exceeded",
            "process limit 32",
        ),
    ],
    ids=["memory-bomb", "timeout-with-children", "fork-bomb"],
)
def test_a_limit_ends_the_run_with_its_cause_and_nothing_left(
    podman_host: str, options: tuple[str, ...], command: tuple[str, ...], status: str, cause: str
) -> None:
    result = _run(podman_host, *options, "--", *command)
    assert result["status"] == status
    assert cause in result["cause"]
    assert result["leftover_processes"] == 0
