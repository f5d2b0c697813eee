"""`ResourceSample`: one reading of a run's CPU, memory and process count, and the process
table (`ProcessTable` of `ProcessRow`s) some samples carry.

Every sampler (psutil over a local process tree, cgroup files or the stats stream of a
container) produces these same types, so the charts, the process tree view and the run record
need not care which.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ProcessRow:
    """One process. `ppid` is 0 when the parent is not in the table (the row is a root);
    `cpu_percent` is its share of one core since the previous table. `name` and `cmdline`
    are plain, short, one-line text (control characters replaced)."""

    pid: int
    ppid: int
    name: str
    cmdline: str
    cpu_percent: float
    rss_bytes: int


@dataclass(frozen=True, slots=True)
class ProcessTable:
    """The processes of a run at one moment.

    `total` counts every process seen; `rows` holds at most a few hundred of them, parents
    before children. `pid_space` says whose pids these are: "host", or "container" (the pids
    inside the container's PID namespace). `hidden`, when not empty, says why no process can
    be seen from here.
    """

    rows: tuple[ProcessRow, ...]
    total: int
    pid_space: str = "host"
    hidden: str = ""


@dataclass(frozen=True, slots=True)
class ResourceSample:
    """One reading, `t` seconds after the run started.

    `cpu_percent` is summed over the run's processes (100 = one full core). `tree` is set on
    the live samples that carry a process table (a few a second); the samplers keep their
    samples without it, so a long run's record stays small. It is not part of a sample's
    equality: the recorded sample is the same reading as the live one.
    """

    t: float
    cpu_percent: float
    rss_bytes: int
    processes: int
    tree: ProcessTable | None = field(default=None, compare=False)
