"""The disk limit where no posture counts writes: what one run adds to its workspace, watched.

No kernel control bounds a folder's size without a quota or a filesystem of its own, which a
user's folder seldom has, so `WorkspaceWatch.guard` (a run's guard, see `RunSettings.guard`)
measures the workspace (the folder, or the container's copy of it on a remote engine) while
the run goes on: once as it starts, then again after each pause
(a tenth of a second at least, and long enough that walking takes at most 5% of a core), and
returns the run's cause once the run has added more than the limit. Between two walks a fast
writer can pass the limit by what it writes meanwhile (RLIMIT_FSIZE still caps each file under
hardened, docker and gvisor). Sizes are apparent sizes (a sparse file counts in full, as a copy
or a snapshot would read it); links are not followed.
"""

import asyncio
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

from workbench.executors.process.outcome import format_bytes
from workbench.postures.model import Limits

MIN_PAUSE_S = 0.1
WALK_SHARE = 0.05  # at most this share of one core goes to walking the workspace


def tree_bytes(root: Path, stop: threading.Event | None = None) -> int:
    """The apparent size of the regular files under `root` (links not followed); stops early,
    returning what it counted, once `stop` is set."""
    total = 0
    folders = [str(root)]
    while folders and not (stop is not None and stop.is_set()):
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        folders.append(entry.path)
                    elif stat.S_ISREG(st.st_mode):
                        total += st.st_size
        except OSError:
            continue
    return total


def bound_checks(limits: Limits, watched: bool) -> tuple[tuple[str, bool], ...]:
    """The card's lines for the disk bounds the workbench keeps itself (so they hold): the
    logs' cap, and the workspace size limit where it is `watched`."""
    logs = (
        f"Run logs capped at {format_bytes(limits.log_bytes)} per stream on disk (their first "
        "and last halves kept)"
    )
    workspace = (
        f"Workspace size limit {format_bytes(limits.disk_bytes)} added per run (watched during "
        "the run, which is stopped past it; no kernel quota)"
    )
    return ((workspace, True),) * watched + ((logs, True),)


class WorkspaceWatch:
    """Watches how much a run adds to its workspace (see the module docstring): `measure`
    tells its size now (None when it cannot be told, e.g. the engine did not answer), returning
    early once its argument is set; `share` is the part of the time spent measuring, as `clock`
    counts a measure's cost: the CPU time of a walk here (5% of a core), or the wait for a
    measure an engine makes (more of it)."""

    def __init__(
        self,
        measure: Callable[[threading.Event], int | None],
        limit_bytes: int,
        share: float = WALK_SHARE,
        clock: Callable[[], float] = time.thread_time,
    ) -> None:
        self.measure = measure
        self.limit_bytes = limit_bytes
        self.share = share  # of the time, spent measuring
        self.clock = clock
        self._base: int | None = None
        self._took = 0.0

    @classmethod
    def of_folder(cls, root: Path, limit_bytes: int) -> "WorkspaceWatch":
        """The watch of the workspace folder at `root`."""
        return cls(lambda stop: tree_bytes(root, stop), limit_bytes)

    def _timed(self, stop: threading.Event) -> tuple[int | None, float]:
        """The size now (None: it cannot be told), and what measuring it cost by `clock`, in its
        own thread: neither a wait for a free worker thread nor, for a walk, the time a loaded
        machine keeps the thread waiting is the measure's cost, and must not stretch the pause
        past the moment a run holds more than the limit."""
        started = self.clock()
        return self.measure(stop), self.clock() - started

    async def baseline(self) -> None:
        """Measure the workspace as the run finds it. Await it before the command starts: a
        first measure that a busy thread pool delays past the command's first writes would
        count them in the baseline, and the run could pass the limit unseen."""
        self._base, self._took = await asyncio.to_thread(self._timed, threading.Event())

    async def guard(self, pid: int = 0) -> str:
        """Measure the workspace until the run has added more than the limit; the run's cause
        (from `baseline()`, or from a first measure now when it was not taken)."""
        del pid  # the workspace is the run's, whichever process writes it
        stop = threading.Event()  # a walk still going in its thread ends soon
        try:
            base, took = self._base, self._took
            if base is None:
                base, took = await asyncio.to_thread(self._timed, stop)
            while True:
                await asyncio.sleep(max(MIN_PAUSE_S, took / self.share))
                size, took = await asyncio.to_thread(self._timed, stop)
                if base is None:  # the start could not be told: the first size that can is it
                    base = size
                if size is None or base is None:
                    continue
                added = size - base
                if added > self.limit_bytes:
                    return (
                        f"workspace size limit {format_bytes(self.limit_bytes)}: the run added "
                        f"{format_bytes(added)} to the workspace"
                    )
        finally:
            stop.set()
