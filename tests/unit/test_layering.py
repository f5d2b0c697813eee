"""The import-linter contract that keeps Qt in `workbench.ui` covers every other module."""

import tomllib
from pathlib import Path

import workbench

GUI_MODULES = {"workbench.ui", "workbench.app", "workbench.__main__", "workbench.__init__"}


def test_every_headless_module_is_forbidden_qt() -> None:
    root = Path(workbench.__file__).parent
    pyproject = tomllib.loads((root.parent / "pyproject.toml").read_text())
    (contract,) = pyproject["tool"]["importlinter"]["contracts"]
    covered = set(contract["source_modules"])
    present = {
        f"workbench.{path.stem}"
        for path in root.iterdir()
        if (path.suffix == ".py" or (path / "__init__.py").exists())
    }
    assert present - GUI_MODULES == covered
