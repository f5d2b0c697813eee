"""`run_quiet`, the floors' way of running a command: its end, its failure, its hang."""

import subprocess
from pathlib import Path

import psutil
import pytest

from workbench.bench import rows
from workbench.bench.rows import run_quiet


def test_a_command_runs_to_its_end_in_its_folder(tmp_path: Path) -> None:
    run_quiet(["sh", "-c", "sleep 0.1; echo done > here"], cwd=tmp_path)
    assert (tmp_path / "here").read_text() == "done\n"


def test_a_failing_command_raises_with_its_code() -> None:
    with pytest.raises(subprocess.CalledProcessError) as failed:
        run_quiet(["sh", "-c", "exit 3"])
    assert failed.value.returncode == 3


def test_a_hanging_command_is_killed_and_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rows, "COMMAND_LIMIT_S", 0.3)
    pid_file = tmp_path / "pid"
    with pytest.raises(subprocess.TimeoutExpired):
        run_quiet(["sh", "-c", f"echo $$ > {pid_file}; exec sleep 30"])
    pid = int(pid_file.read_text())
    assert not psutil.pid_exists(pid)  # killed and reaped, not left as a zombie
