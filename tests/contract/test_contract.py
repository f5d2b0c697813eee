"""The executor contract, proved the same way for every available posture."""

import asyncio
import time

import psutil
import pytest

from tests.contract.conftest import Harness, zombie_children
from workbench.executors.types import CancelToken, RunRequest, RunStatus, Stream
from workbench.monitor.process import all_processes, process_clock, run_tag, tagged_processes
from workbench.postures.model import Posture, PostureId, Severity

pytestmark = pytest.mark.timeout(60)


def _no_run_processes(run_id: str) -> bool:
    return not tagged_processes(run_tag(run_id), all_processes())


def test_streams_arrive_before_exit_and_apart(harness: Harness) -> None:
    ran = harness.run("sh", "-c", "echo out; echo err >&2; sleep 0.6; echo late")
    result = ran.result
    assert result.status is RunStatus.OK
    assert result.stdout.text == "out\nlate\n"
    assert result.stderr.text == "err\n"
    first_out = next(c for c in ran.chunks if c.stream is Stream.STDOUT)
    first_err = next(c for c in ran.chunks if c.stream is Stream.STDERR)
    assert first_out.data == b"out\n"
    assert first_err.data == b"err\n"
    assert first_out.t < 0.5 < result.wall_seconds  # arrived while the command still ran
    late = [c for c in ran.chunks if c.data == b"late\n"]
    assert late and late[0].t >= 0.6


@pytest.mark.parametrize(
    ("script", "status", "code"),
    [
        ("exit 0", RunStatus.OK, 0),
        ("exit 3", RunStatus.FAILED, 3),
    ],
)
def test_exit_codes(harness: Harness, script: str, status: RunStatus, code: int) -> None:
    result = harness.run("sh", "-c", script).result
    assert (result.status, result.exit_code, result.signal) == (status, code, None)
    assert result.cause == f"exited with code {code}"


def test_death_by_signal_is_a_failure_with_the_signal(harness: Harness) -> None:
    result = harness.run("sh", "-c", "kill -9 $$").result
    assert (result.status, result.exit_code, result.signal) == (RunStatus.FAILED, None, 9)
    assert result.cause == "killed by signal SIGKILL"


def test_env_and_working_folder(harness: Harness) -> None:
    # SKILL_DIR and WORKSPACE name the folders as the command sees them (a container mounts
    # them elsewhere): what counts is that they hold the skill's and the workspace's files.
    (harness.skill_dir / "marker").write_text("skill")
    (harness.workspace / "marker").write_text("workspace")
    ran = harness.run(
        "sh",
        "-c",
        'printf "%s|%s|%s|%s|%s" "$(cat "$SKILL_DIR/marker")" "$(cat "$WORKSPACE/marker")" '
        '"$(cat marker)" "$EXTRA" "$([ "$(pwd)" = "$WORKSPACE" ] && echo cwd)"',
        env={"EXTRA": "asked-for"},
    )
    assert ran.result.stdout.text.split("|") == [
        "skill",
        "workspace",
        "workspace",
        "asked-for",
        "cwd",
    ]


def test_command_not_found_is_an_error_result(harness: Harness) -> None:
    result = harness.run("definitely-not-a-command-xyz").result
    assert result.status is RunStatus.ERROR
    assert result.cause == "command not found: definitely-not-a-command-xyz"


def test_missing_workspace_is_an_error_result(harness: Harness) -> None:
    harness.workspace.rmdir()
    result = harness.run("true").result
    assert result.status is RunStatus.ERROR
    assert "workspace missing" in result.cause


def test_timeout_kills_the_whole_tree_including_setsid_escapes(harness: Harness) -> None:
    executor = harness.start(harness.posture(timeout_s=2))
    born_after = process_clock() - 0.05
    started = time.monotonic()
    ran = harness.run("sh", "-c", "sleep 60 & setsid sleep 60 & sleep 60", executor=executor)
    elapsed = time.monotonic() - started
    result = ran.result
    assert elapsed < 4
    assert result.status is RunStatus.TIMED_OUT
    assert result.cause == "wall-clock timeout of 2 s"
    assert result.leftover_processes == 0
    assert result.peak_processes >= _countable(harness, 3)  # the shell and its sleeps
    assert _no_run_processes(result.run_id)
    assert zombie_children(born_after) == []


def test_stop_cancels_and_kills(harness: Harness) -> None:
    started = time.monotonic()
    result = harness.run("sh", "-c", "setsid sleep 60 & sleep 60", cancel_after=0.3).result
    assert time.monotonic() - started < 2.5
    assert result.status is RunStatus.CANCELLED
    assert result.cause == "stopped by the user"
    assert result.leftover_processes == 0
    assert _no_run_processes(result.run_id)


def test_stop_pressed_before_the_run_started(harness: Harness) -> None:
    result = harness.run("sleep", "30", cancel_after=0).result
    assert result.status is RunStatus.CANCELLED
    assert result.leftover_processes == 0
    assert _no_run_processes(result.run_id)


