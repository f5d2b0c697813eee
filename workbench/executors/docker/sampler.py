"""Live CPU, memory and process count of a container, as `ResourceSample`s.

`ContainerSampler` samples a container about 10 times a second from its cgroup files (`CgroupFiles`,
v1 or v2) on a local engine, else about once a second from the engine's stats API, and reads the
process table of the run's processes: the cgroup's members less the idle session's own.
`CgroupFiles` also gives the executor the event counters (`oom_kill`, pids `max`) it compares around
a run, and the task count and member pids it uses to kill a run's processes from the host. Where the
host cannot see the processes (a remote engine, gVisor) the sampler says so.
"""

import asyncio
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psutil

from workbench.monitor.process_table import Reading, TableBuilder
from workbench.monitor.sample import ProcessTable, ResourceSample

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_INTERVAL_S = 0.1
SMALL_FILE_BYTES = 4096  # a usage file is a line, or a few ("key value" lines)
REMOTE_TREE = (
    "Process tree not visible: the Docker engine runs elsewhere (or out of this machine's "
    "sight), and its stats name no processes."
)
GVISOR_TREE = (
    "Process tree not visible: gVisor runs the sandbox's processes in its own kernel, out of "
    "the host's sight."
)


@dataclass(frozen=True, slots=True)
class CgroupCounters:
    """Event counters of a container's cgroup: OOM kills and refused forks (pids limit)."""

    oom_kills: int
    pids_max_hits: int


@dataclass(frozen=True, slots=True)
class CgroupUsage:
    """One reading of a cgroup's cumulative CPU time, memory in use and task count, and the
    kernel's high-water mark of its memory use (0 where it keeps none)."""

    cpu_ns: int
    memory_bytes: int
    tasks: int
    memory_high_water: int = 0


@dataclass(frozen=True, slots=True)
class CgroupFiles:
    """The files of one container's cgroup (v1 or v2) that the workbench reads."""

    version: int
    cpu: Path
    memory: Path
    pids: Path
    memory_events: Path
    pids_events: Path
    memory_high_water: Path  # v1 `memory.max_usage_in_bytes`, v2 `memory.peak` (5.19 and later)

    @classmethod
    def for_pid(
        cls, pid: int, proc: Path = Path("/proc"), root: Path = CGROUP_ROOT
    ) -> "CgroupFiles | None":
        """The cgroup files of host process `pid`, or None when they cannot be read here."""
        try:
            lines = (proc / str(pid) / "cgroup").read_text().splitlines()
        except OSError:
            return None
        v1: dict[str, str] = {}
        unified = None
        for line in lines:
            _, controllers, path = line.split(":", 2)
            if controllers:
                for controller in controllers.split(","):
                    v1[controller] = path.lstrip("/")
            else:
                unified = path.lstrip("/")
        files = cls._v1(v1, root) if "memory" in v1 else cls._v2(unified, root)
        return files if files is not None and files.readable() else None

    @classmethod
    def _v1(cls, paths: dict[str, str], root: Path) -> "CgroupFiles | None":
        if not {"cpuacct", "pids"} <= paths.keys():
            return None
        memory = root / "memory" / paths["memory"]
        pids = root / "pids" / paths["pids"]
        return cls(
            version=1,
            cpu=root / "cpuacct" / paths["cpuacct"] / "cpuacct.usage",
            memory=memory / "memory.usage_in_bytes",
            pids=pids / "pids.current",
            memory_events=memory / "memory.oom_control",
            pids_events=pids / "pids.events",
            memory_high_water=memory / "memory.max_usage_in_bytes",
        )

    @classmethod
    def _v2(cls, path: str | None, root: Path) -> "CgroupFiles | None":
        if path is None or not (root / "cgroup.controllers").exists():
            return None
        folder = root / path
        return cls(
            version=2,
            cpu=folder / "cpu.stat",
            memory=folder / "memory.current",
            pids=folder / "pids.current",
            memory_events=folder / "memory.events",
            pids_events=folder / "pids.events",
            memory_high_water=folder / "memory.peak",
        )

    def readable(self) -> bool:
        """True when every usage file can be read now."""
        try:
            self.usage()
        except (OSError, ValueError):
            return False
        return True

    def usage(self) -> CgroupUsage:
        """Read CPU time (ns), memory in use (bytes) and the task count."""
        if self.version == 1:
            cpu_ns = int(_read(self.cpu))
        else:
            cpu_ns = _keyed(_read(self.cpu).decode(), "usage_usec") * 1000
        return CgroupUsage(
            cpu_ns=cpu_ns,
            memory_bytes=int(_read(self.memory)),
            tasks=self.tasks(),
            memory_high_water=int(_read_or_empty(self.memory_high_water) or 0),
        )

    def tasks(self) -> int:
        """The kernel's count of tasks in the cgroup and below it (`pids.current`)."""
        return int(_read(self.pids))

    def processes(self) -> list[int]:
        """The host pids of the processes directly in the cgroup (`cgroup.procs`)."""
        return [int(pid) for pid in (self.pids.parent / "cgroup.procs").read_text().split()]

    def counters(self) -> CgroupCounters:
        """Read the OOM-kill and pids-limit counters (0 where the kernel does not report one)."""
        return CgroupCounters(
            oom_kills=_keyed(_read_or_empty(self.memory_events).decode(), "oom_kill"),
            pids_max_hits=_keyed(_read_or_empty(self.pids_events).decode(), "max"),
        )


