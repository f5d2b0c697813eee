"""Building a run's process tables: `ProcessRow`s linked parent to child, capped, plain text.

Both samplers hand a `ProcessTable` to the charts on some of their `ResourceSample`s (see
`TableBuilder`): at most every `TABLE_INTERVAL_S`, and less often when building one would
cost more than `TABLE_BUDGET` of a core, so the 10 Hz samples stay cheap. A table lists at
most `MAX_ROWS` processes, chosen breadth-first from the roots so the tree keeps its shape
(a fork bomb's table says how many more there were). Names and command lines are shortened
and control characters replaced: they come from the skill and are shown as plain text. The
workbench's own worker processes (the QuickJS worker) are named for what they are, not by their
interpreter's argv and its settings document, and a perl helper (the hardened exec wrapper, the
bubblewrap loader) shows the command it is about to become, not its own argv. When the host
cannot see the processes (gVisor, a remote engine) the table says why instead.
"""

import sys
import time
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import psutil

from workbench.monitor.sample import ProcessRow, ProcessTable
from workbench.platform.interpreter import INTERNAL_FLAG
from workbench.platform.perl import helper_command

MAX_ROWS = 300
CMDLINE_CHARS = 240
NAME_CHARS = 64
TABLE_INTERVAL_S = 0.4  # 2.5 tables a second at most
TABLE_BUDGET = 0.01  # at most this share of one core goes to building tables
REPLACEMENT = "\N{REPLACEMENT CHARACTER}"
OWN_WORKERS = {
    "workbench.executors.quickjs.worker.main": "QuickJS worker"
}  # module run with `-m`: its name


def plain_text(text: str, limit: int) -> str:
    """`text` on one line of at most `limit` characters, every control, format (bidi) or
    unassigned character replaced, so hostile names cannot disguise themselves."""
    cleaned = "".join(
        REPLACEMENT if unicodedata.category(char).startswith("C") else char for char in text
    )
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Reading:
    """What a sampler read of one process on its tick: its parent's host pid (from the tree
    walk or the status file), its name, memory and CPU seconds spent."""

    process: psutil.Process
    ppid: int
    name: str
    rss_bytes: int
    cpu_seconds: float


class TableBuilder:
    """Builds a run's `ProcessTable`s from the samplers' readings and paces them.

    `started` is when the run began, the start of the first table's CPU interval;
    `pid_space` names whose pids the tables show (see `ProcessTable`); `spent_before` holds
    the CPU seconds processes had spent before the run (a warm worker the run adopted).
    """

    def __init__(
        self,
        started: float,
        pid_space: str = "host",
        spent_before: Mapping[int, float] | None = None,
    ) -> None:
        self._pid_space = pid_space
        self._previous = started
        self._spent: dict[int, float] = dict(spent_before or {})
        self._commands: dict[int, str] = {}  # a process's command line, as last read
        self._next = 0.0

    def due(self, now: float) -> bool:
        """True when the sampler should read a table on the tick at `now`."""
        return now >= self._next

    def hide(self, reason: str, now: float) -> ProcessTable:
        """A table without processes that says why the host cannot see them."""
        self._next = now + TABLE_INTERVAL_S
        return ProcessTable(rows=(), total=0, pid_space=self._pid_space, hidden=reason)

    def build(
        self,
        readings: Iterable[Reading],
        now: float,
        shown: Mapping[int, int] | None = None,
        reading_cost: float = 0.0,
    ) -> ProcessTable:
        """The table of `readings` taken at `now`; schedules the next one within budget.

        `shown` maps a host pid to the pid to show (for a container: the pid inside it);
        `reading_cost` is the CPU time the sampler spent reading for the table alone."""
        start = time.thread_time() - reading_cost
        by_pid = {reading.process.pid: reading for reading in readings}
        elapsed = now - self._previous
        spent = {pid: reading.cpu_seconds for pid, reading in by_pid.items()}
        kept = _breadth_first(by_pid)[:MAX_ROWS]
        display = {pid: shown.get(pid, pid) if shown else pid for pid in kept}
        rows = []
        commands = {}
        for pid in kept:
            reading = by_pid[pid]
            # A process that just ended (a zombie) reads an empty command line: keep the last.
            commands[pid] = _cmdline(reading.process) or self._commands.get(pid, "")
            # A process new to the builder was born since the last table: all its time is new.
            delta = spent[pid] - self._spent.get(pid, 0.0)
            rows.append(
                ProcessRow(
                    pid=display[pid],
                    ppid=display.get(reading.ppid, 0),
                    name=plain_text(reading.name, NAME_CHARS),
                    cmdline=commands[pid],
                    cpu_percent=max(0.0, 100.0 * delta / elapsed) if elapsed > 0 else 0.0,
                    rss_bytes=reading.rss_bytes,
                )
            )
        self._spent, self._previous, self._commands = spent, now, commands
        table = ProcessTable(tuple(rows), len(by_pid), self._pid_space)
        cost = time.thread_time() - start
        self._next = now + max(TABLE_INTERVAL_S, cost / TABLE_BUDGET)
        return table


def _breadth_first(by_pid: dict[int, Reading]) -> list[int]:
    """Every pid, roots first, then their children level by level (each level by pid)."""
    children: dict[int, list[int]] = {}
    roots = []
    for pid in sorted(by_pid):
        parent = by_pid[pid].ppid
        if parent in by_pid and parent != pid:
            children.setdefault(parent, []).append(pid)
        else:
            roots.append(pid)
    order = roots
    for pid in order:  # grows while it is walked: breadth first
        order.extend(children.get(pid, ()))
    return order


def _cmdline(process: psutil.Process) -> str:
    """The command line of `process`, plain and short ("" when it is gone)."""
    try:
        argv = process.cmdline()
    except psutil.Error:
        return ""
    return plain_text(own_process(argv) or " ".join(argv), CMDLINE_CHARS)


def own_process(argv: list[str]) -> str:
    """What to show for a process of the workbench's own: `QuickJS worker
    (workbench.executors.quickjs.worker.main)` for a worker, the command it is about to exec
    for a perl helper (the exec wrapper, the bubblewrap loader); "" for any other process."""
    module = _own_module(argv)
    if module in OWN_WORKERS:
        return f"{OWN_WORKERS[module]} ({module})"
    command = helper_command(argv)
    return "" if command is None else " ".join(command)


def _own_module(argv: list[str]) -> str | None:
    """The module this interpreter runs in `argv` (`-m MODULE` or the frozen app's
    `INTERNAL_FLAG MODULE`), else None."""
    if argv[:1] != [sys.executable] or len(argv) < 3:
        return None
    for flag in ("-m", INTERNAL_FLAG):
        if flag in argv[1:3] and argv.index(flag) + 1 < len(argv):
            return argv[argv.index(flag) + 1]
    return None
