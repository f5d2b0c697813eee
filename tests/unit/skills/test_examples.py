"""The bundled example skills' scripts do what their SKILL.md says (run directly, no posture)."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import quickjs

from workbench.platform.paths import example_skills_dir

SKILLS = example_skills_dir()


def run(skill: str, script: str, *args: str, workspace: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SKILL_DIR": str(SKILLS / skill), "WORKSPACE": str(workspace)}
    command = [sys.executable, str(SKILLS / skill / "scripts" / script), *args]
    return subprocess.run(
        command, cwd=workspace, env=env, capture_output=True, text=True, timeout=30, check=False
    )


def test_workspace_report_writes_a_report(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    result = run("workspace-report", "report.py", workspace=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "| notes.txt | 8 | 2 |" in (tmp_path / "report.md").read_text()


def test_workspace_report_refuses_to_write_outside(tmp_path: Path) -> None:
    result = run("workspace-report", "report.py", "--output", "../x.md", workspace=tmp_path)
    assert result.returncode == 2
    assert not (tmp_path.parent / "x.md").exists()


def test_traceback_demo_fails_with_a_traceback(tmp_path: Path) -> None:
    result = run("traceback-demo", "fail.py", workspace=tmp_path)
    assert result.returncode == 1
    assert "loading settings" in result.stdout
    assert "Traceback" in result.stderr and "KeyError: 'output'" in result.stderr


def test_secret_probe_reports_names_never_values(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("DEMO_API_TOKEN", "s3cr3t-value")
    result = run(
        "secret-probe", "probe.py", "--address", "127.0.0.1", "--port", "9", workspace=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "DEMO_API_TOKEN" in result.stdout
    assert "s3cr3t-value" not in result.stdout
    assert "could not  network" in result.stdout
    assert "of 4 probes got through" in result.stdout


def test_runaway_ends_on_its_own(tmp_path: Path) -> None:
    for mode in ("cpu", "memory"):
        result = run(
            "runaway", "runaway.py", mode, "--seconds", "0.5", "--max-mib", "40", workspace=tmp_path
        )
        assert result.returncode == 0, result.stderr
        assert "ending on my own" in result.stdout


def test_orphan_maker_leaves_a_detached_sleeper(tmp_path: Path) -> None:
    result = run("orphan-maker", "orphan.py", "--seconds", "30", workspace=tmp_path)
    assert result.returncode == 0, result.stderr
    pid = int((tmp_path / "orphan.pid").read_text())
    try:
        assert os.getsid(pid) != os.getsid(0)
        assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"30"]
    finally:
        os.kill(pid, signal.SIGKILL)


def test_csv_to_markdown_runs_on_quickjs_with_a_workspace_fs() -> None:
    files: dict[str, str] = {}
    output: list[str] = []
    context = quickjs.Context()
    context.add_callable("_log", output.append)
    context.add_callable("_read", lambda path: files[path])
    context.add_callable("_write", lambda path, text: files.__setitem__(path, text))
    context.add_callable("_exists", lambda path: path in files)
    context.add_callable("_list", lambda path: json.dumps(sorted(files)))
    context.add_callable("_remove", lambda path: files.pop(path) and None)
    context.eval(
        "globalThis.console = {log: (...parts) => _log(parts.join(' '))};"
        "globalThis.fs = {readText: _read, writeText: _write, exists: _exists,"
        " list: (path) => JSON.parse(_list(path)), remove: _remove};"
    )
    source = (SKILLS / "csv-to-markdown" / "scripts" / "csv-to-markdown.js").read_text()
    for args in (["data.csv"], ["data.csv", "--clean"]):
        context.eval(f"globalThis.scriptArgs = {json.dumps(args)};")
        context.eval("(function () {\n" + source + "\n})();")
        if "--clean" not in args:
            assert files["data.md"].splitlines()[:3] == [
                "| posture | isolation | network |",
                "|---|---|---|",
                "| local | none | yes |",
            ]
    assert sorted(files) == ["data.csv"]
    assert output[-1] == "removed data.md"
