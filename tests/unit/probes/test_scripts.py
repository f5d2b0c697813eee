"""The shell probes themselves, run directly under dash and busybox sh (the container's shell)."""

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench.probes.catalogue import probe_skills_dir
from workbench.probes.site import host_route_off_machine

SHELLS = [["sh"]] + ([["busybox", "sh"]] if shutil.which("busybox") else [])


@pytest.fixture(params=SHELLS, ids=lambda shell: " ".join(shell))
def shell(request: pytest.FixtureRequest) -> list[str]:
    """A POSIX shell to run the probes with."""
    return list(request.param)


def run_probe(
    shell: list[str], skill: str, *args: str, cwd: Path, env: dict[str, str] | None = None
) -> str:
    """Run a probe script; returns its stdout."""
    script = probe_skills_dir() / skill / "scripts" / "probe.sh"
    done = subprocess.run(
        [*shell, str(script), *args],
        cwd=cwd,
        env={"PATH": os.environ["PATH"], **(env or {})},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.stdout


def test_env_secret_is_found_in_the_environment_but_not_printed(
    shell: list[str], tmp_path: Path
) -> None:
    env = {"CANARY_TOKEN": "s3cr3t"}
    out = run_probe(
        shell, "probe-env-secret", "env", "CANARY_TOKEN", "s3cr3t", cwd=tmp_path, env=env
    )
    assert out == "PROBE env reached own-environment\n"
    out = run_probe(shell, "probe-env-secret", "env", "CANARY_TOKEN", "s3cr3t", cwd=tmp_path)
    assert out == "PROBE env blocked not-in-environment\n"
    out = run_probe(shell, "probe-env-secret", "env", "A;rm", "x", cwd=tmp_path)
    assert out == "PROBE env blocked bad-arguments\n"


def test_read_file_compares_the_canary(shell: list[str], tmp_path: Path) -> None:
    canary = tmp_path / "canary.txt"
    canary.write_text("tok\n")
    assert run_probe(shell, "probe-read-file", "r", str(canary), "tok", cwd=tmp_path) == (
        "PROBE r reached read-canary\n"
    )
    assert run_probe(shell, "probe-read-file", "r", str(canary), "other", cwd=tmp_path) == (
        "PROBE r blocked other-content\n"
    )
    missing = str(tmp_path / "missing")
    assert run_probe(shell, "probe-read-file", "r", missing, "tok", cwd=tmp_path) == (
        "PROBE r blocked not-visible\n"
    )


def test_write_file_writes_the_token_and_knows_skill_dir(shell: list[str], tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    out = run_probe(shell, "probe-write-file", "w", str(drop), "tok", cwd=tmp_path)
    assert out == "PROBE w reached wrote-file\n"
    assert (drop / "probe-w.txt").read_text() == "tok\n"
    skill = tmp_path / "skill"
    skill.mkdir()
    env = {"SKILL_DIR": str(skill)}
    run_probe(shell, "probe-write-file", "ws", "SKILL_DIR", "tok2", cwd=tmp_path, env=env)
    assert (skill / "probe-ws.txt").read_text() == "tok2\n"
    missing = str(tmp_path / "missing")
    assert run_probe(shell, "probe-write-file", "w", missing, "t", cwd=tmp_path) == (
        "PROBE w blocked not-visible\n"
    )
    assert not (tmp_path / "missing").exists()


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A one-shot TCP listener on 127.0.0.1 that replies `ok`; yields (port, received)."""
    server = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def serve() -> None:
        connection, _ = server.accept()
        with connection:
            received.append(connection.recv(256))
            connection.sendall(b"ok\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    server.close()
    thread.join(timeout=5)


def test_loopback_connects_and_sends_its_token(
    shell: list[str], tmp_path: Path, listener: tuple[int, list[bytes]]
) -> None:
    port, received = listener
    out = run_probe(shell, "probe-loopback", "l", str(port), "tok", cwd=tmp_path)
    assert out == "PROBE l reached connected\n"
    assert received == [b"tok\n"]


def test_loopback_reports_a_refused_connection(shell: list[str], tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    out = run_probe(shell, "probe-loopback", "l", str(port), "tok", cwd=tmp_path)
    assert out == "PROBE l blocked connect-failed\n"


def test_network_route_agrees_with_the_hosts_routing_table(
    shell: list[str], tmp_path: Path
) -> None:
    out = run_probe(shell, "probe-network-route", "resolve", cwd=tmp_path)
    assert out.startswith(
        "PROBE resolve reached default-route-"
        if host_route_off_machine()
        else "PROBE resolve blocked no-route-off-machine"
    )


def test_memory_allocates_up_to_its_target(shell: list[str], tmp_path: Path) -> None:
    out = run_probe(shell, "probe-memory", "m", "1000000", cwd=tmp_path)
    assert out.splitlines() == [
        "PROBE m started allocating",
        "PROBE m reached allocated-1048576-bytes",
    ]


def test_fork_starts_and_stops_its_processes(shell: list[str], tmp_path: Path) -> None:
    assert run_probe(shell, "probe-fork", "f", "3", cwd=tmp_path) == (
        "PROBE f reached started-3-processes\n"
    )


def test_disk_fill_writes_its_total_and_removes_it(shell: list[str], tmp_path: Path) -> None:
    out = run_probe(shell, "probe-disk-fill", "d", "2097152", cwd=tmp_path)
    assert out == "PROBE d reached wrote-2097152-bytes\n"
    assert list(tmp_path.iterdir()) == []


def test_escape_prints_escape_sequences(shell: list[str], tmp_path: Path) -> None:
    out = run_probe(shell, "probe-escape", "e", cwd=tmp_path)
    assert "\x1b]0;" in out
    assert out.endswith("PROBE e reached printed-escapes\n")


@pytest.mark.skipif(not shutil.which("busybox"), reason="busybox is not installed")
def test_loopback_uses_busybox_nc_where_there_is_no_python(
    tmp_path: Path, listener: tuple[int, list[bytes]]
) -> None:
    """The sandbox image is static busybox only: no python3, `nc` is an applet."""
    port, received = listener
    busybox = str(shutil.which("busybox"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nc").symlink_to(busybox)
    script = probe_skills_dir() / "probe-loopback" / "scripts" / "probe.sh"
    done = subprocess.run(
        [busybox, "sh", str(script), "l", str(port), "tok"],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.stdout == "PROBE l reached connected\n"
    assert received == [b"tok\n"]


def test_disk_fill_says_so_when_the_workspace_is_not_writable(
    shell: list[str], tmp_path: Path
) -> None:
    (tmp_path / "probe-disk-fill").write_text("a file where the folder should be\n")
    out = run_probe(shell, "probe-disk-fill", "d", "2097152", cwd=tmp_path)
    assert out == "PROBE d blocked workspace-not-writable\n"
