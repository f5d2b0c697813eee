"""The psutil sampler of a local run's process tree, and the /proc helpers that find the tree.

A run's processes are the descendants of its root process plus orphans that re-parented to the
app (a child subreaper) and carry the run's tag (`WORKBENCH_RUN_ID=<id>` in their environment).
`ProcessTreeSampler` keeps one `psutil.Process` per pid and derives CPU percent from the change
of each process's CPU time between ticks (what `cpu_percent` does, without reading the stat file
twice); it re-lists the tree through `/proc/PID/task/TID/children` on every tick (cheap: it
reads only the tree, not the whole process table) and produces `ResourceSample`s, peaks and
CPU seconds. When its `TableBuilder` says a table is due, the same tick's readings (plus each
process's parent, known from the walk) become the sample's process table.
"""

import asyncio
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import replace

import psutil

from workbench.monitor.process_table import Reading, TableBuilder
from workbench.monitor.sample import ResourceSample

RUN_TAG_ENV = "WORKBENCH_RUN_ID"
SAMPLE_INTERVAL_S = 0.1
CPU_BUDGET = 0.02  # at most this share of one core goes to sampling
KEEP_COMMANDS = 5  # command lines of the processes a run left behind that are reported


def run_tag(run_id: str) -> bytes:
    """The environment entry that marks every process of run `run_id`."""
    return f"{RUN_TAG_ENV}={run_id}".encode()


def process_clock() -> float:
    """Now, on the clock of `psutil.Process.create_time()` (boot time plus time since boot).

    The kernel gives boot time in whole seconds, so a process's create time can be up to a
    second off the wall clock: compare create times only with this clock, never `time.time()`.
    """
    if hasattr(time, "CLOCK_BOOTTIME"):
        return psutil.boot_time() + time.clock_gettime(time.CLOCK_BOOTTIME)
    return time.time()


def proc_children(pid: int) -> list[int]:
    """The direct children of `pid` (every thread's), or [] when it is gone."""
    children: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")  # noqa: PTH208 - hot path, plain names
    except OSError:
        return children
    for tid in tasks:
        try:
            # A plain open(): the app reads its own threads' lists at every sample of every
            # run (its orphans land there), and pathlib costs half as much again.
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as listed:  # noqa: PTH123
                data = listed.read()
        except OSError:
            continue
        children.extend(int(field) for field in data.split())
    return children


def descendants(roots: Iterable[int]) -> set[int]:
    """`roots` and every process below them."""
    return set(parents(roots))


def parents(roots: Iterable[int]) -> dict[int, int]:
    """`roots` and every process below them, each with its parent's pid (0 for a root)."""
    found = dict.fromkeys(roots, 0)
    stack = list(found)
    while stack:
        parent = stack.pop()
        for child in proc_children(parent):
            if child not in found:
                found[child] = parent
                stack.append(child)
    return found


def command_line(pid: int) -> str:
    """`pid`'s command line as one line of words ("" when it cannot be read, or a zombie's)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:  # noqa: PTH123 - hot path
            words = cmdline.read(4096).split(b"\0")
    except OSError:
        return ""
    return " ".join(word.decode(errors="replace") for word in words if word)


def carries_tag(pid: int, tag: bytes) -> bool:
    """True when `pid`'s initial environment holds `tag` (False if unreadable or a zombie)."""
    return tag_verdict(pid, tag) is True


def tag_verdict(pid: int, tag: bytes) -> bool | None:
    """Whether `pid`'s initial environment holds `tag`; None when it cannot be told now (the
    environment is unreadable, or empty: a zombie, or a process in the middle of an exec)."""
    try:
        # A plain open(): this runs for every process on the machine when the app looks for
        # escaped processes, and pathlib triples its cost.
        with open(f"/proc/{pid}/environ", "rb") as environ:  # noqa: PTH123
            data = environ.read()
    except OSError:
        return None
    return b"\0" + tag + b"\0" in b"\0" + data + b"\0" if data else None


def all_processes() -> list[int]:
    """Every process on the machine, by pid (a listing of /proc)."""
    names = os.listdir("/proc")  # noqa: PTH208 - hot path, plain names
    return [int(name) for name in names if name.isdigit()]


def tagged_processes(tag: bytes, among: Iterable[int]) -> set[int]:
    """The processes among `among` (e.g. `all_processes()`) that carry `tag` readably."""
    return {pid for pid in among if carries_tag(pid, tag)}


