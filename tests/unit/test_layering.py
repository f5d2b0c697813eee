"""The import-linter contract that keeps Qt in `workbench.ui` covers every other module."""

import tomllib
from pathlib import Path

import workbench

GUI_MODULES = {"workbench.ui", "workbench.__main__", "workbench.__init__"}


def test_every_headless_module_is_forbidden_qt() -> None:
    root = Path(workbench.__file__).parent
    pyproject = tomllib.loads((root.parent / "pyproject.toml").read_text())
    contracts = pyproject["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["type"] == "forbidden"]
    covered = set(contract["source_modules"])
    present = {
        f"workbench.{path.stem}"
        for path in root.iterdir()
        if (path.suffix == ".py" or (path / "__init__.py").exists())
    }
    assert present - GUI_MODULES == covered


def test_every_package_has_a_layer() -> None:
    """A new top-level package must be placed in the layers contract, or nothing checks it."""
    root = Path(workbench.__file__).parent
    pyproject = tomllib.loads((root.parent / "pyproject.toml").read_text())
    contracts = pyproject["tool"]["importlinter"]["contracts"]
    (layers,) = [c for c in contracts if c["type"] == "layers"]
    layered = {name.strip() for layer in layers["layers"] for name in layer.split("|")}
    present = {
        f"workbench.{path.stem}"
        for path in root.iterdir()
        if (path.suffix == ".py" or (path / "__init__.py").exists())
    }
    assert present - {"workbench.__main__", "workbench.__init__"} == layered
