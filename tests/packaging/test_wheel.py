"""The wheel alone carries what the app needs: built, installed into a fresh venv outside the
checkout, and used from there as a user would (CLI, both worker entry points, the GUI).

The fresh venv gets the wheel without dependencies; a `.pth` file placed after its own
site-packages lends it the dev venv's packages (PySide6, docker, ...), so the test needs no
network and no large copies. The checkout's `workbench` never reaches it: the dev venv maps the
package through an editable hook that a plain path entry does not run, and the test checks
where `workbench` was imported from.
"""

import json
import os
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
EXAMPLES = {
    "csv-to-markdown",
    "orphan-maker",
    "runaway",
    "secret-probe",
    "traceback-demo",
    "workspace-report",
}

pytestmark = pytest.mark.slow


def run(argv: list[str], cwd: Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, **kwargs
    )
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def venv() -> Iterator[Path]:
    """A fresh venv outside the checkout with only the built wheel installed in it."""
    # Not under pytest's 0700 tmp folder: the hardened posture's throwaway uid (as root) must
    # reach the bundled skills, as it would in a user's install.
    with tempfile.TemporaryDirectory(prefix="workbench-wheel-") as folder:
        root = Path(folder)
        root.chmod(0o755)
        yield install_wheel(root)


def install_wheel(root: Path) -> Path:
    dist = root / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    run([*pip, "wheel", "--no-deps", "-q", "-w", str(dist), str(CHECKOUT)], cwd=root)
    (wheel,) = dist.glob("skill_workbench-*.whl")
    venv = root / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root)
    python = venv / "bin" / "python"
    run([*pip, "--python", str(python), "install", "-q", "--no-deps", str(wheel)], cwd=root)
    own = run([str(python), "-c", "import site; print(site.getsitepackages()[0])"], cwd=root)
    lent = "\n".join(site.getsitepackages())
    (Path(own.stdout.strip()) / "zz_dev_dependencies.pth").write_text(lent + "\n")
    return venv


def workbench(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run([str(venv / "bin" / "workbench"), *args], cwd=venv.parent)


def test_the_package_comes_from_the_fresh_venv(venv: Path) -> None:
    code = "import workbench.platform.paths as p; print(p.__file__); print(p.resources_dir())"
    done = run([str(venv / "bin" / "python"), "-c", code], cwd=venv.parent)
    module, resources = done.stdout.splitlines()
    assert Path(module).is_relative_to(venv)
    assert Path(resources) == Path(module).parents[1] / "resources"  # workbench/resources
    assert workbench(venv, "--version").stdout == "workbench 0.1.0\n"


def test_the_bundled_examples_and_postures_are_there(venv: Path) -> None:
    listed = json.loads(workbench(venv, "skills", "list", "--json").stdout)
    # Only the bundled ones: the user's own skill roots may hold more.
    bundled = [skill for skill in listed["skills"] if Path(skill["path"]).is_relative_to(venv)]
    assert {skill["name"] for skill in bundled} == EXAMPLES
    assert all(skill["valid"] for skill in bundled)
    postures = json.loads(workbench(venv, "postures", "--json").stdout)
    assert {p["id"] for p in postures["postures"]} >= {"local", "hardened", "quickjs"}


def test_the_worker_entry_points_run_from_the_wheel(venv: Path) -> None:
    workspace = venv.parent / "ws"
    workspace.mkdir()
    (workspace / "data.csv").write_text("a,b\n1,2\n")
    ran = workbench(
        *(venv, "run", "--skill", "csv-to-markdown", "--posture", "quickjs"),
        *("--workspace", str(workspace), "--json", "--", "scripts/csv-to-markdown.js", "data.csv"),
    )
    assert json.loads(ran.stdout)["result"]["status"] == "ok"
    assert (workspace / "data.md").read_text().splitlines()[0] == "| a | b |"
    ran = workbench(
        *(venv, "run", "--skill", "workspace-report", "--posture", "hardened"),
        *("--json", "--", "echo", "from the wrapper"),
    )
    result = json.loads(ran.stdout)["result"]
    assert result["status"] == "ok"
    assert result["stdout"]["text"] == "from the wrapper\n"


def test_the_gui_renders_offscreen(venv: Path) -> None:
    shot = venv.parent / "window.png"
    workbench(venv, "gui", "--screenshot", str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000
