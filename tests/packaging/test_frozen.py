"""The PyInstaller one-folder build: built from the spec, then used as a user would, offscreen.

Besides the CLI and the GUI, it runs both of the app's own child processes (the hardened exec
wrapper and the QuickJS worker, which the frozen app hosts itself), checks that the
bootloader's variables do not reach a command, and that nothing is written into the bundle.
"""

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SPEC = Path(__file__).resolve().parents[2] / "packaging" / "pyinstaller" / "workbench.spec"

pytestmark = pytest.mark.slow


def run(argv: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout}\n{done.stderr}"
    return done


def pyinstaller() -> list[str]:
    """The PyInstaller command of the dev venv, installed first when missing."""
    probe = subprocess.run([sys.executable, "-c", "import PyInstaller"], capture_output=True)
    if probe.returncode != 0:
        pip = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        run([*pip, "pyinstaller"], cwd=Path.cwd(), timeout=300)
    return [sys.executable, "-m", "PyInstaller"]


@pytest.fixture(scope="module")
def bundle() -> Iterator[Path]:
    """The built app folder (`.../dist/workbench`), in a folder other users can traverse (the
    hardened posture's throwaway uid runs the app itself as its exec wrapper)."""
    with tempfile.TemporaryDirectory(prefix="workbench-frozen-") as folder:
        root = Path(folder)
        root.chmod(0o755)
        build = [*pyinstaller(), "--noconfirm", "--log-level", "ERROR"]
        where = ["--distpath", str(root / "dist"), "--workpath", str(root / "build")]
        run([*build, *where, str(SPEC)], cwd=root, timeout=600)
        yield root / "dist" / "workbench"


def files_in(folder: Path) -> set[Path]:
    return {path for path in folder.rglob("*") if not path.is_dir()}


def workbench(bundle: Path, *args: str) -> dict[str, Any]:
    """Run the frozen app with `args` (ending in --json) and return its document."""
    done = run([str(bundle / "workbench"), *args], cwd=bundle.parents[1])
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def test_the_frozen_app_lists_its_examples_and_renders_its_window(bundle: Path) -> None:
    before = files_in(bundle)
    app = str(bundle / "workbench")
    assert run([app, "--version"], cwd=bundle.parent).stdout == "workbench 0.1.0\n"
    listed = workbench(bundle, "skills", "list", "--json")["skills"]
    bundled = [skill for skill in listed if Path(skill["path"]).is_relative_to(bundle)]
    assert len(bundled) == 6 and all(skill["valid"] for skill in bundled)
    shot = bundle.parents[1] / "window.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [app, "gui", "--screenshot", str(shot)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    assert files_in(bundle) == before, "the app wrote next to itself"


def test_the_frozen_app_hosts_its_wrapper_and_worker(bundle: Path) -> None:
    workspace = bundle.parents[1] / "ws"
    workspace.mkdir()
    workspace.chmod(0o777)  # the hardened posture's throwaway uid writes here
    (workspace / "data.csv").write_text("a,b\n1,2\n")
    ran = workbench(
        *(bundle, "run", "--skill", "csv-to-markdown", "--posture", "quickjs"),
        *("--workspace", str(workspace), "--json", "--", "scripts/csv-to-markdown.js", "data.csv"),
    )
    assert ran["result"]["status"] == "ok", ran["result"]["cause"]
    assert (workspace / "data.md").read_text().splitlines()[0] == "| a | b |"
    ran = workbench(
        *(bundle, "run", "--skill", "workspace-report", "--posture", "hardened"),
        *("--json", "--", "echo", "from the wrapper"),
    )
    assert ran["result"]["status"] == "ok", ran["result"]["cause"]
    assert ran["result"]["stdout"]["text"] == "from the wrapper\n"


def test_no_bootloader_variable_reaches_a_local_command(bundle: Path) -> None:
    ran = workbench(
        *(bundle, "run", "--skill", "workspace-report", "--posture", "local"),
        *("--json", "--", "env"),
    )
    names = {line.partition("=")[0] for line in ran["result"]["stdout"]["text"].splitlines()}
    leaked = {name for name in names if name.startswith(("_PYI_", "LD_LIBRARY_PATH"))}
    assert leaked <= ({"LD_LIBRARY_PATH"} if "LD_LIBRARY_PATH" in os.environ else set())
