"""`ResourceSample`: one reading of a run's CPU, memory and process count.

Every sampler (psutil over a local process tree, cgroup files or the stats stream of a
container) produces this same type, so the charts and the run record need not care which.
"""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ResourceSample:
    """One reading, `t` seconds after the run started.

    `cpu_percent` is summed over the run's processes (100 = one full core).
    """

    t: float
    cpu_percent: float
    rss_bytes: int
    processes: int