def alive(process: psutil.Process) -> bool:
    """True while `process` (the same one, not a reused pid) runs and is not a zombie."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class ProcessTreeSampler:
    """Samples CPU, memory and process count of one run's process tree.

    `exclude` holds pids that are never the run's orphans (the app's other direct children
    that executors spawned), so their tags need not be read.
    """

    def __init__(
        self,
        root: psutil.Process | None,
        tag: bytes,
        t0: float,
        on_sample: Callable[[ResourceSample], None] | None = None,
        exclude: Callable[[], Iterable[int]] = tuple,
    ) -> None:
        self._root = root
        self._tag = tag
        self._t0 = t0
        self._on_sample = on_sample
        self._exclude = exclude
        self._procs: dict[int, psutil.Process] = {root.pid: root} if root else {}
        self._orphan_verdicts: dict[int, bool] = {}
        self._cpu_by_pid: dict[int, float] = {}
        self._last_tick = t0
        self._tables: TableBuilder | None = None  # made on the first sample (see there)
        self.seen: dict[int, psutil.Process] = dict(self._procs)
        self.samples: list[ResourceSample] = []
        self.peak_rss_bytes = 0
        self.peak_processes = 0

    @property
    def cpu_seconds(self) -> float:
        """User + system CPU seconds of every process seen, as of its last sample."""
        return sum(self._cpu_by_pid.values())

    def members(self) -> set[int]:
        """The pids of the run right now: the root's tree plus tagged orphans and their trees."""
        return set(self.tree())

    def tree(self) -> dict[int, int]:
        """`members()`, each with its parent's pid (0 for the root and the orphans)."""
        roots = [self._root.pid] if self._root and alive(self._root) else []
        excluded = set(self._exclude())
        children = [pid for pid in proc_children(os.getpid()) if pid not in excluded]
        verdicts: dict[int, bool] = {}  # kept while the child lives; unknown ones asked again
        for pid in children:
            verdict = self._orphan_verdicts.get(pid)
            if verdict is None:
                verdict = tag_verdict(pid, self._tag)
            if verdict is not None:
                verdicts[pid] = verdict
            if verdict:
                roots.append(pid)
        self._orphan_verdicts = verdicts
        return parents(roots)

    def sample(self) -> ResourceSample:
        """Read the tree once and record the sample; the sample handed to `on_sample` (and
        returned) carries a process table when one was due."""
        pids = self.tree()
        now = asyncio.get_running_loop().time()
        if self._tables is None:  # by now the CPU an adopted root spent before the run is known
            self._tables = TableBuilder(self._t0, spent_before=dict(self._cpu_by_pid))
        readings: list[Reading] | None = [] if self._tables.due(now) else None
        cpu_delta = 0.0
        rss = 0
        count = 0
        for pid in pids:
            process = self._procs.get(pid)
            try:
                if process is None:
                    process = self._procs[pid] = self.seen[pid] = psutil.Process(pid)
                with process.oneshot():
                    memory = process.memory_info().rss
                    times = process.cpu_times()
                    spent = times.user + times.system
                    if readings is not None:
                        name = process.name()
                        readings.append(Reading(process, pids[pid], name, memory, spent))
            except psutil.Error:
                continue
            rss += memory
            # A process new to the sampler was born since the last tick: all its time is new.
            cpu_delta += spent - self._cpu_by_pid.get(pid, 0.0)
            self._cpu_by_pid[pid] = spent
            count += 1
        for gone in self._procs.keys() - pids:
            del self._procs[gone]
        elapsed = now - self._last_tick
        self._last_tick = now
        sample = ResourceSample(
            t=now - self._t0,
            cpu_percent=100.0 * cpu_delta / elapsed if elapsed > 0 else 0.0,
            rss_bytes=rss,
            processes=count,
        )
        self.peak_rss_bytes = max(self.peak_rss_bytes, rss)
        self.peak_processes = max(self.peak_processes, count)
        self.samples.append(sample)
        if readings:  # none once the run's processes are gone: the last table stays the last
            sample = replace(sample, tree=self._tables.build(readings, now))
        if self._on_sample is not None:
            self._on_sample(sample)
        return sample

    async def run(self, interval_s: float = SAMPLE_INTERVAL_S) -> None:
        """Sample every `interval_s` until cancelled, slower when a tick costs more than
        `CPU_BUDGET` of a core (a tree of more than ~25 processes)."""
        while True:
            start = time.thread_time()
            self.sample()
            cost = time.thread_time() - start
            await asyncio.sleep(max(interval_s, cost / CPU_BUDGET) - cost)
