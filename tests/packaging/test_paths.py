"""Runtime paths follow the platform: everything the app writes goes under the XDG folders."""

import os
import subprocess
import sys
from pathlib import Path

from workbench.platform import paths
from workbench.runs.layout import DataLayout


def test_data_and_config_resolve_under_the_xdg_variables() -> None:
    data = Path(os.environ["XDG_DATA_HOME"])
    config = Path(os.environ["XDG_CONFIG_HOME"])
    assert paths.data_dir() == data / paths.APP_NAME
    assert paths.config_dir() == config / paths.APP_NAME
    layout = DataLayout.default()
    assert layout.history_path.is_relative_to(data)
    assert layout.run_dir("r1").is_relative_to(data)


def test_the_gui_settings_file_resolves_under_xdg_config_home(tmp_path: Path) -> None:
    # In a child: Qt reads XDG_CONFIG_HOME once per process. Same names as app.py gives Qt.
    code = (
        "from PySide6.QtCore import QSettings; from workbench.platform import paths; "
        "print(QSettings(paths.APP_AUTHOR, paths.APP_NAME).fileName())"
    )
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert Path(done.stdout.strip()).is_relative_to(tmp_path / "config" / paths.APP_AUTHOR)
