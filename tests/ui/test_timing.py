"""The bench's window timings: each kind ends its process at the moment it times."""

import os
import subprocess
from pathlib import Path

import pytest

from workbench.platform.interpreter import child_argv
from workbench.runs.history import RunHistory


def timing(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m workbench.ui.timing ARGS...`, offscreen, with its own data and settings."""
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        # No engine: the app's start asks none, so these timings touch no engine the suite uses.
        "DOCKER_HOST": "unix:///nonexistent/docker.sock",
    }
    argv = [*child_argv("workbench.ui.timing"), *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("kind", ["bare", "app"])
def test_a_window_ends_at_its_first_paint(tmp_path: Path, kind: str) -> None:
    done = timing(tmp_path, kind)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_a_runs_first_output_on_screen_is_timed_from_pressing_run(tmp_path: Path) -> None:
    skill = tmp_path / "skills" / "timed"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: timed\ndescription: t\n---\n")
    done = timing(tmp_path, "output", str(skill), "local", "the-line", "echo the-line")
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) > 0
    # the run is recorded in the app's own history, in the test's data folder
    (database,) = (tmp_path / "data").rglob("history.sqlite3")
    (record,) = RunHistory(database).recent()
    assert record.argv[-1] == "echo the-line"  # (its outcome may be cut: timing ends the app)
