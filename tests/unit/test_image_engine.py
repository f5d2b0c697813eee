"""Choosing the engine (DOCKER_HOST, contexts, Podman's socket) and failing fast when it is down."""

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.executors.docker.engine import (
    Engine,
    EngineUnreachable,
    engine_client,
    resolve_engine,
)


@pytest.fixture(autouse=True)
def no_engine_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No DOCKER_* variables, an empty Docker config folder, no Podman runtime folder."""
    for name in ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "docker-config"
    config.mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(config))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    return config


def write_context(config: Path, name: str, host: str) -> None:
    meta = config / "contexts" / "meta" / "0123abcd"
    meta.mkdir(parents=True)
    document = {"Name": name, "Metadata": {}, "Endpoints": {"docker": {"Host": host}}}
    (meta / "meta.json").write_text(json.dumps(document))


@pytest.mark.parametrize(
    ("skip_verify", "said"), [(False, "TLS"), (True, "TLS, server not verified")]
)
def test_a_context_with_tls_material_says_so(
    no_engine_settings: Path, monkeypatch: pytest.MonkeyPatch, skip_verify: bool, said: str
) -> None:
    write_context(no_engine_settings, "secure", "tcp://192.0.2.9:2376")
    meta = no_engine_settings / "contexts" / "meta" / "0123abcd" / "meta.json"
    document = json.loads(meta.read_text())
    document["Endpoints"]["docker"]["SkipTLSVerify"] = skip_verify
    meta.write_text(json.dumps(document))
    (no_engine_settings / "contexts" / "tls" / "0123abcd" / "docker").mkdir(parents=True)
    monkeypatch.setenv("DOCKER_CONTEXT", "secure")
    engine = resolve_engine()
    assert engine.tls is not None and engine.tls.skip_verify is skip_verify
    assert engine.describe() == f"docker at tcp://192.0.2.9:2376 (context secure, {said})"


def test_docker_host_comes_first(no_engine_settings: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_context(no_engine_settings, "remote", "ssh://me@build-box")
    monkeypatch.setenv("DOCKER_CONTEXT", "remote")
    monkeypatch.setenv("DOCKER_HOST", "tcp://10.0.0.7:2375")
    assert resolve_engine() == Engine("tcp://10.0.0.7:2375", "DOCKER_HOST")


def test_the_current_context_of_the_config_names_the_endpoint(no_engine_settings: Path) -> None:
    write_context(no_engine_settings, "remote", "ssh://me@build-box")
    (no_engine_settings / "config.json").write_text(json.dumps({"currentContext": "remote"}))
    engine = resolve_engine()
    assert engine == Engine("ssh://me@build-box", "context remote")
    assert engine.describe() == "docker at ssh://me@build-box (context remote)"


def test_docker_context_overrides_the_config(
    no_engine_settings: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_context(no_engine_settings, "other", "tcp://192.0.2.1:2376")
    (no_engine_settings / "config.json").write_text(json.dumps({"currentContext": "nope"}))
    monkeypatch.setenv("DOCKER_CONTEXT", "other")
    assert resolve_engine().url == "tcp://192.0.2.1:2376"


def test_an_unknown_context_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONTEXT", "ghost")
    with pytest.raises(EngineUnreachable, match=r"'ghost'.*docker context ls"):
        resolve_engine()


def test_the_default_context_is_the_local_socket(
    no_engine_settings: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_CONTEXT", "default")
    # not the machine's Podman socket, which would be chosen when Docker's does not answer
    monkeypatch.setattr("workbench.executors.docker.engine._podman_sockets", list)
    assert resolve_engine() == Engine("unix:///var/run/docker.sock", "default socket")


@pytest.fixture
def podman_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "runtime" / "podman" / "podman.sock"
    path.parent.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(1)
        yield path


def test_podman_is_used_when_no_docker_socket_answers(
    podman_socket: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "workbench.executors.docker.engine.DOCKER_SOCKET", str(tmp_path / "no-docker.sock")
    )
    engine = resolve_engine()
    assert engine == Engine(f"unix://{podman_socket}", "Podman socket")
    assert engine.kind == "podman"


def test_docker_wins_over_podman_when_it_answers(
    podman_socket: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docker_sock = tmp_path / "docker.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(docker_sock))
        listener.listen(1)
        monkeypatch.setattr("workbench.executors.docker.engine.DOCKER_SOCKET", str(docker_sock))
        assert resolve_engine() == Engine(f"unix://{docker_sock}", "default socket")


@pytest.fixture
def silent_listener() -> Iterator[int]:
    """A loopback port that accepts connections and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield int(listener.getsockname()[1])


@pytest.mark.timeout(20)
def test_an_engine_that_never_answers_fails_within_the_timeout(
    silent_listener: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{silent_listener}")
    with pytest.raises(EngineUnreachable, match=f"127.0.0.1:{silent_listener}.*timed out"):
        engine_client(timeout_s=1)


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("tcp://127.0.0.1:1", "the connection was refused"),
        ("unix:///nonexistent/wb/docker.sock", "no socket at that path"),
    ],
)
def test_an_engine_that_is_down_is_a_clear_error(
    host: str, why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", host)
    with pytest.raises(EngineUnreachable) as raised:
        engine_client(timeout_s=1)
    assert str(raised.value) == (
        f"The container engine docker at {host} (DOCKER_HOST) does not answer ({why}). "
        "Is it running, and may you use its socket?"
    )  # a sentence, not docker-py's nested exception reprs


@pytest.mark.timeout(20)
def test_postures_and_image_status_name_an_engine_that_is_down(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
    assert main(["postures", "--json"]) == 0
    postures = json.loads(capsys.readouterr().out)
    assert postures["engine"] == "docker at tcp://127.0.0.1:1 (DOCKER_HOST)"
    docker_posture = next(p for p in postures["postures"] if p["id"] == "docker")
    assert docker_posture["available"] is False
    assert docker_posture["availability_reason"] == (
        "The container engine docker at tcp://127.0.0.1:1 (DOCKER_HOST) does not answer. "
        "Is it running, and may you use its socket?"
    )
    assert main(["image", "status", "--json"]) == 1
    status = json.loads(capsys.readouterr().out)
    assert status["schema"] == "skill-workbench/image-status/1"
    assert status["exists"] is False
    assert "tcp://127.0.0.1:1 (DOCKER_HOST) does not answer" in status["engine_error"]
