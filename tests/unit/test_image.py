"""`workbench image build`: the builder's progress and failures reach the user (no engine)."""

import hashlib
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.executors.docker.image import (
    ImageError,
    ImageStatus,
    build_offline,
    build_online,
    recipe_hash,
)


def fake_builder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> Path:
    script = tmp_path / "build-offline.sh"
    script.write_text(body)
    monkeypatch.setattr("workbench.executors.docker.image.builder_script", lambda: script)
    return script


def test_offline_build_passes_every_progress_line_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/elsewhere.sock")
    fake_builder(
        tmp_path,
        monkeypatch,
        'echo "debootstrap <b>x</b>" >&2\necho "tag $1 via $DOCKER_HOST" >&2\necho out\n',
    )
    lines: list[str] = []
    build_offline("wb-test:1", lines.append)
    assert lines == ["debootstrap <b>x</b>", "tag wb-test:1 via unix:///run/elsewhere.sock"]


def test_a_failed_offline_build_says_so_with_its_last_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_builder(tmp_path, monkeypatch, 'echo "$1" >&2\necho "needs root" >&2\nexit 3\n')
    lines: list[str] = []
    with pytest.raises(ImageError, match=r"failed \(exit 3\): needs root"):
        build_offline("--force", lines.append, force=True)
    assert lines == ["--force", "needs root"]


def test_the_recipe_is_the_hash_of_the_builder_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = fake_builder(tmp_path, monkeypatch, "exit 0\n")
    assert recipe_hash() == hashlib.sha256(b"exit 0\n").hexdigest()[:16]
    script.write_text("exit 1\n")
    assert recipe_hash() == hashlib.sha256(b"exit 1\n").hexdigest()[:16]


def test_only_an_image_with_the_expected_recipe_is_current() -> None:
    built = ImageStatus("t", "e", exists=True, recipe="abc", expected_recipe="abc")
    assert built.current
    assert not ImageStatus("t", "e", exists=True, recipe="", expected_recipe="abc").current
    assert not ImageStatus("t", "e", recipe="abc", expected_recipe="abc").current


def test_an_online_build_without_an_engine_names_the_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
    with pytest.raises(ImageError, match=r"tcp://127.0.0.1:1 \(DOCKER_HOST\) does not answer"):
        build_online("wb-test:1", print)


def test_the_cli_maps_a_failed_build_to_125(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_builder(tmp_path, monkeypatch, 'echo "build-offline: no debootstrap" >&2\nexit 1\n')
    assert main(["image", "build", "--offline", "--json"]) == 125
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "build-offline: no debootstrap" in captured.err
    assert "error: The offline image build failed (exit 1)" in captured.err
