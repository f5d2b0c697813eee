"""The executor contract for the quickjs posture, written in JavaScript.

The shared contract suite (`tests/contract`) runs shell commands, which this posture refuses
by design, so quickjs is not in its `CONTRACT_POSTURES`. These are the same cases, through the
same `Harness` and `build_executor`, as JS scripts, and again with warm workers from a pool
(`WarmHarness`); plus the bundled JavaScript example skill
run end to end by the CLI, with the workspace change it makes.
"""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.contract.conftest import Harness, Ran
from tests.waiting import until
from workbench.executors.contract import Executor
from workbench.executors.types import RunStatus, SessionSpec, Stream
from workbench.executors.warm.quickjs import QuickJsWorkerPool
from workbench.monitor.process import all_processes, run_tag, tagged_processes
from workbench.postures.model import Posture, PostureId, Severity

pytestmark = pytest.mark.timeout(60)
EXAMPLE_SKILL = Path(__file__).parents[3] / "resources/skills/csv-to-markdown"


class WarmHarness(Harness):
    """The harness with executors of a reusing `QuickJsWorkerPool`: every run that gets to
    its worker adopts a warm one (the harness waits until one is ready)."""

    def __init__(self, posture_id: PostureId, base: Path) -> None:
        self.pool = QuickJsWorkerPool(size=1, reuse=True)
        super().__init__(posture_id, base)

    def start(self, posture: Posture, session: SessionSpec | None = None) -> Executor:
        executor = self.pool.executor(posture)
        self.loop.run_until_complete(executor.start(session or self.session))
        self._started.append(executor)
        return executor

    def run(self, *argv: str, executor: Executor | None = None, **request: Any) -> Ran:
        async def ready() -> None:
            await self.pool.prime((executor or self.executor).posture, self.session)
            await until(lambda: self.pool.status().ready)

        self.loop.run_until_complete(ready())
        ran = super().run(*argv, executor=executor, **request)
        if ran.result.status is not RunStatus.ERROR:
            assert "warm worker" in ran.result.card.started, ran.result.card
        return ran

    def close(self) -> None:
        self.loop.run_until_complete(self.pool.close())
        assert self.pool.leftover == 0
        super().close()


@pytest.fixture(params=["cold", "warm"])
def js(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Harness]:
    """A started quickjs executor (from the registry, or from a pool of warm workers), on a
    fresh skill and workspace."""
    harness = (Harness if request.param == "cold" else WarmHarness)(PostureId.QUICKJS, tmp_path)
    yield harness
    harness.close()


def script(harness: Harness, source: str, name: str = "main.js") -> str:
    (harness.workspace / name).write_text(source)
    return name


def test_streams_arrive_before_the_end_and_apart(js: Harness) -> None:
    source = """
    console.log("out"); console.error("err");
    const until = Date.now() + 600; while (Date.now() < until) {}
    console.log("late");
    """
    ran = js.run(script(js, source))
    assert ran.result.status is RunStatus.OK
    assert (ran.result.stdout.text, ran.result.stderr.text) == ("out\nlate\n", "err\n")
    first_out = next(c for c in ran.chunks if c.stream is Stream.STDOUT)
    assert first_out.data == b"out\n"
    assert first_out.t < 0.5 < ran.result.wall_seconds
    late = next(c for c in ran.chunks if c.data == b"late\n")
    assert late.t >= 0.6


def test_runs_in_the_workspace_and_resolves_skill_scripts(js: Harness) -> None:
    (js.skill_dir / "tool.js").write_text("fs.writeText('made-by-skill.txt', scriptArgs[0]);")
    result = js.run("$SKILL_DIR/tool.js", "hi", env={"IGNORED": "x"}).result
    assert result.status is RunStatus.OK
    assert (js.workspace / "made-by-skill.txt").read_text() == "hi"
    assert result.card.env_dropped == ("IGNORED",)  # JavaScript sees no environment


def test_shell_commands_are_an_error_result(js: Harness) -> None:
    result = js.run("sh", "-c", "echo hi").result
    assert result.status is RunStatus.ERROR
    assert "JavaScript files only" in result.cause


def test_missing_workspace_is_an_error_result(js: Harness) -> None:
    js.workspace.rmdir()
    assert js.run("main.js").result.status is RunStatus.ERROR


def test_timeout_kills_the_worker_and_nothing_is_left(js: Harness) -> None:
    executor = js.start(js.posture(timeout_s=1))
    result = js.run(script(js, "while (true) {}"), executor=executor).result
    assert result.status is RunStatus.TIMED_OUT
    assert result.cause == "wall-clock timeout of 1 s"
    assert result.leftover_processes == 0
    assert not tagged_processes(run_tag(result.run_id), all_processes())


def test_stop_cancels_and_kills(js: Harness) -> None:
    result = js.run(script(js, "while (true) {}"), cancel_after=0.5).result
    assert result.status is RunStatus.CANCELLED
    assert result.leftover_processes == 0
    assert result.wall_seconds < 5


def test_output_cap_truncates_memory_and_keeps_the_full_log(js: Harness) -> None:
    source = "for (let i = 0; i < 2000; i++) console.log('x'.repeat(99));"
    result = js.run(script(js, source), output_cap_bytes=1000).result
    assert result.status is RunStatus.OK
    assert result.stdout.truncated
    assert len(result.stdout.text.encode()) <= 1000
    assert result.stdout.total_bytes == 200_000
    assert result.stdout.log_path is not None
    assert result.stdout.log_path.stat().st_size == 200_000


def test_monitor_samples_and_result_metadata(js: Harness) -> None:
    source = "const until = Date.now() + 500; while (Date.now() < until) {}"
    ran = js.run(script(js, source))
    assert ran.samples and max(s.processes for s in ran.samples) == 1  # the worker alone
    assert ran.result.peak_rss_bytes > 0 and ran.result.cpu_seconds > 0  # no timing: shared CPUs
    assert ran.result.run_dir is not None and ran.result.run_dir.is_dir()
    assert any(w.severity is Severity.INFO for w in ran.result.warnings)


def test_example_skill_transforms_a_workspace_file(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "data.csv").write_text('name,note\nada,"likes, commas"\n')
    command = [
        *(sys.executable, "-m", "workbench", "run", "--skill", str(EXAMPLE_SKILL)),
        *("--posture", "quickjs", "--workspace", str(workspace), "--json", "--"),
        *("scripts/csv-to-markdown.js", "data.csv"),
    ]
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert result["status"] == "ok"
    assert [(c["path"], c["kind"]) for c in result["changes"]] == [("data.md", "added")]
    assert (workspace / "data.md").read_text().splitlines() == [
        "| name | note |",
        "|---|---|",
        "| ada | likes, commas |",
    ]
