"""`run_process()` and `supervise()` driven directly with one `RunSettings`, on real processes."""

import asyncio
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.fds import held_open
from tests.waiting import until
from workbench.executors.process import runner
from workbench.executors.process.capture import StreamCapture
from workbench.executors.process.reaper import KillReport, reap_orphans, spawning
from workbench.executors.process.runner import (
    EndedBy,
    Launch,
    ProcessOutcome,
    RunSettings,
    run_process,
    supervise,
)
from workbench.executors.process.spawned import Spawned, spawn
from workbench.executors.types import CancelToken, OutputChunk, Stream
from workbench.monitor.process import process_clock, run_tag


def _python(tmp_path: Path, source: str) -> Launch:
    return Launch((sys.executable, "-c", source), dict(os.environ), tmp_path)


def _settings(tmp_path: Path, **changes: Any) -> RunSettings:
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    settings = RunSettings(run_dir, 30.0, 1024, lambda _: None, CancelToken(), asyncio.Event())
    return replace(settings, **changes)


def test_run_process_spools_to_the_run_folder_and_feeds_the_sink(tmp_path: Path) -> None:
    chunks: list[OutputChunk] = []
    source = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"

    async def main() -> ProcessOutcome:
        return await run_process(
            _python(tmp_path, source), _settings(tmp_path, sink=chunks.append), "r1"
        )

    outcome = asyncio.run(main())
    assert (outcome.ended_by, outcome.returncode) == (EndedBy.EXIT, 3)
    assert (outcome.stdout.text, outcome.stderr.text) == ("out\n", "err\n")
    assert (tmp_path / "run" / "stdout.log").read_bytes() == b"out\n"
    assert (tmp_path / "run" / "stderr.log").read_bytes() == b"err\n"
    assert b"".join(c.data for c in chunks if c.stream is Stream.STDOUT) == b"out\n"


def test_run_process_keeps_each_stream_to_the_cap(tmp_path: Path) -> None:
    async def main() -> ProcessOutcome:
        launch = _python(tmp_path, "print('x' * 100)")
        return await run_process(launch, _settings(tmp_path, cap_bytes=10), "r2")

    outcome = asyncio.run(main())
    assert (outcome.stdout.text, outcome.stdout.total_bytes) == ("x" * 10, 101)
    assert outcome.stdout.truncated


def test_a_command_that_cannot_start_is_a_spawn_error(tmp_path: Path) -> None:
    async def main() -> ProcessOutcome:
        launch = Launch((str(tmp_path / "missing"),), dict(os.environ), tmp_path)
        return await run_process(launch, _settings(tmp_path), "r3")

    outcome = asyncio.run(main())
    assert outcome.ended_by is EndedBy.SPAWN_ERROR
    assert outcome.spawn_error == f"command not found: {tmp_path / 'missing'}"


def test_stop_shutdown_and_the_timeout_each_end_the_run_and_kill_it(tmp_path: Path) -> None:
    async def main(ended_by: EndedBy) -> tuple[ProcessOutcome, list[int]]:
        cancel, shutdown, pids = CancelToken(), asyncio.Event(), []

        async def on_spawned(pid: int) -> None:
            pids.append(pid)
            if ended_by is EndedBy.CANCEL:
                cancel.cancel()
            elif ended_by is EndedBy.SHUTDOWN:
                shutdown.set()

        timeout_s = 0.2 if ended_by is EndedBy.TIMEOUT else 30.0
        settings = _settings(
            tmp_path, timeout_s=timeout_s, cancel=cancel, shutdown=shutdown, on_spawned=on_spawned
        )
        launch = _python(tmp_path, "import time; time.sleep(60)")
        return await run_process(launch, settings, f"r-{ended_by}"), pids

    for ended_by in (EndedBy.CANCEL, EndedBy.SHUTDOWN, EndedBy.TIMEOUT):
        outcome, pids = asyncio.run(main(ended_by))
        assert outcome.ended_by is ended_by
        assert len(pids) == 1  # on_spawned was called with the root
        assert outcome.returncode is not None and outcome.returncode < 0  # killed by a signal
        assert outcome.kill.leftover == 0


def test_supervise_adopts_a_spawned_process_with_its_early_output(tmp_path: Path) -> None:
    async def main() -> ProcessOutcome:
        spawned = await spawn(_python(tmp_path, "print('early')"), "r4")
        assert not isinstance(spawned, str)
        await asyncio.wait_for(spawned.pipes.exited, 30)  # it printed before any run adopted it
        return await supervise(spawned, _settings(tmp_path))

    outcome = asyncio.run(main())
    assert (outcome.ended_by, outcome.returncode) == (EndedBy.EXIT, 0)
    assert outcome.stdout.text == "early\n"


