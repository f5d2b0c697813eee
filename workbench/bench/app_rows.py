"""Rows of the app: its start to the first painted window, and a run's first output on screen.

Each measurement runs the window in a process of its own (`workbench.ui.timing`, which ends it at
the moment timed) on Qt's offscreen platform with scratch data and settings folders, so the user's
history and window state are never touched: app start from the process's start to the first paint
of the app's window, against a bare PySide6 window's; a run's first output as the app measures it
from pressing Run to the first paint of the output pane showing the line, against the same run in
the CLI (`workbench run`) from its start to the line on its stdout.
"""

import os
import subprocess
import time
from pathlib import Path

from workbench.bench.rows import COMMAND_LIMIT_S, BenchContext, Goal, Group, Outcome, RowSpec
from workbench.bench.stats import Case, interleave, reported
from workbench.platform.interpreter import child_argv

TIMING = "workbench.ui.timing"
LINE = "first-output-line"
SKILL = "bench-output"

APP_START = RowSpec(
    "app-start",
    "app start to first painted window",
    "workbench gui until its window's first paint",
    "a bare PySide6 window until its first paint",
    Goal("<= 2x", max_ratio=2.0),
)
APP_OUTPUT = RowSpec(
    "app-first-output",
    "a run's first output on screen (local)",
    "in the app: Run pressed until the output pane paints the first line",
    "in the CLI: workbench run until the line reaches its stdout",
    Goal("<= CLI + 50 ms", max_excess_s=0.050),
)


def _env(context: BenchContext) -> dict[str, str]:
    """The window's environment: offscreen, with scratch data, settings and cache folders."""
    folders = {f"XDG_{kind}_HOME": context.scratch / kind.lower() for kind in ("DATA", "CONFIG")}
    return {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        **{name: str(path) for name, path in folders.items()},
    }


def _timing(env: dict[str, str], *args: str) -> str:
    """Run `workbench.ui.timing ARGS` to its end; its stdout. Raises when it fails."""
    done = subprocess.run(
        [*child_argv(TIMING), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_LIMIT_S,
        check=False,
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"timing {args[0]} exited with {done.returncode}: {tail[0]}")
    return done.stdout


def _timed_window(kind: str, env: dict[str, str]) -> float:
    """Seconds from starting `timing KIND` to its end (at the first paint)."""
    start = time.perf_counter()
    _timing(env, kind)
    return time.perf_counter() - start


def _app_output(skill: Path, env: dict[str, str]) -> float:
    """The app's own measure of Run pressed to the first line painted."""
    return float(_timing(env, "output", str(skill), "local", LINE, f"echo {LINE}").split()[-1])


def _cli_output(skill: Path, env: dict[str, str]) -> float:
    """Seconds from starting `workbench run` to its first line on stdout (the rest untimed)."""
    argv = [*child_argv("workbench"), "run", "--skill", str(skill), "--posture", "local"]
    start = time.perf_counter()
    with subprocess.Popen(
        [*argv, "--", "echo", LINE],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as process:
        assert process.stdout is not None
        first = process.stdout.readline()
        elapsed = time.perf_counter() - start
        process.stdout.read()
        code = process.wait(timeout=COMMAND_LIMIT_S)
    if first.strip() != LINE or code != 0:
        raise RuntimeError(f"workbench run printed {first.strip()!r} and exited with {code}")
    return elapsed


async def app_rows(
    context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
) -> None:
    """App start against a bare window; a run's first output in the app against the CLI."""
    env = _env(context)
    rounds = context.rounds(9, 3)
    if APP_START.id in wanted:
        cases = [
            Case("ours", reported(lambda: _timed_window("app", env))),
            Case("floor", reported(lambda: _timed_window("bare", env))),
        ]
        stats = await interleave(cases, rounds)
        outcomes[APP_START.id] = Outcome(stats["ours"], stats["floor"])
    if APP_OUTPUT.id in wanted:
        skill = context.scratch / "skills" / SKILL
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(f"---\nname: {SKILL}\ndescription: bench\n---\n")
        cases = [
            Case("ours", reported(lambda: _app_output(skill, env))),
            Case("floor", reported(lambda: _cli_output(skill, env))),
        ]
        stats = await interleave(cases, rounds)
        note = "ours from pressing Run; the CLI's from its start (it has no window to open)"
        outcomes[APP_OUTPUT.id] = Outcome(stats["ours"], stats["floor"], note=note)


GROUPS = (Group("app", (APP_START, APP_OUTPUT), app_rows),)