def test_executor_stop_ends_runs_in_flight(harness: Harness) -> None:
    async def go() -> tuple[RunStatus, str]:
        run = asyncio.ensure_future(
            harness.executor.run(RunRequest(("sleep", "60")), lambda c: None, CancelToken())
        )
        await asyncio.sleep(0.3)
        await harness.executor.stop()
        await harness.executor.stop()  # idempotent
        result = await run
        assert _no_run_processes(result.run_id)
        return result.status, result.cause

    status, cause = harness.loop.run_until_complete(go())
    assert status is RunStatus.CANCELLED
    assert cause == "stopped because the session was closed"


def test_cancelling_the_run_task_still_kills_the_tree(harness: Harness) -> None:
    request = RunRequest(("sh", "-c", "setsid sleep 60 & sleep 60"))

    async def go() -> None:
        task = asyncio.ensure_future(harness.executor.run(request, lambda c: None, CancelToken()))
        await asyncio.sleep(0.4)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    harness.loop.run_until_complete(go())
    (run_dir,) = harness.session.runs_dir.iterdir()
    assert _no_run_processes(run_dir.name)


def test_concurrent_runs_stay_apart(harness: Harness) -> None:
    def request(word: str) -> RunRequest:
        return RunRequest(("sh", "-c", f"sleep 0.3; echo {word}"))

    async def go() -> list[str]:
        results = await asyncio.gather(
            *(harness.executor.run(request(w), lambda c: None, CancelToken()) for w in "ab")
        )
        assert results[0].run_id != results[1].run_id
        return [r.stdout.text for r in results]

    assert harness.loop.run_until_complete(go()) == ["a\n", "b\n"]


def test_background_process_left_behind_is_killed_and_reported(harness: Harness) -> None:
    result = harness.run("sh", "-c", "setsid sleep 60 & echo done").result
    assert result.status is RunStatus.OK
    assert result.stdout.text == "done\n"
    assert "killed 1 background process it left behind" in result.cause
    assert any("background" in w.text for w in result.warnings)
    assert result.leftover_processes == 0
    assert _no_run_processes(result.run_id)


def test_output_cap_truncates_memory_and_keeps_the_full_log(harness: Harness) -> None:
    ran = harness.run(
        "sh",
        "-c",
        "head -c 300000 /dev/zero | tr '\\0' a; echo tail >&2",
        output_cap_bytes=1000,
    )
    out = ran.result.stdout
    assert out.text == "a" * 1000
    assert out.truncated and out.total_bytes == 300000
    assert out.log_path is not None and out.log_path.stat().st_size == 300000
    assert sum(len(c.data) for c in ran.chunks if c.stream is Stream.STDOUT) == 1000
    assert not ran.result.stderr.truncated
    assert ran.result.stderr.text == "tail\n"


def test_invalid_utf8_is_replaced(harness: Harness) -> None:
    result = harness.run("sh", "-c", "printf 'ok \\377\\376 done'").result
    assert result.stdout.text == "ok \ufffd\ufffd done"
    assert result.stdout.log_path is not None
    assert result.stdout.log_path.read_bytes() == b"ok \xff\xfe done"


def test_monitor_samples_cpu_memory_and_processes(harness: Harness) -> None:
    ran = harness.run(
        "python3",
        "-c",
        "import time\nx = bytearray(30_000_000)\nt = time.time()\n"
        "while time.time() - t < 0.6: pass",
    )
    result = ran.result
    assert result.status is RunStatus.OK
    assert len(ran.samples) >= 3 and tuple(ran.samples) == result.samples
    assert result.peak_rss_bytes > 30_000_000
    assert result.peak_processes >= _countable(harness, 1)
    assert max(s.cpu_percent for s in result.samples) > 20  # a busy core, on a shared machine
    assert 0.1 < result.cpu_seconds < 2  # sampled: the last tick may miss up to 0.1 s


def test_result_names_the_run_folder_and_posture_warnings(harness: Harness) -> None:
    result = harness.run("true").result
    assert result.run_dir == harness.session.runs_dir / result.run_id
    assert (result.run_dir / "stdout.log").is_file()
    assert result.card.posture.id is harness.posture_id
    assert result.warnings  # every posture has something to say
    assert result.changes == ()
    if harness.posture_id.value == "local":
        assert [w.severity for w in result.warnings].count(Severity.DANGER) >= 2


@pytest.mark.slow
def test_100_mb_of_stdout_keeps_app_memory_and_disk_flat(harness: Harness) -> None:
    rss_before = psutil.Process().memory_info().rss
    ran = harness.run("sh", "-c", "head -c 100000000 /dev/zero")
    growth = psutil.Process().memory_info().rss - rss_before
    out = ran.result.stdout
    assert ran.result.status is RunStatus.OK
    assert growth < 100_000_000
    assert out.truncated and out.total_bytes == 100_000_000
    log_cap = Posture(harness.posture_id).limits.log_bytes
    assert out.log_dropped_bytes == 100_000_000 - log_cap
    assert out.log_path is not None and log_cap < out.log_path.stat().st_size < log_cap + 200
    assert len(out.text) == 4 * 1024 * 1024
    print(f"app RSS growth for 100 MB of stdout: {growth / 1e6:.1f} MB")
    out.log_path.unlink()


def _countable(harness: Harness, processes: int) -> int:
    """`processes`, or 0 under gVisor: its processes live in its own kernel, so the host
    cannot count them (the run reports 0: not known)."""
    return 0 if harness.posture_id is PostureId.GVISOR else processes
