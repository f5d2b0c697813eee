"""Process tables: plain text, the breadth-first cap, and a real local run's tree."""

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

import psutil
import pytest

from workbench.executors import build_executor
from workbench.executors.bubblewrap.loader import loader_launch
from workbench.executors.hardened import limits_exec
from workbench.executors.process.runner import _AdoptedSampler
from workbench.executors.types import CancelToken, OutputChunk, RunRequest, SessionSpec
from workbench.monitor.process import ProcessTreeSampler, run_tag
from workbench.monitor.process_table import (
    MAX_ROWS,
    REPLACEMENT,
    TABLE_INTERVAL_S,
    Reading,
    TableBuilder,
    own_process,
    plain_text,
)
from workbench.monitor.sample import ProcessTable, ResourceSample
from workbench.postures.model import Posture, PostureId


def run_collecting(posture: Posture, *argv: str) -> list[ResourceSample]:
    """Run `argv` under `posture` in a fresh session; every live sample it produced."""
    samples: list[ResourceSample] = []
    with tempfile.TemporaryDirectory(prefix="wb-tree-") as folder:
        base = Path(folder)
        base.chmod(0o755)
        for name in ("skill", "workspace"):
            (base / name).mkdir(mode=0o755)
        (base / "skill" / "SKILL.md").write_text("---\nname: demo\n---\n")
        spec = SessionSpec(base / "skill", "demo", base / "workspace", base / "runs")
        executor = build_executor(posture)

        def sink(chunk: OutputChunk) -> None:
            del chunk

        async def go() -> None:
            await executor.start(spec)
            try:
                request = RunRequest(argv, on_sample=samples.append)
                await executor.run(request, sink, CancelToken())
            finally:
                await executor.stop()

        asyncio.run(go())
    return samples


def tables(samples: list[ResourceSample]) -> list[ProcessTable]:
    return [s.tree for s in samples if s.tree is not None]


def fullest(found: list[ProcessTable]) -> ProcessTable:
    """The last of the tables with the most processes (children forked by then have also
    had time to exec their command)."""
    most = max(t.total for t in found)
    return next(t for t in reversed(found) if t.total == most)


def test_plain_text_replaces_control_and_bidi_characters_and_shortens() -> None:
    assert plain_text("ok\x1b[31mred\nline\u202eevil\x00", 80) == (
        f"ok{REPLACEMENT}[31mred{REPLACEMENT}line{REPLACEMENT}evil{REPLACEMENT}"
    )
    assert plain_text("<b>bold</b> é 漢字", 80) == "<b>bold</b> é 漢字"
    assert plain_text("x" * 50, 10) == "x" * 9 + "…"


def test_a_local_run_yields_a_parent_with_two_children() -> None:
    samples = run_collecting(Posture(PostureId.LOCAL), "sh", "-c", "sleep 1 & sleep 1 & wait")
    found = tables(samples)
    assert found, "no sample carried a process table"
    assert len(found) < len(samples)  # a table on some samples only, not on every tick
    assert all(t.pid_space == "host" and not t.hidden for t in found)
    full = fullest(found)
    assert full.total == len(full.rows) == 3
    roots = [row for row in full.rows if row.ppid == 0]
    assert [row.name for row in roots] == ["sh"]
    children = [row for row in full.rows if row.ppid == roots[0].pid]
    assert [row.name for row in children] == ["sleep", "sleep"]
    assert {row.cmdline for row in children} == {"sleep 1"}
    assert roots[0].cmdline == "sh -c sleep 1 & sleep 1 & wait"
    assert all(row.rss_bytes > 0 for row in full.rows)


