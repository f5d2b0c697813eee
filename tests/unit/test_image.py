"""`workbench image build`: the builder's progress and failures reach the user (no engine)."""

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.executors.docker.image import (
    ImageError,
    ImageStatus,
    build_offline,
    build_online,
    image_packages,
    recipe_dir,
    recipe_hash,
)


def fake_builder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> Path:
    script = tmp_path / "build-offline.sh"
    script.write_text(body)
    monkeypatch.setattr("workbench.executors.docker.image.recipe_dir", lambda: tmp_path)
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


def test_the_recipe_is_the_hash_of_the_builder_dockerfile_and_package_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = fake_builder(tmp_path, monkeypatch, "exit 0\n")
    (tmp_path / "Dockerfile").write_text("FROM x\n")
    (tmp_path / "packages.txt").write_text("bash\n")
    assert recipe_hash() == hashlib.sha256(b"exit 0\nFROM x\nbash\n").hexdigest()[:16]
    (tmp_path / "packages.txt").write_text("bash\npython3-pip\n")
    changed = hashlib.sha256(b"exit 0\nFROM x\nbash\npython3-pip\n").hexdigest()[:16]
    assert recipe_hash() == changed
    script.write_text("exit 1\n")
    assert recipe_hash() != changed


def test_the_offline_builder_hashes_the_recipe_as_the_workbench_does(tmp_path: Path) -> None:
    """The label the script gives its image is the one `image status` expects."""
    script = recipe_dir() / "build-offline.sh"
    line = next(line for line in script.read_text().splitlines() if line.startswith("recipe="))
    command = line.removeprefix("recipe=").strip('"').removeprefix("$(").removesuffix(")")
    here = f"here={recipe_dir()}; "
    hashed = subprocess.run(
        ["bash", "-c", here + command], capture_output=True, text=True, check=True
    )
    assert hashed.stdout.strip() == recipe_hash()


def test_the_online_and_offline_builds_install_the_same_package_list() -> None:
    """One list: the Dockerfile installs packages.txt, the offline builder debootstraps it."""
    dockerfile = (recipe_dir() / "Dockerfile").read_text()
    builder = (recipe_dir() / "build-offline.sh").read_text()
    assert "COPY packages.txt" in dockerfile
    assert "apt-get install" in dockerfile and "$missing" in dockerfile
    assert '"$here/packages.txt"' in builder and '--include="$packages"' in builder
    assert '"$here"' in builder.split("docker build")[-1]  # the same Dockerfile on top
    assert "python3-pip" in image_packages()


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
    document = json.loads(captured.out)  # --json: one document, the error's, on stdout
    assert document["schema"] == "skill-workbench/error/1"
    assert "build-offline: no debootstrap" in captured.err
    assert "error: The offline image build failed (exit 1)" in captured.err