def test_orphans_reaped_meanwhile_never_take_a_spawned_root_s_exit_code(tmp_path: Path) -> None:
    """Another run's kill reaps the app's zombie children while this one spawns its root."""
    codes: list[int | None] = []

    async def main() -> None:
        since, done = process_clock() - 1, asyncio.Event()

        async def other_runs_reaping() -> None:
            while not done.is_set():
                reap_orphans(since)
                await asyncio.sleep(0)

        reaping = asyncio.create_task(other_runs_reaping())
        for number in range(100):
            spawned = await spawn(Launch(("sh", "-c", "exit 3"), {}, tmp_path), f"r{number}")
            assert not isinstance(spawned, str)
            await spawned.pipes.exited
            codes.append(spawned.transport.get_returncode())
            spawned.transport.close()
        done.set()
        await reaping

    asyncio.run(main())
    assert set(codes) == {3}


def test_a_zombie_left_to_a_spawn_under_way_is_reaped_when_it_is_done() -> None:
    since = process_clock() - 1
    with spawning(run_tag("a-run-being-spawned")):
        pid = os.posix_spawn("/bin/true", ["/bin/true"], {})  # a child nobody waits for
        zombie = psutil.Process(pid)
        while zombie.status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.01)
        assert reap_orphans(since) == 0  # it could be the root being spawned
        assert zombie.status() == psutil.STATUS_ZOMBIE
    assert not psutil.pid_exists(pid)  # reaped as the spawn ended


def test_a_command_that_cannot_start_never_waits_for_the_log_thread_on_the_loop(
    tmp_path: Path, held_log_thread: Callable[[], bool]
) -> None:
    released: list[bool] = []  # whether the loop let the held log thread go

    async def main() -> ProcessOutcome:
        # The loop itself lets the log thread go: a loop waiting for the thread could not.
        asyncio.get_running_loop().call_later(0.2, lambda: released.append(held_log_thread()))
        launch = Launch(("no-such-command-here",), dict(os.environ), tmp_path)
        return await run_process(launch, _settings(tmp_path), "r-missing")

    outcome = asyncio.run(asyncio.wait_for(main(), 60))
    assert released == [True]
    assert outcome.ended_by is EndedBy.SPAWN_ERROR
    assert (tmp_path / "run" / "stdout.log").read_bytes() == b""


def test_a_run_cancelled_after_its_kill_still_closes_its_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spawned: list[Spawned] = []
    captures: list[StreamCapture] = []  # held, so the collector never closes a log for the run
    make_captures = RunSettings.captures

    async def spawn_and_keep(launch: Launch, tag_id: str) -> Spawned | str:
        done = await spawn(launch, tag_id)
        if not isinstance(done, str):
            spawned.append(done)
        return done

    def kept_captures(settings: RunSettings) -> dict[int, StreamCapture]:
        made = make_captures(settings)
        captures.extend(made.values())
        return made

    async def kill_that_spares_then_cancel(*args: Any) -> KillReport:
        # The root lives on, so the run waits for its exit next: the cancel lands there.
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        return KillReport(signalled=1, leftover=0)

    monkeypatch.setattr(runner, "spawn", spawn_and_keep)
    monkeypatch.setattr(RunSettings, "captures", kept_captures)
    monkeypatch.setattr(runner, "kill_run", kill_that_spares_then_cancel)
    launch = _python(tmp_path, "import time; print('every byte', flush=True); time.sleep(60)")
    stop = CancelToken()

    def stop_at_the_line_end(chunk: OutputChunk) -> None:
        if b"\n" in chunk.data:  # the line may come in pieces; the log has it all by now
            stop.cancel()

    settings = _settings(tmp_path, sink=stop_at_the_line_end, cancel=stop)

    async def main() -> None:
        try:
            with pytest.raises(asyncio.CancelledError):
                await run_process(launch, settings, "r-cancelled")
        finally:  # the run's end kills the root (closing its transport): wait until it is reaped
            await until(lambda: all(s.transport.get_returncode() is not None for s in spawned))

    asyncio.run(main())
    assert len(captures) == 2
    log = tmp_path / "run" / "stdout.log"
    deadline = time.monotonic() + 5
    while held_open(log) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not held_open(log)
    assert log.read_bytes() == b"every byte\n"
