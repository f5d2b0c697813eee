"""`workbench run` end to end: a real subprocess of the CLI over the local posture.

Every test points XDG_DATA_HOME at a tmp folder, so the real history is never touched.
"""

import contextlib
import json
import os
import pty
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.cli.postures import runnable_here
from workbench.cli.run import exit_code, parse_size
from workbench.executors.types import CapturedOutput, PostureCard, RunResult, RunStatus
from workbench.postures.model import Posture, PostureId
from workbench.runs.compare import default_postures
from workbench.runs.layout import DataLayout

FORGED = "notes.txt\n  deleted      important.txt"  # a file name that looks like two lines
MAKE_AWKWARD_NAMES = "touch \"$(printf 'notes.txt\\n  deleted      important.txt')\" 'a\\b'"
MUTATE = (
    "echo out; echo err >&2; echo new > added.txt; printf more >> edit.txt; rm gone.txt; "
    f"chmod 755 tool.sh; rm swap.txt; ln -s edit.txt swap.txt; {MAKE_AWKWARD_NAMES}; exit 3"
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of a CLI subprocess with its own, empty data folder."""
    return {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    """A minimal valid skill folder."""
    folder = tmp_path / "demo-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: demo-skill\ndescription: A skill for tests.\n---\n# Demo\n"
    )
    return folder


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with files the MUTATE command changes."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "edit.txt").write_text("text\n")
    (root / "gone.txt").write_text("bye\n")
    (root / "tool.sh").write_text("#!/bin/sh\n")
    (root / "tool.sh").chmod(0o644)
    (root / "swap.txt").write_text("a file\n")
    return root


def workbench(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run `python -m workbench ARGS...` and capture its output as text."""
    command = [sys.executable, "-m", "workbench", *map(str, args)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


def test_json_run_reports_every_change_exactly(
    env: dict[str, str], skill: Path, workspace: Path
) -> None:
    done = workbench(
        env, "run", "--skill", skill, "--posture", "local", "--workspace", workspace, "--json",
        "--", "sh", "-c", MUTATE,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    document = json.loads(done.stdout)  # exactly one document, nothing else
    assert document["schema"] == "skill-workbench/run/1"
    assert document["outcome"] == "failed"
    result = document["result"]
    assert {c["path"]: c["kind"] for c in result["changes"]} == {
        "added.txt": "added",
        "edit.txt": "modified",
        "gone.txt": "deleted",
        "swap.txt": "type_changed",
        "tool.sh": "mode_changed",
        "a\\b": "added",  # the real names, not as the summary shows them
        FORGED: "added",
    }
    swap = next(c for c in result["changes"] if c["path"] == "swap.txt")
    assert (swap["before_type"], swap["after_type"], swap["after_target"]) == (
        "file",
        "symlink",
        "edit.txt",
    )
    assert result["stdout"]["text"] == "out\n" and result["stderr"]["text"] == "err\n"
    assert "*** DANGER (local posture): NO SANDBOX" in done.stderr


def test_output_streams_live_to_the_matching_stream(
    env: dict[str, str], skill: Path, workspace: Path
) -> None:
    done = workbench(
        env, "run", "--skill", skill, "--posture", "local", "--workspace", workspace,
        "--", "sh", "-c", "echo to-out; echo to-err >&2",
    )  # fmt: skip
    assert done.returncode == 0
    assert done.stdout == "to-out\n"
    assert "to-err\n" in done.stderr
    assert "workspace: no changes" in done.stderr


def test_fresh_workspace_is_made_where_the_layout_says(
    env: dict[str, str], skill: Path, tmp_path: Path
) -> None:
    done = workbench(
        env, "run", "--skill", skill, "--posture", "local", "--", "sh", "-c", "pwd; touch made"
    )
    assert done.returncode == 0, done.stderr
    made = Path(done.stdout.strip())
    data_root = tmp_path / "xdg" / "skill-workbench"
    assert made.parent == DataLayout(data_root).fresh_workspace("any").parent
    assert (made / "made").is_file()
    assert f"workspace: {made}" in done.stderr


@pytest.mark.timeout(30)
def test_fifo_link_out_and_hostile_names_are_reported_safely_on_one_line_each(
    env: dict[str, str], skill: Path, workspace: Path
) -> None:
    script = (
        "mkfifo pipe; ln -s / host_root; touch \"$(printf 'evil\\033[2Jname')\"; "
        + MAKE_AWKWARD_NAMES
    )
    done = workbench(
        env, "run", "--skill", skill, "--posture", "local", "--workspace", workspace,
        "--", "sh", "-c", script,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "added        pipe" in done.stderr
    assert "added        host_root" in done.stderr
    assert "added        evil\\x1b[2Jname" in done.stderr
    assert "\x1b" not in done.stderr
    assert [line for line in done.stderr.splitlines() if "important" in line] == [
        "  added        notes.txt\\n  deleted      important.txt"
    ]
    assert "  added        a\\\\b\n" in done.stderr
    shown = json.loads(workbench(env, "history", "show", "last", "--json").stdout)
    kinds = {c["path"]: c["after_type"] for c in shown["result"]["changes"]}
    assert kinds == {
        "pipe": "other",
        "host_root": "symlink",
        "evil\x1b[2Jname": "file",
        "a\\b": "file",
        FORGED: "file",
    }


@pytest.mark.slow
def test_timeout_exits_124(env: dict[str, str], skill: Path, workspace: Path) -> None:
    done = workbench(
        env, "run", "--skill", skill, "--posture", "local", "--workspace", workspace,
        "--timeout", "1", "--json", "--", "sleep", "30",
    )  # fmt: skip
    assert done.returncode == 124
    assert json.loads(done.stdout)["outcome"] == "timed_out"


def test_workbench_failure_exits_125_with_a_message(
    env: dict[str, str], skill: Path, tmp_path: Path
) -> None:
    data = tmp_path / "xdg" / "skill-workbench"
    data.mkdir(parents=True)
    done = workbench(
        env, "run", "--skill", skill, "--posture", "local", "--workspace", data,
        "--json", "--", "true",
    )  # fmt: skip
    assert done.returncode == 125
    assert json.loads(done.stdout)["outcome"] == "error"
    assert "error: The workspace" in done.stderr and "own data folder" in done.stderr


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_workspace_that_is_no_folder_is_refused_and_never_made(
    env: dict[str, str], skill: Path, tmp_path: Path, kind: str
) -> None:
    given = tmp_path / "no" / "such" if kind == "missing" else tmp_path / "file"
    if kind == "file":
        given.write_text("x")
    done = workbench(env, "run", "--skill", skill, "--posture", "local", "--workspace", given,
                     "--", "true")  # fmt: skip
    assert done.returncode == 2
    said = "does not exist" if kind == "missing" else "is not a folder"
    assert done.stderr.splitlines()[-1] == f"error: workbench run: --workspace {given} {said}" + (
        " (create it, or leave --workspace out for a fresh folder)" if kind == "missing" else ""
    )
    assert not (tmp_path / "no").exists()
    assert not (tmp_path / "xdg").exists()  # no run was recorded


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--skill", "{skill}", "--posture", "nope", "--", "true"),
        ("run", "--skill", "{missing}", "--posture", "local", "--", "true"),
        ("run", "--skill", "{skill}", "--posture", "local", "--workspace", "{missing}", "--",
         "true"),
        ("skills", "import", "{missing}"),
        ("skills", "show", "{missing}"),
    ],
    ids=["posture", "skill", "workspace", "import", "show"],
)  # fmt: skip
def test_every_refusal_under_json_prints_one_document(
    env: dict[str, str], skill: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    filled = [arg.format(skill=skill, missing=tmp_path / "missing") for arg in args]
    done = workbench(env, *filled[:2], "--json", *filled[2:])
    assert done.returncode != 0
    document = json.loads(done.stdout)  # exactly one document
    assert document["schema"].startswith("skill-workbench/")
    assert document["outcome"] == "error" and document["error"]
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ")


def test_text_output_says_where_the_rest_of_a_cut_stream_is(
    env: dict[str, str], skill: Path, workspace: Path
) -> None:
    done = workbench(env, "run", "--skill", skill, "--posture", "local", "--workspace",
                     workspace, "--", "head", "-c", str(5 * 1024 * 1024), "/dev/zero")  # fmt: skip
    assert done.returncode == 0, done.stderr
    [said] = [line for line in done.stderr.splitlines() if line.startswith("stdout: ")]
    log = DataLayout(Path(env["XDG_DATA_HOME"]) / "skill-workbench").runs_root
    assert said.startswith("stdout: only the first 4 MiB of 5 MiB shown; the full output is in ")
    assert Path(said.rsplit(" ", 1)[1]).is_relative_to(log)


@pytest.mark.parametrize(
    "args",
    [
        ("--memory", "lots"),
        ("--timeout", "-1"),
        ("--timeout", "inf"),
        ("--cpus", "nan"),
        ("--posture", "nope"),
        ("--network", "host"),
        (),  # no command
    ],
)
def test_bad_options_are_usage_errors(
    env: dict[str, str], skill: Path, args: tuple[str, ...]
) -> None:
    command = () if not args else ("--", "true")
    done = workbench(env, "run", "--skill", skill, "--posture", "local", *args, *command)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error:")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGHUP], ids=["ctrl-c", "hangup"])
def test_ctrl_c_cancels_the_run_and_exits_130(
    env: dict[str, str], skill: Path, workspace: Path, signum: signal.Signals
) -> None:
    command = [
        sys.executable, "-m", "workbench", "run", "--skill", str(skill), "--posture", "local",
        "--workspace", str(workspace), "--", "sh", "-c", "echo started; sleep 30",
    ]  # fmt: skip
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as cli:
        assert cli.stdout is not None
        assert cli.stdout.readline() == b"started\n"
        cli.send_signal(signum)
        _, stderr = cli.communicate(timeout=30)
    assert cli.returncode == 130, stderr
    assert b": cancelled (" in stderr


def test_sizes_parse_in_binary_units() -> None:
    assert parse_size("256m") == 256 * 1024**2
    assert parse_size("1g") == 1024**3
    assert parse_size("512MiB") == 512 * 1024**2
    assert parse_size("1.5G") == 1536 * 1024**2
    assert parse_size("4096") == 4096


@pytest.mark.parametrize(
    ("status", "code", "sig", "expected"),
    [
        (RunStatus.OK, 0, None, 0),
        (RunStatus.FAILED, 7, None, 7),
        (RunStatus.FAILED, None, 9, 137),
        (RunStatus.TIMED_OUT, None, 9, 124),
        (RunStatus.CANCELLED, None, 15, 130),
        (RunStatus.OOM_KILLED, None, 9, 137),
        (RunStatus.LIMIT_EXCEEDED, None, 24, 152),
        (RunStatus.ERROR, None, None, 125),
    ],
)
def test_exit_code_mapping(
    status: RunStatus, code: int | None, sig: int | None, expected: int
) -> None:
    empty = CapturedOutput("", 0, False, None)
    result = RunResult(
        "r", status, "cause", code, sig, 0.0, 0.0, 0, 0, empty, empty,
        PostureCard(Posture(PostureId.LOCAL)),
    )  # fmt: skip
    assert exit_code(result) == expected


HOSTILE = (
    r"printf 'title\033]0;pwned\007 clip\033]52;c;cHduZWQ=\007 up\033[2A red\033[31mX\033[0m\n'"
)


def test_live_output_on_a_terminal_drops_escape_sequences(
    env: dict[str, str], skill: Path, workspace: Path
) -> None:
    controller, terminal = pty.openpty()
    command = [sys.executable, "-m", "workbench", "run", "--skill", str(skill)]
    command += ["--posture", "local", "--workspace", str(workspace), "--", "sh", "-c", HOSTILE]
    with subprocess.Popen(command, env=env, stdout=terminal, stderr=subprocess.DEVNULL) as done:
        os.close(terminal)
        shown = b""
        with contextlib.suppress(OSError):  # EIO once the child closed the terminal
            while chunk := os.read(controller, 4096):
                shown += chunk
        assert done.wait(timeout=60) == 0
    os.close(controller)
    assert b"\x1b" not in shown
    assert b"title clip up redX" in shown


def test_live_output_into_a_pipe_keeps_the_bytes(
    env: dict[str, str], skill: Path, workspace: Path
) -> None:
    done = workbench(
        env, "run", "--skill", skill, "--posture", "local", "--workspace", workspace,
        "--", "sh", "-c", HOSTILE,
    )  # fmt: skip
    assert "\x1b]52;c;cHduZWQ=\x07" in done.stdout


def test_warnings_escape_the_skill_text_they_hold(env: dict[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "sneaky"
    folder.mkdir()
    (folder / "SKILL.md").write_text('---\nname: "evil\\e]0;PWNED\\a\\u202Ename"\n---\n# Broken\n')
    done = workbench(env, "run", "--skill", folder, "--posture", "local", "--", "true")
    assert done.returncode == 0, done.stderr
    assert "warning: skill evil\\x1b]0;PWNED\\x07⟨U+202E⟩name has errors" in done.stderr
    assert not any(c in done.stderr for c in "\x1b\x07\u202e")


def test_what_the_run_itself_found_is_said_after_it(
    env: dict[str, str], skill: Path, workspace: Path
) -> None:
    """Warnings the run adds (here a background process it left) follow the summary; the
    posture's own warnings are said once, before the run."""
    done = workbench(
        env, "run", "--skill", skill, "--posture", "local", "--workspace", workspace,
        "--", "sh", "-c", "sleep 30 & echo hi",
    )  # fmt: skip
    assert done.returncode == 0
    before, after = done.stderr.split("\nrun ", 1)  # the summary line
    assert "caution (local): The command left 1 background process(es) running" in after
    assert "NO SANDBOX" in before
    assert "NO SANDBOX" not in after


def test_a_failed_run_says_why_and_prints_the_command_that_reruns_it_with_the_change(
    env: dict[str, str],
) -> None:
    skill = Path(__file__).parents[1] / "fixtures" / "failing" / "big-export"  # a throwaway
    big = "head -c 200000 /dev/zero > big.bin"  # uid (hardened run by root) can read it
    failed = workbench(
        env, "run", "--skill", skill, "--posture", "hardened", "--file-size", "64k", "--json",
        "--", "sh", "-c", big,
    )  # fmt: skip
    document = json.loads(failed.stdout)
    diagnosis = document["diagnosis"]
    assert (diagnosis["kind"], diagnosis["control"]) == (
        "file-size-limit",
        "file-size limit 64 KiB (RLIMIT_FSIZE)",
    )
    assert diagnosis["evidence"]["stream"] in ("stderr", "run")
    assert diagnosis["change"]["limits"] == [["file_size_bytes", 262144]]
    (command,) = diagnosis["rerun_command"]
    argv = shlex.split(command)
    assert argv[:2] == ["workbench", "run"]
    assert "--file-size 256k --rerun-of " + document["run_id"] in command
    assert argv[-3:] == ["sh", "-c", big]

    again = workbench(env, *argv[1:])
    assert again.returncode == 0, again.stderr
    shown = json.loads(workbench(env, "history", "show", "last", "--json").stdout)
    assert shown["rerun_of"] == document["run_id"] and shown["diagnosis"] is None


def test_the_summary_names_the_control_and_the_evidence_line(
    env: dict[str, str], skill: Path
) -> None:
    done = workbench(
        env, "run", "--skill", skill, "--posture", "local",
        "--", "sh", "-c", "echo start; workbench-diag-no-such-tool --help",
    )  # fmt: skip
    assert done.returncode == 127
    assert "why: missing-tool, by the control: the programs on this computer (PATH)" in done.stderr
    assert "evidence (stderr line 1): " in done.stderr
    assert "workbench-diag-no-such-tool: not found" in done.stderr


def test_without_a_posture_a_js_script_runs_under_quickjs_and_says_so(
    env: dict[str, str], skill: Path
) -> None:
    (skill / "hello.js").write_text('console.log("hello from js");\n')
    done = workbench(env, "run", "--skill", skill, "--json", "--", "hello.js")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["posture"] == "quickjs"
    assert "posture: quickjs (the strongest available here for this command, as in the app" in (
        done.stderr
    )
    assert "info (quickjs): " in done.stderr  # each warning names its posture


def test_without_a_posture_a_shell_command_gets_the_apps_default(
    env: dict[str, str], skill: Path
) -> None:
    expected = default_postures(runnable_here(), ("true",))
    done = workbench(env, "run", "--skill", skill, "--json", "--", "true")
    if not expected:  # nothing but local here: the user must name it
        assert done.returncode == 2 and done.stderr.startswith("error: workbench run: no ")
        return
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["posture"] == expected[0] != PostureId.LOCAL
    assert f"posture: {expected[0]} (" in done.stderr
