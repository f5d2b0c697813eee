"""The psutil tree sampler and the /proc helpers that find a run's processes."""

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from workbench.executors.process.reaper import become_subreaper, reap_orphans
from workbench.monitor import process as process_module
from workbench.monitor.process import (
    RUN_TAG_ENV,
    ProcessTreeSampler,
    all_processes,
    carries_tag,
    descendants,
    process_clock,
    run_tag,
    tagged_processes,
)
from workbench.monitor.sample import ResourceSample


@pytest.fixture
def tagged_tree() -> Iterator[subprocess.Popen[bytes]]:
    """A shell with two sleeping children, tagged as run `t-tree`."""
    env = {**os.environ, RUN_TAG_ENV: "t-tree"}
    since = process_clock() - 0.05
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"], env=env)
    deadline = time.monotonic() + 5

    def started() -> bool:  # three processes, each past its exec: during it, a process has
        tree = descendants([proc.pid])  # neither command line nor environment to read
        return len(tree) == 3 and all(_command(pid) for pid in tree)

    while not started() and time.monotonic() < deadline:
        time.sleep(0.01)
    yield proc
    for pid in descendants([proc.pid]):
        psutil.Process(pid).kill()
    proc.wait()
    time.sleep(0.05)
    reap_orphans(since)  # the sleeps may have been adopted by this (subreaper) process


def _command(pid: int) -> list[str]:
    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error:
        return []


def test_tree_and_tag_helpers(tagged_tree: subprocess.Popen[bytes]) -> None:
    tree = descendants([tagged_tree.pid])
    assert len(tree) == 3
    assert all(carries_tag(pid, run_tag("t-tree")) for pid in tree)
    assert not carries_tag(tagged_tree.pid, run_tag("t-other"))
    assert tagged_processes(run_tag("t-tree"), all_processes()) == tree


def test_sampler_reads_cpu_memory_and_count() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "x = bytearray(20_000_000)\nwhile True: pass"])
    received: list[ResourceSample] = []

    async def go() -> ProcessTreeSampler:
        five = asyncio.Event()

        def receive(sample: ResourceSample) -> None:
            received.append(sample)
            if len(received) >= 5:
                five.set()

        sampler = ProcessTreeSampler(
            psutil.Process(busy.pid), run_tag("t-none"), asyncio.get_running_loop().time(), receive
        )
        task = asyncio.create_task(sampler.run(interval_s=0.05))
        async with asyncio.timeout(30):  # five samples, however loaded the machine is
            await five.wait()
        task.cancel()
        return sampler

    try:
        sampler = asyncio.run(go())
        spent = sum(psutil.Process(busy.pid).cpu_times()[:2])  # what the loop really used
    finally:
        busy.kill()
        busy.wait()
    assert received == sampler.samples and len(received) >= 5
    assert [s.t for s in received] == sorted(s.t for s in received)
    # How much CPU a busy loop gets depends on the machine's load; the readings must only be
    # real: some, and never more than the process spent.
    assert max(s.cpu_percent for s in received) > 0
    assert 0 < sampler.cpu_seconds <= spent
    assert sampler.peak_rss_bytes > 20_000_000
    assert sampler.peak_processes == 1


def test_sampler_follows_a_tagged_orphan() -> None:
    assert become_subreaper()
    since = process_clock() - 0.05
    env = {**os.environ, RUN_TAG_ENV: "t-orphan"}
    with subprocess.Popen(
        ["sh", "-c", "setsid sleep 30 & echo started"], env=env, stdout=subprocess.PIPE
    ) as shell:
        assert shell.stdout is not None and shell.stdout.readline() == b"started\n"
        root = psutil.Process(shell.pid)
    try:

        async def follow() -> tuple[set[int], set[int]]:
            sampler = ProcessTreeSampler(root, run_tag("t-orphan"), 0.0)
            # The orphan may still be in the middle of its exec, when an ordinary user cannot
            # read its environment (neither can the sampler, which asks again).
            deadline = time.monotonic() + 5
            while True:
                members = sampler.members()
                orphans = tagged_processes(run_tag("t-orphan"), all_processes())
                if (orphans and members == orphans) or time.monotonic() > deadline:
                    return members, orphans
                await asyncio.sleep(0.01)

        members, orphans = asyncio.run(follow())
        assert len(orphans) == 1 and members == orphans
        (orphan,) = orphans
        assert psutil.Process(orphan).ppid() == os.getpid()  # adopted by the subreaper
    finally:
        for pid in tagged_processes(run_tag("t-orphan"), all_processes()):
            psutil.Process(pid).kill()
        time.sleep(0.1)
        assert reap_orphans(since) >= 1
    assert not psutil.pid_exists(orphan)  # reaped, not a zombie


@pytest.mark.slow
@pytest.mark.parametrize("sleepers", [2, 40])
def test_sampling_cost_report(sleepers: int) -> None:
    """Reports the CPU the sampling loop costs (the budget is 2 % of one core); asserts only
    that it kept sampling and saw the whole tree."""
    since = process_clock() - 0.05
    script = "sleep 30 & " * sleepers + "wait"
    shell = subprocess.Popen(["sh", "-c", script], env={**os.environ, RUN_TAG_ENV: "t-cost"})
    while len(descendants([shell.pid])) < sleepers + 1:
        time.sleep(0.01)

    async def go() -> tuple[float, ProcessTreeSampler]:
        sampler = ProcessTreeSampler(
            psutil.Process(shell.pid), run_tag("t-cost"), asyncio.get_running_loop().time()
        )
        start = time.thread_time()
        task = asyncio.create_task(sampler.run())
        await asyncio.sleep(3)
        task.cancel()
        return time.thread_time() - start, sampler

    try:
        spent, sampler = asyncio.run(go())
    finally:
        for pid in descendants([shell.pid]):
            psutil.Process(pid).kill()
        shell.wait()
        time.sleep(0.05)
        reap_orphans(since)
    count = len(sampler.samples)
    assert count >= 3  # kept sampling (the budget slows it on a loaded machine)
    assert sampler.peak_processes == sleepers + 1
    print(
        f"\nsampler, {sleepers + 1} processes: {count / 3:.1f} Hz, "
        f"{spent / count * 1000:.2f} ms per sample, {spent / 3 * 100:.2f} % of one core"
    )


def test_an_orphan_whose_tag_cannot_be_read_yet_is_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A child read in the middle of an exec shows an empty environment: no verdict yet."""
    env = {**os.environ, RUN_TAG_ENV: "t-later"}
    child = subprocess.Popen(["sleep", "30"], env=env)
    answers = iter([None, None])
    real = process_module.tag_verdict

    def verdict(pid: int, tag: bytes) -> bool | None:
        return next(answers, real(pid, tag)) if pid == child.pid else real(pid, tag)

    try:
        while not carries_tag(child.pid, run_tag("t-later")):  # sleep has been exec'd
            time.sleep(0.01)
        monkeypatch.setattr(process_module, "tag_verdict", verdict)
        sampler = ProcessTreeSampler(None, run_tag("t-later"), 0.0)
        assert child.pid not in sampler.members()  # the environment could not be read
        assert child.pid not in sampler.members()
        assert child.pid in sampler.members()  # read now: a tagged orphan, followed from here
    finally:
        child.kill()
        child.wait()
