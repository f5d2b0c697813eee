"""Finding, killing and reaping every process of a run, escaped descendants included.

A process-group kill misses children that called `setsid` or double-forked. So the app makes
itself a child subreaper (orphans re-parent to it, not to init), every run's processes carry the
run's tag in their environment, and `kill_run()` signals the union of the root's tree, the
tagged processes (a full /proc scan) and every process the monitor saw, then checks again
until nothing is left, and reaps the zombies re-parented to the app.

Limitation: a process that both starts with a clean environment (`env -i`) and escapes the
tree (`setsid` + its parent exiting) before the monitor's next tick cannot be told apart from
the app's other children and survives; a cgroup would close that gap.
"""

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass

import psutil

from workbench.executors.limits_exec import PR_SET_CHILD_SUBREAPER, prctl
from workbench.monitor.process import (
    alive,
    carries_tag,
    descendants,
    proc_children,
    tagged_processes,
)

KILL_GRACE_S = 0.5
_POLL_S = 0.02
_KILL_ROUNDS = 100

# Pids of run roots that asyncio's child watcher waits for: reaping one of them here would steal
# its exit status. Process-wide on purpose: they are children of this one process.
_live_roots: set[int] = set()


@dataclass(frozen=True, slots=True)
class KillReport:
    """What `kill_run()` did: how many processes it signalled, how many survived it."""

    signalled: int
    leftover: int


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (Linux); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
    except OSError:
        return False
    return True


def track_root(pid: int) -> None:
    """Record `pid` as a run root that asyncio reaps (never reaped by `reap_orphans`)."""
    _live_roots.add(pid)


def untrack_root(pid: int) -> None:
    """Forget `pid` once asyncio has reaped it."""
    _live_roots.discard(pid)


def live_roots() -> set[int]:
    """The run roots currently waited for by asyncio."""
    return set(_live_roots)


def collect(
    root: psutil.Process | None, tag: bytes, seen: Iterable[psutil.Process], full_scan: bool
) -> dict[int, psutil.Process]:
    """Every live process of the run, by pid (never this process nor other runs' roots).

    Without `full_scan`, tagged processes are looked for only among the app's direct children
    (where orphans land): cheap enough to repeat while killing.
    """
    candidates = {p.pid: p for p in seen if alive(p)}
    if root is not None and alive(root):
        candidates[root.pid] = root
    others = _live_roots - candidates.keys()
    starts = set(candidates)
    if full_scan:
        starts |= tagged_processes(tag)
    else:
        children = set(proc_children(os.getpid())) - others
        starts |= {pid for pid in children if carries_tag(pid, tag)}
    found: dict[int, psutil.Process] = {}
    for pid in descendants(starts) - others - {os.getpid()}:
        process = candidates.get(pid)
        if process is None:
            try:
                process = psutil.Process(pid)
            except psutil.Error:
                continue
        if alive(process):
            found[pid] = process
    return found


def _signal(processes: Iterable[psutil.Process], signum: int) -> None:
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.send_signal(signum)


async def kill_run(
    root: psutil.Process | None,
    tag: bytes,
    seen: Iterable[psutil.Process],
    since: float,
    grace_s: float = KILL_GRACE_S,
) -> KillReport:
    """SIGTERM every process of the run, SIGKILL survivors after `grace_s`, then verify.

    New processes forked meanwhile (a fork bomb) are found and signalled on every round.
    `since` (epoch seconds) bounds which zombie children of the app may be reaped.
    """
    seen = tuple(seen)
    signalled: set[int] = set()
    victims = collect(root, tag, seen, full_scan=True)
    _signal(victims.values(), signal.SIGTERM)
    signalled |= victims.keys()
    deadline = time.monotonic() + grace_s
    while victims and time.monotonic() < deadline:
        await asyncio.sleep(_POLL_S)
        victims = collect(root, tag, victims.values(), full_scan=False)
        fresh = victims.keys() - signalled
        _signal((victims[pid] for pid in fresh), signal.SIGTERM)
        signalled |= fresh
    for _ in range(_KILL_ROUNDS):
        if not victims:
            break
        signalled |= victims.keys()
        victims = _kill_round(root, tag, victims)
        await asyncio.sleep(_POLL_S / 2)
    reap_orphans(since)
    leftover = collect(root, tag, seen, full_scan=True)
    return KillReport(signalled=len(signalled), leftover=len(leftover))


def _kill_round(
    root: psutil.Process | None, tag: bytes, victims: dict[int, psutil.Process]
) -> dict[int, psutil.Process]:
    """SIGKILL `victims`; return the run's processes still alive (or newly forked) after."""
    _signal(victims.values(), signal.SIGKILL)
    return collect(root, tag, victims.values(), full_scan=False)


def kill_now(root: psutil.Process | None, tag: bytes, seen: Iterable[psutil.Process]) -> int:
    """SIGKILL every process of the run without awaiting (teardown of a cancelled run).

    Blocks for at most a few milliseconds per round; returns how many survived.
    """
    victims = collect(root, tag, seen, full_scan=True)
    for _ in range(_KILL_ROUNDS):
        if not victims:
            break
        victims = _kill_round(root, tag, victims)
        time.sleep(0.002)
    return len(victims)


def reap_orphans(since: float) -> int:
    """Reap zombie children of the app started after `since` that asyncio does not wait for."""
    reaped = 0
    for pid in set(proc_children(os.getpid())) - _live_roots:
        try:
            process = psutil.Process(pid)
            if process.status() != psutil.STATUS_ZOMBIE or process.create_time() < since:
                continue
            done, _ = os.waitpid(pid, os.WNOHANG)
        except (psutil.Error, ChildProcessError):
            continue
        reaped += done == pid
    return reaped
