"""`workbench history` end to end: list, show, export, restore, and a run killed half-way."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

HOSTILE = "<script>alert(1)</script>"


def _cli(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "workbench", *map(str, args)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of a CLI subprocess with its own, empty data folder."""
    return {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    """A minimal valid skill folder."""
    folder = tmp_path / "demo-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: demo-skill\ndescription: For tests.\n---\n")
    return folder


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small workspace: a text file, a script and a folder."""
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "notes.txt").write_text("first\nsecond\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "sub" / "data.bin").write_bytes(bytes(range(256)))
    return root


def _run(env: dict[str, str], skill: Path, workspace: Path, script: str) -> str:
    done = _cli(
        env, "run", "--skill", skill, "--posture", "local", "--workspace", workspace, "--json",
        "--", "sh", "-c", script,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_id: str = json.loads(done.stdout)["run_id"]
    return run_id


def _files(root: Path) -> dict[str, tuple[int, bytes]]:
    return {
        p.relative_to(root).as_posix(): (p.lstat().st_mode, p.read_bytes() if p.is_file() else b"")
        for p in sorted(root.rglob("*"))
    }


def test_list_show_and_export(
    env: dict[str, str], skill: Path, workspace: Path, tmp_path: Path
) -> None:
    first = _run(env, skill, workspace, "echo one")
    second = _run(env, skill, workspace, f"echo '{HOSTILE}'; echo third >> notes.txt")

    listing = json.loads(_cli(env, "history", "list", "--json").stdout)
    assert [run["run_id"] for run in listing["runs"]] == [second, first]
    assert listing["runs"][0]["changes"] == 1 and listing["runs"][0]["outcome"] == "ok"

    unique = next(i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b) + 1
    shown = json.loads(_cli(env, "history", "show", second[:unique], "--json").stdout)
    assert shown["result"]["changes"][0]["path"] == "notes.txt"
    text = _cli(env, "history", "show", "last").stdout
    assert "+third" in text and "modified: notes.txt" in text

    page_path = tmp_path / "report.html"
    exported = _cli(env, "history", "export", "last", "--format", "html", "--output", page_path)
    assert exported.returncode == 0, exported.stderr
    page = page_path.read_text()
    assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    for fmt in ("md", "json"):
        report = _cli(env, "history", "export", second, "--format", fmt)
        assert report.returncode == 0 and "notes.txt" in report.stdout
    assert json.loads(report.stdout)["run_id"] == second


def test_unknown_run_is_a_usage_error(env: dict[str, str]) -> None:
    done = _cli(env, "history", "show", "nope")
    assert done.returncode == 2
    assert "No run matches 'nope'" in done.stderr


def test_restore_puts_the_workspace_back(env: dict[str, str], skill: Path, workspace: Path) -> None:
    wanted = _files(workspace)
    run_id = _run(
        env, skill, workspace,
        "rm -r sub; echo x > notes.txt; chmod 600 run.sh; ln -s /etc sub; mkdir -p new/deep",
    )  # fmt: skip
    assert _files(workspace) != wanted

    done = _cli(env, "history", "restore", run_id, "--json")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["complete"] is True
    assert _files(workspace) == wanted


def test_restore_refuses_to_lose_later_changes(
    env: dict[str, str], skill: Path, workspace: Path
) -> None:
    _run(env, skill, workspace, "echo run >> notes.txt")
    (workspace / "mine.txt").write_text("written after the run")

    refused = _cli(env, "history", "restore", "last")
    assert refused.returncode == 1
    assert "mine.txt (added)" in refused.stderr and "--force" in refused.stderr
    assert (workspace / "mine.txt").exists()

    forced = _cli(env, "history", "restore", "last", "--force")
    assert forced.returncode == 0, forced.stderr
    assert not (workspace / "mine.txt").exists()
    assert (workspace / "notes.txt").read_text() == "first\nsecond\n"


def test_run_killed_half_way_reads_back_as_interrupted(
    env: dict[str, str], skill: Path, workspace: Path
) -> None:
    command = [
        sys.executable, "-m", "workbench", "run", "--skill", str(skill), "--posture", "local",
        "--workspace", str(workspace), "--", "sh", "-c", "echo started; sleep 60",
    ]  # fmt: skip
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as cli:
        assert cli.stdout is not None
        assert cli.stdout.readline() == b"started\n"
        tree = psutil.Process(cli.pid).children(recursive=True)
        cli.send_signal(signal.SIGKILL)
        cli.wait(timeout=10)
    for process in tree:  # the command outlived the killed workbench: end it
        process.kill()
    psutil.wait_procs(tree, timeout=10)

    listing = json.loads(_cli(env, "history", "list", "--json").stdout)

    assert [run["outcome"] for run in listing["runs"]] == ["interrupted"]
    refused = _cli(env, "history", "restore", "last")
    assert refused.returncode == 1 and "did not finish recording" in refused.stderr


@pytest.mark.usefixtures("remove_deep_trees")
def test_restore_removes_a_tree_thousands_of_folders_deep(
    env: dict[str, str], skill: Path, workspace: Path
) -> None:
    wanted = _files(workspace)
    deep = "import os\nfor _ in range(3000): os.mkdir('d'); os.chdir('d')"
    _run(env, skill, workspace, f'python3 -c "{deep}"')

    done = _cli(env, "history", "restore", "last")

    assert done.returncode == 0, done.stderr
    assert "restored" in done.stderr and "3000 path(s) put back" in done.stderr
    assert _files(workspace) == wanted


def test_a_partial_restore_says_what_it_put_back_and_names_what_it_could_not(
    env: dict[str, str], skill: Path, workspace: Path
) -> None:
    os.mkfifo(workspace / "fifo")
    _run(env, skill, workspace, "rm fifo; echo x > notes.txt")

    done = _cli(env, "history", "restore", "last", "--json")

    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert (report["complete"], report["undone"], report["left"]) == (False, 1, 1)
    assert [note for note in report["notes"] if "fifo" in note] == report["notes"]
    assert len(report["notes"]) == 1 and "FIFO" in report["notes"][0]
    assert "1 path(s) put back, 1 could not be" in done.stderr
    assert (workspace / "notes.txt").read_text() == "first\nsecond\n"


def test_two_changed_paths_never_read_alike(
    env: dict[str, str], skill: Path, workspace: Path
) -> None:
    (workspace / os.fsdecode(b"c\xff")).write_text("a stray byte in the name")
    (workspace / "c\\xff").write_text("a backslash in the name")
    done = _cli(
        env, "run", "--skill", skill, "--posture", "local", "--workspace", workspace,
        "--", "sh", "-c", "echo changed > \"$(printf 'c\\377')\"; rm 'c\\xff'",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "modified     c\\xff\n" in done.stderr and "deleted      c\\\\xff\n" in done.stderr

    shown = json.loads(_cli(env, "history", "show", "last", "--json").stdout)

    paths = {change["kind"]: change["path"] for change in shown["result"]["changes"]}
    # JSON holds the real name; a byte that is not UTF-8 is written as \xNN (valid UTF-8 JSON)
    assert paths == {"deleted": "c\\xff", "modified": "c\\xff"}
    assert _cli(env, "history", "restore", "last").returncode == 0
    assert (workspace / "c\\xff").read_text() == "a backslash in the name"


def test_a_file_name_cannot_forge_a_line_and_the_record_keeps_the_real_name(
    env: dict[str, str], skill: Path, workspace: Path
) -> None:
    forged = "notes.txt\n  deleted      important.txt"
    _run(
        env,
        skill,
        workspace,
        "touch \"$(printf 'notes.txt\\n  deleted      important.txt')\" 'a\\b'",
    )

    text = _cli(env, "history", "show", "last").stdout

    lines = text.splitlines()
    assert "  - added: notes.txt\\n  deleted      important.txt [file; mode 644]" in lines
    assert "  [diff of notes.txt\\n  deleted      important.txt]" in lines
    assert [line for line in lines if line.lstrip().startswith("deleted")] == []
    assert "  - added: a\\\\b [file; mode 644]\n" in text
    shown = json.loads(_cli(env, "history", "show", "last", "--json").stdout)
    assert sorted(change["path"] for change in shown["result"]["changes"]) == ["a\\b", forged]


def test_list_filters_groups_sessions_and_keeps_its_columns_straight(
    env: dict[str, str], skill: Path, workspace: Path
) -> None:
    plain = _run(env, skill, workspace, "echo one")
    compared = _cli(
        env, "compare", "--skill", "workspace-report", "--postures", "local,hardened", "--json",
        "--", "sh", "-c", "echo two",
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    session_runs = [run["run_id"] for run in json.loads(compared.stdout)["runs"]]

    listing = _cli(env, "history", "list")
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert lines[0].split() == [
        "RUN",
        "STARTED",
        "OUTCOME",
        "POSTURE",
        "SKILL",
        "CHANGES",
        "COMMAND",
    ]
    session = json.loads(_cli(env, "history", "show", session_runs[0], "--json").stdout)["session"]
    assert lines[1] == f"compare {session}: workspace-report, 2 runs listed"
    assert lines[2].startswith(f"  {session_runs[1]}") and lines[3].startswith(
        f"  {session_runs[0]}"
    )
    assert lines[4].startswith(plain)
    columns = {line.index(" ok ") for line in lines[2:]}  # the outcome column lines up
    assert len(columns) == 1

    def listed(*filters: str) -> list[str]:
        done = _cli(env, "history", "list", "--json", *filters)
        assert done.returncode == 0, done.stderr
        return [run["run_id"] for run in json.loads(done.stdout)["runs"]]

    assert listed("--origin", "run") == [plain]
    assert listed("--origin", "compare") == session_runs[::-1]
    assert listed("--posture", "hardened") == [session_runs[1]]
    assert listed("--session", session, "--posture", "local") == [session_runs[0]]
    assert listed("--status", "limit_exceeded") == []
    assert listed("--skill", "demo-skill") == [plain]
    assert _cli(env, "history", "list", "--status", "failed").stdout == "No run matches.\n"


def test_a_long_outcome_keeps_the_columns_straight(env: dict[str, str], tmp_path: Path) -> None:
    from dataclasses import replace

    from tests.unit.runs.conftest import make_record, make_result
    from workbench.executors.types import RunStatus
    from workbench.runs.history import RunHistory

    history = RunHistory(tmp_path / "xdg" / "skill-workbench" / "history.sqlite3")
    for run_id, status in (("20260101-000000-aaaaaa", RunStatus.LIMIT_EXCEEDED),
                           ("20260101-000001-bbbbbb", RunStatus.OK)):  # fmt: skip
        history.start(make_record(run_id))
        history.finish(run_id, replace(make_result(), status=status))
    lines = _cli(env, "history", "list").stdout.splitlines()
    assert "limit_exceeded  local" in lines[2]
    assert {line.index("local") for line in lines[1:]} == {lines[0].index("POSTURE")}


def test_prune_keeps_the_last_runs(env: dict[str, str], skill: Path, workspace: Path) -> None:
    _run(env, skill, workspace, "echo one")
    _run(env, skill, workspace, "echo two > two.txt")
    kept = _run(env, skill, workspace, "echo three")
    done = _cli(env, "history", "prune", "--keep-runs", "1", "--json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["removed"]) == 2
    listing = json.loads(_cli(env, "history", "list", "--json").stdout)
    assert [run["run_id"] for run in listing["runs"]] == [kept]
    text = _cli(env, "history", "prune", "--keep-days", "30")
    assert text.stdout.startswith("Removed 0 runs")
    refused = _cli(env, "history", "prune")
    assert refused.returncode == 2 and refused.stderr.startswith("error: ")