def _read(path: Path) -> bytes:
    """A small cgroup file in one read (a sample reads four; through pathlib they cost three
    times as much)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, SMALL_FILE_BYTES)
    finally:
        os.close(fd)


def _read_or_empty(path: Path) -> bytes:
    """`_read`, or b"" for a file this kernel does not have (`memory.peak` before 5.19)."""
    try:
        return _read(path)
    except OSError:
        return b""


def _keyed(text: str, key: str) -> int:
    """The integer after `key` in a flat-keyed cgroup file ("key value" lines), or 0."""
    match = re.search(rf"^{re.escape(key)} (\d+)$", text, re.MULTILINE)
    return int(match.group(1)) if match else 0


class ContainerSampler:
    """Samples one container while a run lasts and keeps the peaks.

    The session's own processes are the cgroup's members when it is made, before the
    command starts (see the module doc). `baseline_tasks` is the number of tasks the idle
    session holds, subtracted from the engine's task count when only its stats can be read.
    `stats` is a callable returning one engine stats document (docker-py's
    `stats(stream=False, one_shot=True)`), used when `files` is None. Under `gvisor` the
    cgroup holds gVisor's sandbox, not the container's processes: no tree, no count.
    """

    def __init__(
        self,
        files: CgroupFiles | None,
        stats: Callable[[], dict[str, Any]],
        baseline_tasks: int,
        on_sample: Callable[[ResourceSample], None] | None,
        started: float,
        gvisor: bool = False,
    ) -> None:
        self._files = files
        self._stats = stats
        self._baseline = baseline_tasks
        self._on_sample = on_sample
        self._started = started
        self.samples: list[ResourceSample] = []
        self.cpu_seconds = 0.0
        self._first_cpu_ns: int | None = None
        self._first_high_water: int | None = None
        self._high_water = 0  # the kernel's mark, once it rose during the run
        self._tables = TableBuilder(started, "container")
        self._procs: dict[int, psutil.Process] = {}
        self._session = set(_members(files)) if files is not None else set()
        self._gvisor = gvisor

    @property
    def source(self) -> str:
        """Where the samples come from: "cgroup v1", "cgroup v2" or "engine stats"."""
        return f"cgroup v{self._files.version}" if self._files else "engine stats"

    @property
    def peak_rss_bytes(self) -> int:
        """The most memory the container held during the run: the samples' usage, or the
        kernel's high-water mark where it rose during the run (it holds a spike between two
        samples, and the last moment before an OOM kill, whose sample shows the memory freed)."""
        return max(self._high_water, *(s.rss_bytes for s in self.samples), 0)

    @property
    def peak_processes(self) -> int:
        """The most processes the run had at once; at least 1 when CPU time was spent in the
        container (the idle session spends none, so the command ran even if it ended between
        two readings); 0 under gVisor, whose processes the host cannot count."""
        seen = max((s.processes for s in self.samples), default=0)
        return 0 if self._gvisor else max(seen, 1 if self.cpu_seconds > 0 else 0)

    async def run(self) -> None:
        """Sample until cancelled; the last reading is taken on cancellation."""
        previous: tuple[float, int] | None = None
        try:
            while True:
                previous = await self._sample(previous)
                if self._files is not None:
                    await asyncio.sleep(CGROUP_INTERVAL_S)
        except asyncio.CancelledError:
            if self._files is not None:  # the run has ended: its table was the last one
                self._sample_files(previous, table=False)
            raise

    async def _sample(self, previous: tuple[float, int] | None) -> tuple[float, int] | None:
        if self._files is not None:
            return self._sample_files(previous)
        stats = await asyncio.to_thread(self._stats)
        usage = _usage_from_stats(stats)
        if usage is None:
            return previous
        return self._record(replace(usage, tasks=max(0, usage.tasks - self._baseline)), previous)

    def _sample_files(
        self, previous: tuple[float, int] | None, table: bool = True
    ) -> tuple[float, int] | None:
        assert self._files is not None
        try:
            usage = self._files.usage()
            members = [] if self._gvisor else self._run_members()
        except (OSError, ValueError):  # the container is gone
            return previous
        return self._record(replace(usage, tasks=len(members)), previous, table, members)

    def _run_members(self) -> list[int]:
        """The host pids of the run's processes: the cgroup's members but the session's."""
        assert self._files is not None
        return [pid for pid in self._files.processes() if pid not in self._session]

    def _table(self, now: float, members: list[int] | None) -> ProcessTable | None:
        """The process table of the run's `members`, when one is due."""
        if not self._tables.due(now):
            return None
        if members is None:
            return self._tables.hide(REMOTE_TREE, now)
        if self._gvisor:
            return self._tables.hide(GVISOR_TREE, now)
        if not members:  # not started yet, or gone: the last table stays the last
            return None
        start = time.thread_time()
        readings, shown = [], {}
        for pid in members:
            process = self._procs.get(pid)
            try:
                if process is None:
                    process = self._procs[pid] = psutil.Process(pid)
                ppid, shown[pid] = status_pids(pid)
                with process.oneshot():
                    rss = process.memory_info().rss
                    times = process.cpu_times()
                    name = process.name()
            except (psutil.Error, OSError, ValueError):
                continue
            readings.append(Reading(process, ppid, name, rss, times.user + times.system))
        for gone in self._procs.keys() - set(members):
            del self._procs[gone]
        return self._tables.build(readings, now, shown, time.thread_time() - start)

    def _record(
        self,
        usage: CgroupUsage,
        previous: tuple[float, int] | None,
        table: bool = True,
        members: list[int] | None = None,
    ) -> tuple[float, int]:
        """Record `usage` (its `tasks`: the run's process count) and, when one is due, the
        table of `members` (None: the host cannot list them)."""
        now = time.monotonic()
        if self._first_cpu_ns is None:
            self._first_cpu_ns = usage.cpu_ns
        if self._first_high_water is None:
            self._first_high_water = usage.memory_high_water
        elif usage.memory_high_water > self._first_high_water:
            self._high_water = max(self._high_water, usage.memory_high_water)
        self.cpu_seconds = (usage.cpu_ns - self._first_cpu_ns) / 1e9
        cpu_percent = 0.0
        if previous is not None and now > previous[0]:
            cpu_percent = max(0.0, (usage.cpu_ns - previous[1]) / 1e9 / (now - previous[0]) * 100)
        sample = ResourceSample(
            t=now - self._started,
            cpu_percent=cpu_percent,
            rss_bytes=usage.memory_bytes,
            processes=usage.tasks,
        )
        self.samples.append(sample)
        if self._on_sample is not None:
            tree = self._table(now, members) if table else None
            self._on_sample(replace(sample, tree=tree) if tree is not None else sample)
        return now, usage.cpu_ns


def status_pids(host_pid: int) -> tuple[int, int]:
    """The parent's host pid and the pid inside its container (the last `NSpid`) of host
    process `host_pid`, from its status file (OSError when it is gone)."""
    ppid, inside = 0, host_pid
    with open(f"/proc/{host_pid}/status", "rb") as status:  # noqa: PTH123 - hot path
        for line in status:
            if line.startswith(b"PPid:"):
                ppid = int(line.split()[1])
            elif line.startswith(b"NSpid:"):
                inside = int(line.split()[-1])
                break  # NSpid comes after PPid
    return ppid, inside


def _members(files: CgroupFiles) -> list[int]:
    """The cgroup's member pids now (none when it cannot be read)."""
    try:
        return files.processes()
    except (OSError, ValueError):
        return []


def _usage_from_stats(stats: dict[str, Any]) -> CgroupUsage | None:
    """The usage in one engine stats document, or None when the container is not running."""
    try:
        return CgroupUsage(
            cpu_ns=int(stats["cpu_stats"]["cpu_usage"]["total_usage"]),
            memory_bytes=int(stats["memory_stats"]["usage"]),
            tasks=int(stats["pids_stats"]["current"]),
        )
    except (KeyError, TypeError, ValueError):
        return None