class FakeProcess:
    """Enough of a `psutil.Process` for the table builder."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def cmdline(self) -> list[str]:
        return ["sh", "-c", ":(){ :|:& };:"]


def reading(pid: int, ppid: int, cpu_seconds: float = 0.0) -> Reading:
    return Reading(cast(psutil.Process, FakeProcess(pid)), ppid, "bomb", 4096, cpu_seconds)


def test_a_fork_bomb_table_is_capped_breadth_first_and_counts_the_rest() -> None:
    # A binary tree of 1,200 processes under pid 1000 (whose parent is not in the run).
    readings = [reading(1000, 1)] + [reading(1000 + i, 1000 + (i - 1) // 2) for i in range(1, 1200)]
    table = TableBuilder(started=0.0).build(reversed(readings), now=1.0)
    assert table.total == 1200
    assert len(table.rows) == MAX_ROWS
    assert [row.pid for row in table.rows] == list(range(1000, 1000 + MAX_ROWS))
    assert table.rows[0].ppid == 0  # its parent is not part of the run: a root
    shown = {row.pid for row in table.rows}
    assert all(row.ppid in shown for row in table.rows[1:])  # the shape is kept


class EndedProcess(FakeProcess):
    """A process that has just ended (a zombie): its command line reads empty."""

    def cmdline(self) -> list[str]:
        return []


def test_a_process_that_just_ended_keeps_the_command_it_had() -> None:
    builder = TableBuilder(started=0.0)
    builder.build([reading(10, 1)], now=1.0)
    ended = Reading(cast(psutil.Process, EndedProcess(10)), 1, "bomb", 0, 0.0)
    (row,) = builder.build([ended], now=2.0).rows
    assert row.cmdline == "sh -c :(){ :|:& };:"
    unseen = Reading(cast(psutil.Process, EndedProcess(11)), 1, "bomb", 0, 0.0)
    assert TableBuilder(started=0.0).build([unseen], now=1.0).rows[0].cmdline == ""


def test_cpu_percent_is_per_process_since_the_previous_table() -> None:
    builder = TableBuilder(started=0.0)
    first = builder.build([reading(10, 1, cpu_seconds=0.5)], now=1.0)
    assert first.rows[0].cpu_percent == pytest.approx(50.0)  # born since the run started
    assert not builder.due(1.1)  # the next table waits
    second = builder.build([reading(10, 1, cpu_seconds=0.9), reading(11, 10, 0.1)], now=2.0)
    assert [(r.pid, round(r.cpu_percent)) for r in second.rows] == [(10, 40), (11, 10)]
    adopted = TableBuilder(started=0.0, spent_before={10: 3.0})  # a warm worker's past CPU
    third = adopted.build([reading(10, 1, cpu_seconds=3.25)], now=0.5)
    assert third.rows[0].cpu_percent == pytest.approx(50.0)


def test_an_adopted_warm_process_shows_only_the_cpu_it_spends_in_the_run() -> None:
    warm = subprocess.Popen(
        [sys.executable, "-c", "import time\nwhile time.process_time() < 0.4: pass\ntime.sleep(30)"]
    )
    try:
        process = psutil.Process(warm.pid)
        while sum(process.cpu_times()[:2]) < 0.35:  # it warms up, then idles
            time.sleep(0.02)
        time.sleep(0.1)

        async def go() -> ProcessTable | None:
            loop = asyncio.get_running_loop()
            sampler = _AdoptedSampler(process, run_tag("t-warm"), loop.time(), None, tuple)
            await asyncio.sleep(0.05)
            return sampler.sample().tree

        table = asyncio.run(go())
    finally:
        warm.kill()
        warm.wait()
    assert table is not None and [row.pid for row in table.rows] == [warm.pid]
    assert table.rows[0].cpu_percent < 50  # not its 0.4 s of warming up over 0.05 s


def test_no_table_is_sent_once_the_runs_processes_are_gone() -> None:
    child = subprocess.Popen(["sleep", "30"])

    async def go() -> tuple[ProcessTable | None, ProcessTable | None]:
        sampler = ProcessTreeSampler(
            psutil.Process(child.pid), run_tag("t-gone"), asyncio.get_running_loop().time()
        )
        first = sampler.sample().tree
        child.kill()
        child.wait()
        await asyncio.sleep(TABLE_INTERVAL_S + 0.05)  # the next table is due
        return first, sampler.sample().tree

    first, after = asyncio.run(go())
    assert first is not None and [row.pid for row in first.rows] == [child.pid]
    assert after is None  # the last table with the run's processes stays the last one


def test_the_workbenchs_own_worker_is_named_not_shown_with_its_settings() -> None:
    worker = [
        sys.executable,
        "-I",
        "-m",
        "workbench.executors.quickjs.worker.main",
        '{"rlimits": {"CORE": [0]}}',
    ]
    assert own_process(worker) == "QuickJS worker (workbench.executors.quickjs.worker.main)"
    assert own_process([sys.executable, "-m", "http.server"]) == ""  # not one of ours
    assert own_process(["/usr/bin/python3", "-m", "workbench.executors.quickjs.worker.main"]) == ""
    assert own_process(["sh", "-c", "true"]) == ""


def test_a_perl_helper_shows_the_command_it_is_about_to_become() -> None:
    command = ["sh", "-c", 'python3 "$SKILL_DIR/run.py"']
    wrapper, _ = limits_exec.wrapper_launch({"CPU": (30, 31)}, 12345, 7, ["PATH", "LANG"], {})
    assert "env=PATH" in wrapper and "--" in wrapper  # what the table showed before
    assert own_process([*wrapper, *command]) == 'sh -c python3 "$SKILL_DIR/run.py"'
    loader, _ = loader_launch(7, {"NOFILE": 64}, [("ro", "/usr")], None, {})
    assert own_process([*loader, *command]) == own_process([*wrapper, *command])
    other = ["/usr/bin/perl", "-e", "exec @ARGV", "--", *command]
    assert own_process(other) == ""  # not one of the workbench's helpers
