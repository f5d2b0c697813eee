"""The container sampler: cgroup v1 and v2 files found from a PID, counters, samples and peaks."""

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from workbench.executors.docker.sampler import CgroupCounters, CgroupFiles, ContainerSampler
from workbench.monitor.sample import ResourceSample

CID = "docker/abc123"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def v1_tree(tmp_path: Path) -> tuple[Path, Path]:
    proc, root = tmp_path / "proc", tmp_path / "cgroup"
    write(
        proc / "42" / "cgroup",
        f"8:pids:/{CID}\n4:memory:/{CID}\n2:cpu,cpuacct:/{CID}\n0::/{CID}\n",
    )
    write(root / "cpuacct" / CID / "cpuacct.usage", "1500000000\n")
    write(root / "memory" / CID / "memory.usage_in_bytes", "4096\n")
    write(
        root / "memory" / CID / "memory.oom_control",
        "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
    )
    write(root / "pids" / CID / "pids.current", "5\n")
    write(root / "pids" / CID / "pids.events", "max 7\n")
    return proc, root


def test_v1_files_from_the_pid(tmp_path: Path) -> None:
    proc, root = v1_tree(tmp_path)
    files = CgroupFiles.for_pid(42, proc, root)
    assert files is not None and files.version == 1
    usage = files.usage()
    assert (usage.cpu_ns, usage.memory_bytes, usage.tasks) == (1_500_000_000, 4096, 5)
    assert files.counters() == CgroupCounters(oom_kills=3, pids_max_hits=7)
    write(root / "pids" / CID / "cgroup.procs", "4242\n4250\n")
    assert (files.tasks(), files.processes()) == (5, [4242, 4250])


def test_v2_files_from_the_pid(tmp_path: Path) -> None:
    proc, root = tmp_path / "proc", tmp_path / "cgroup"
    write(proc / "42" / "cgroup", f"0::/{CID}\n")
    write(root / "cgroup.controllers", "cpu memory pids\n")
    write(root / CID / "cpu.stat", "usage_usec 2500\nuser_usec 2000\n")
    write(root / CID / "memory.current", "8192\n")
    write(root / CID / "memory.events", "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n")
    write(root / CID / "pids.current", "2\n")
    write(root / CID / "pids.events", "max 0\n")
    files = CgroupFiles.for_pid(42, proc, root)
    assert files is not None and files.version == 2
    usage = files.usage()
    assert (usage.cpu_ns, usage.memory_bytes, usage.tasks) == (2_500_000, 8192, 2)
    assert files.counters() == CgroupCounters(oom_kills=1, pids_max_hits=0)
    write(root / CID / "cgroup.procs", "77\n")
    assert (files.tasks(), files.processes()) == (2, [77])


def test_unreadable_files_mean_none(tmp_path: Path) -> None:
    proc, root = v1_tree(tmp_path)
    (root / "memory" / CID / "memory.usage_in_bytes").unlink()
    assert CgroupFiles.for_pid(42, proc, root) is None
    assert CgroupFiles.for_pid(99, proc, root) is None  # no such process here


def test_cgroup_sampler_samples_at_10_hz_and_keeps_peaks(tmp_path: Path) -> None:
    proc, root = v1_tree(tmp_path)
    session = [4_000_001, 4_000_002]  # the idle session's init and supervisor (not on this host)
    procs = root / "pids" / CID / "cgroup.procs"
    write(procs, "".join(f"{pid}\n" for pid in session))
    files = CgroupFiles.for_pid(42, proc, root)
    seen: list[ResourceSample] = []

    async def go() -> ContainerSampler:
        loop = asyncio.get_running_loop()
        sampler = ContainerSampler(files, dict, 2, seen.append, loop.time())
        task = asyncio.create_task(sampler.run())
        await asyncio.sleep(0.25)
        write(root / "memory" / CID / "memory.usage_in_bytes", "9000000\n")
        write(root / "pids" / CID / "pids.current", "19\n")  # threads: not the count
        write(procs, "".join(f"{pid}\n" for pid in [*session, *range(4_000_010, 4_000_017)]))
        await asyncio.sleep(0.25)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return sampler

    sampler = asyncio.run(go())
    assert sampler.source == "cgroup v1"
    assert 4 <= len(sampler.samples) <= 8
    assert seen == sampler.samples
    assert sampler.peak_rss_bytes == 9_000_000
    assert sampler.peak_processes == 7  # the member processes but the idle session's 2
    assert max(sample.processes for sample in seen) == 7


def test_the_peak_holds_the_kernel_s_high_water_mark_once_the_run_raised_it(
    tmp_path: Path,
) -> None:
    """An OOM kill frees the memory before the next sample: only the kernel's mark held it."""
    proc, root = v1_tree(tmp_path)
    memory = root / "memory" / CID
    write(memory / "memory.max_usage_in_bytes", "50000000\n")  # an earlier run's peak
    write(root / "pids" / CID / "cgroup.procs", "")
    files = CgroupFiles.for_pid(42, proc, root)

    async def go() -> ContainerSampler:
        loop = asyncio.get_running_loop()
        sampler = ContainerSampler(files, dict, 0, None, loop.time())
        task = asyncio.create_task(sampler.run())
        await asyncio.sleep(0.15)
        assert sampler.peak_rss_bytes == 4096  # the mark is not this run's (yet)
        write(memory / "memory.max_usage_in_bytes", "268435456\n")
        write(memory / "memory.usage_in_bytes", "491520\n")
        await asyncio.sleep(0.15)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return sampler

    sampler = asyncio.run(go())
    assert max(sample.rss_bytes for sample in sampler.samples) == 491520  # no sample saw it
    assert sampler.peak_rss_bytes == 268435456


def test_stats_fallback_computes_cpu_from_consecutive_documents() -> None:
    documents = iter(
        {
            "cpu_stats": {"cpu_usage": {"total_usage": n * 500_000_000}},
            "memory_stats": {"usage": 1000 * n},
            "pids_stats": {"current": 3},
        }
        for n in range(1, 100)
    )

    def stats() -> dict[str, Any]:
        time.sleep(0.1)  # the engine answers about once a second; faster here
        return next(documents)

    async def go() -> ContainerSampler:
        sampler = ContainerSampler(None, stats, 1, None, asyncio.get_running_loop().time())
        task = asyncio.create_task(sampler.run())
        await asyncio.sleep(0.45)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return sampler

    sampler = asyncio.run(go())
    assert sampler.source == "engine stats"
    assert len(sampler.samples) >= 3
    assert sampler.samples[0].cpu_percent == 0.0
    assert 200 < sampler.samples[2].cpu_percent < 700  # 0.5 s of CPU per ~0.1 s
    assert sampler.peak_processes == 2
    assert sampler.cpu_seconds == pytest.approx(0.5 * (len(sampler.samples) - 1))
