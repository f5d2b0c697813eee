"""`workbench compare` end to end: a real subprocess of the CLI over local, hardened, quickjs.

The data folder lives in a world-traversable temporary folder, because the hardened posture
runs the command as a throwaway user that must reach its workspace copy.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPORT = 'python3 "$SKILL_DIR/scripts/report.py"'


@pytest.fixture
def open_root() -> Iterator[Path]:
    """A temporary folder every user may traverse (pytest's tmp_path is private to root)."""
    root = Path(tempfile.mkdtemp(prefix="workbench-compare-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def env(open_root: Path) -> dict[str, str]:
    """The environment of a CLI subprocess with its own, empty data folder."""
    return {**os.environ, "XDG_DATA_HOME": str(open_root / "xdg")}


def workbench(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run `python -m workbench ARGS...` and capture its output as text."""
    command = [sys.executable, "-m", "workbench", *map(str, args)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_json_compares_each_posture_in_its_own_copy_of_the_workspace(
    env: dict[str, str], open_root: Path
) -> None:
    source = open_root / "source"
    source.mkdir()
    (source / "notes.txt").write_text("one\ntwo\n")
    done = workbench(
        env, "compare", "--skill", "workspace-report", "--postures", "local,hardened",
        "--workspace", source, "--timeout", "30", "--json", "--", "sh", "-c", REPORT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # exactly one document, nothing else
    assert document["schema"] == "skill-workbench/compare/1"
    assert document["postures"] == ["local", "hardened"]
    runs = document["runs"]
    assert [(r["posture"], r["outcome"], r["changes"]) for r in runs] == [
        ("local", "ok", 1),
        ("hardened", "ok", 1),
    ]
    workspaces = [Path(r["workspace"]) for r in runs]
    assert workspaces[0] != workspaces[1]
    for workspace in workspaces:
        assert "notes.txt" in (workspace / "report.md").read_text()
    assert sorted(p.name for p in source.iterdir()) == ["notes.txt"]  # the source is untouched
    assert "DANGER (local posture)" in done.stderr
    assert "caution (hardened): " in done.stderr  # every warning says whose it is
    shown = workbench(env, "history", "show", runs[1]["run_id"], "--json")
    assert json.loads(shown.stdout)["posture"] == "hardened"


def test_table_and_exit_125_when_a_posture_cannot_run_the_command(env: dict[str, str]) -> None:
    done = workbench(
        env, "compare", "--skill", "workspace-report", "--postures", "quickjs,local",
        "--", "sh", "-c", REPORT,
    )  # fmt: skip
    assert done.returncode == 125, done.stderr
    header, quickjs, local = done.stdout.splitlines()[:3]
    assert header.split()[:3] == ["posture", "outcome", "wall"]
    assert quickjs.split()[:3] == ["quickjs", "error", "-"] and "JavaScript" in quickjs
    assert local.split()[:2] == ["local", "ok"] and local.endswith("exited with code 0")
    assert "details: workbench history show RUN" in done.stdout
    assert "\nerror: quickjs: error (" in done.stderr  # the failed posture's line


def test_without_postures_a_script_is_compared_where_it_can_run(
    env: dict[str, str], open_root: Path
) -> None:
    skill = open_root / "js-skill"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: js-skill\ndescription: Says hello.\n---\n# JS\n")
    (skill / "scripts" / "hello.js").write_text('console.log("hello");\n')
    done = workbench(env, "compare", "--skill", skill, "--json", "--", "scripts/hello.js")
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert (run["posture"], run["outcome"]) == ("quickjs", "ok")
    assert "comparing under: quickjs" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--postures", "local"], "give the command to run after `--`"),
        (["--postures", "nonsense", "--", "true"], "nonsense"),
        (["--postures", ",", "--", "true"], "--postures names no posture"),
        (["--postures", "local", "--timeout", "0", "--", "true"], "must be positive"),
    ],
)
def test_usage_errors_exit_2(env: dict[str, str], args: list[str], message: str) -> None:
    done = workbench(env, "compare", "--skill", "workspace-report", *args)
    assert done.returncode == 2
    assert message in done.stderr and done.stdout == ""


def test_ctrl_c_stops_the_run_in_progress_and_skips_the_rest(env: dict[str, str]) -> None:
    command = [
        sys.executable, "-m", "workbench", "compare", "--skill", "workspace-report",
        "--postures", "local,hardened", "--json", "--", "sh", "-c", "echo started; sleep 30",
    ]  # fmt: skip
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stderr is not None
        for line in process.stderr:  # the warnings come first, then the run starts
            if "Only use the local posture" in line:
                break
        time.sleep(1)  # let `sleep 30` start; an earlier Ctrl-C ends the run just the same
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    (stopped,) = json.loads(out)["runs"]
    assert stopped["outcome"] == "cancelled"
    assert "stopped; not run under: hardened" in err


def test_a_row_that_fails_where_another_passes_names_the_control(env: dict[str, str]) -> None:
    fork = "for i in $(seq 24); do sleep 1 & done; wait"
    done = workbench(
        env, "compare", "--skill", "workspace-report", "--postures", "local,hardened",
        "--pids", "6", "--json", "--", "sh", "-c", fork,
    )  # fmt: skip
    runs = json.loads(done.stdout)["runs"]
    assert [(r["posture"], r["outcome"], r["difference"]) for r in runs] == [
        ("local", "ok", ""),
        ("hardened", "limit_exceeded", "process limit 6"),
    ]
    assert runs[1]["diagnosis"]["kind"] == "process-limit"
    table = workbench(
        env, "compare", "--skill", "workspace-report", "--postures", "local,hardened",
        "--pids", "6", "--", "sh", "-c", fork,
    ).stdout  # fmt: skip
    assert "difference" in table.splitlines()[0]
    assert "process limit 6" in table.splitlines()[2]
