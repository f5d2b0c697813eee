"""`workbench pool fill|status|drain` and `workbench run` taking a warm container, run as a
user would, against the real engine."""

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli_run import env, skill, workbench
from tests.e2e.test_podman_engine import podman_host

__all__ = ["env", "podman_host", "skill"]  # fixtures


WARM = "Warm container from the pool (never used, checked clean)"
COLD = "Container started cold (no warm one ready)"
REFILL_S = 30.0


def document(done: subprocess.CompletedProcess[str], kind: str) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    payload: dict[str, Any] = json.loads(done.stdout)
    assert payload["schema"] == f"skill-workbench/{kind}/1"
    return payload


def pooled(environment: dict[str, str], key: str) -> list[dict[str, Any]]:
    status = document(workbench(environment, "pool", "status", "--json"), "pool-status")
    return [row for row in status["containers"] if row["key"] == key]


def refilled(environment: dict[str, str], key: str, gone: str) -> list[dict[str, Any]]:
    """The key's pooled containers once the detached refill of a run has started one (the
    run does not wait for it): all running, and `gone`, the claimed one, not among them."""
    deadline = time.monotonic() + REFILL_S
    while not (rows := pooled(environment, key)) or any(
        row["name"] == gone or row["state"] != "running" for row in rows
    ):
        assert time.monotonic() < deadline, "no refill"
        time.sleep(0.2)
    return rows


def started(done: subprocess.CompletedProcess[str]) -> str:
    """How the run's container started, as its posture card says."""
    how: str = document(done, "run")["result"]["card"]["started"]
    return how


@pytest.mark.docker
@pytest.mark.slow
def test_fill_then_run_takes_a_warm_container_and_the_pool_keeps_its_size(
    docker_runtimes: set[str], env: dict[str, str], skill: Path, tmp_path: Path
) -> None:
    del docker_runtimes
    workspace = tmp_path / "ws"
    options = ("--skill", skill, "--workspace", workspace)
    try:
        filled = document(
            workbench(env, "pool", "fill", *options, "--memory", "128m", "--size", "1", "--json"),
            "pool-fill",
        )
        key = filled["key"]
        assert (filled["ready"], filled["problem"]) == (1, None)
        assert key == f"demo-skill in {workspace} (docker, 128 MiB, 1 cpus, network none)"
        (before,) = pooled(env, key)
        assert (before["posture"], before["state"]) == ("docker", "running")

        run = ("run", "--posture", "docker", *options, "--json")
        warm = workbench(env, *run, "--memory", "128m", "--", "sh", "-c", "echo hi > made.txt")
        assert started(warm) == WARM
        assert (workspace / "made.txt").read_text() == "hi\n"
        assert len(refilled(env, key, before["name"])) == 1  # the run did not wait for it

        other = workbench(env, *run, "--memory", "256m", "--", "true")  # another key: cold
        assert started(other) == COLD
        assert len(pooled(env, key)) == 1
    finally:
        drained = document(workbench(env, "pool", "drain", "--json"), "pool-drain")
    assert drained["removed"] >= 1
    assert not pooled(env, key)


@pytest.mark.podman
@pytest.mark.slow
def test_podman_hands_out_warm_containers_too(
    podman_host: str, env: dict[str, str], skill: Path, tmp_path: Path
) -> None:
    podman = {**env, "DOCKER_HOST": podman_host}
    options = ("--skill", skill, "--workspace", tmp_path / "ws")
    try:
        filled = document(
            workbench(podman, "pool", "fill", *options, "--size", "1", "--json"), "pool-fill"
        )
        assert filled["ready"] == 1
        (before,) = pooled(podman, filled["key"])
        done = workbench(podman, "run", "--posture", "docker", *options, "--json", "--", "true")
        assert started(done) == WARM
        assert len(refilled(podman, filled["key"], before["name"])) == 1  # before the drain
    finally:
        workbench(podman, "pool", "drain")
    assert not pooled(podman, filled["key"])


def test_fill_refuses_a_size_out_of_range(env: dict[str, str], skill: Path) -> None:
    done = workbench(env, "pool", "fill", "--skill", skill, "--size", "0")
    assert done.returncode == 2
    assert "--size must be 1 to 16" in done.stderr


@pytest.mark.docker
@pytest.mark.slow
def test_a_run_in_a_fresh_workspace_takes_a_container_filled_for_fresh_ones(
    docker_runtimes: set[str], env: dict[str, str], skill: Path
) -> None:
    del docker_runtimes
    try:
        filled = workbench(env, "pool", "fill", "--skill", skill, "--size", "1", "--json")
        key = document(filled, "pool-fill")["key"]
        assert key == "demo-skill in a fresh workspace (docker, 512 MiB, 1 cpus, network none)"
        run = ("run", "--skill", skill, "--posture", "docker", "--json")
        done = workbench(env, *run, "--", "sh", "-c", "echo hi > made.txt; ls -A")
        assert started(done) == WARM
        record = document(done, "run")
        assert record["result"]["stdout"]["text"] == "made.txt\n"
        assert (Path(record["workspace"]) / "made.txt").read_text() == "hi\n"
        assert len(refilled(env, key, "")) == 1
    finally:
        workbench(env, "pool", "drain")
    assert not pooled(env, key)
