"""Finding, killing and reaping every process of a run, escaped descendants included.

`become_subreaper` makes the app the parent of every orphan; `kill_run` (and `kill_now`,
synchronous) signals the union of the run's tree, those its monitor saw, its `escapees`, and the
processes carrying its tag or, for a run with a uid of its own, that uid (looked for below the
app, where a subreaper keeps orphans, then on the whole machine), until a check finds none;
`reap_orphans` reaps the zombies re-parented to the app. `track_root` / `claim` record what live
runs own, so one run's kill never takes another's processes. A `contained` run (a PID namespace,
whose orphans go to its own init) is its root's tree alone: no scan beyond it. An `alone` run (a
QuickJS worker, which may start no process) is its root: no scan at all.
"""

import asyncio
import contextlib
import itertools
import math
import os
import signal
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum, auto

import psutil

from workbench.executors.hardened.limits_exec import PR_SET_CHILD_SUBREAPER, prctl
from workbench.monitor.process import (
    KEEP_COMMANDS,
    RUN_TAG_ENV,
    alive,
    all_processes,
    carries_tag,
    command_line,
    descendants,
    proc_children,
    process_clock,
    tagged_processes,
)

APP_MARK_ENV = "WORKBENCH_APP"
KILL_GRACE_S = 0.5
_POLL_S = 0.02
_KILL_ROUNDS = 100
_VERIFY_ROUNDS = 3  # whole-machine checks that find some and kill them, after the first kill
_ANY_TAG = f"{RUN_TAG_ENV}=".encode()

# Pids of run roots that asyncio's child watcher waits for (reaping one of them here would steal
# its exit status), with their run tags. Process-wide on purpose: they are children of this one
# process.
_live_roots: dict[int, bytes] = {}
# Every live run's processes as its monitor saw them, by run tag (the monitor's own dict).
_claims: dict[bytes, dict[int, psutil.Process]] = {}
# Each run root being spawned (forked, not yet exec'd, not yet tracked): when it began, on the
# clock of create times, less a margin for the kernel's tick, and its run tag.
_spawns: list[tuple[float, bytes]] = []
SPAWN_MARGIN_S = 0.05
# The earliest `since` of the orphan reaps that left zombies to a spawn under way: reaped when
# the last spawn is done.
_deferred_since: float | None = None
# The pid of the process that became a child subreaper (a fork of it is none).
_subreaper_pid = 0


@dataclass(frozen=True, slots=True)
class RunScope:
    """How to recognise one run's processes: its tag, when it began, and its own uid if any."""

    tag: bytes
    since: float  # `process_clock()` a little before the root was spawned
    uid: int | None = None  # a uid only this session's runs use (hardened as root)
    contained: bool = False  # nothing of the run leaves the root's tree (a PID namespace)
    alone: bool = False  # the root cannot start a process (RLIMIT_NPROC 0 before any skill code)


@dataclass(frozen=True, slots=True)
class KillReport:
    """What `kill_run()` did: how many processes it signalled (the first few's command lines,
    the root's aside), how many survived it."""

    signalled: int
    leftover: int
    commands: tuple[str, ...] = ()


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (Linux); False where unsupported."""
    global _subreaper_pid  # process-wide on purpose, like `_live_roots`
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
    except OSError:
        return False
    _subreaper_pid = os.getpid()
    os.environ[APP_MARK_ENV] = str(_subreaper_pid)  # helpers the app detaches are not escapees
    return True


def app_environment() -> dict[str, str]:
    """The app's environment for a run: all of it but the app's mark, so that none of the run's
    processes passes for a helper the app detached (`escapees`) unless it copies the mark."""
    return {name: value for name, value in os.environ.items() if name != APP_MARK_ENV}


def track_root(pid: int, tag: bytes) -> None:
    """Record `pid`, tagged `tag`, as a run root that asyncio reaps (never reaped by
    `reap_orphans`)."""
    _live_roots[pid] = tag


def untrack_root(pid: int) -> None:
    """Forget `pid` once asyncio has reaped it."""
    _live_roots.pop(pid, None)


@contextlib.contextmanager
def spawning(tag: bytes) -> Iterator[None]:
    """Mark the spawn of a run root tagged `tag` under way, until it is tracked (`track_root`).

    Between its fork and its exec the child runs the app's own program in a session of its own,
    with the environment the app started with (neither tag nor mark), and for a moment after
    the spawn learns the exec went ahead, the new program has neither command line nor
    environment yet: `escapees` would take it for another run's escapee and kill it, so
    meanwhile it leaves such children alone (`_still_spawning`).
    """
    global _deferred_since  # process-wide on purpose, like `_live_roots`
    spawn = (process_clock() - SPAWN_MARGIN_S, tag)
    _spawns.append(spawn)
    try:
        yield
    finally:
        _spawns.remove(spawn)
        if not _spawns and _deferred_since is not None:
            since, _deferred_since = _deferred_since, None
            reap_orphans(since)


def live_roots() -> set[int]:
    """The run roots currently waited for by asyncio."""
    return set(_live_roots)


def claim(tag: bytes, seen: dict[int, psutil.Process]) -> None:
    """Record `seen` (kept up to date by the run's monitor) as the live run `tag`'s processes."""
    _claims[tag] = seen


def unclaim(tag: bytes) -> None:
    """Forget the run `tag` once it is over."""
    _claims.pop(tag, None)


def _live_tags() -> set[bytes]:
    """The tags of the runs in flight: being spawned, with a live root, or supervised."""
    return {*(tag for _, tag in _spawns), *_live_roots.values(), *_claims}


def _others(scope: RunScope, ours: Iterable[int]) -> set[int]:
    """Pids of other live runs: their roots, what their monitors saw, and their trees."""
    claimed = {pid for tag, seen in _claims.items() if tag != scope.tag for pid in seen}
    starts = (claimed | _live_roots.keys()) - set(ours)
    return descendants(starts) if starts else set()


def _environ(pid: int) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:  # noqa: PTH123 - hot path
            return environ.read().split(b"\0")
    except OSError:
        return None


def _no_new_privs(pid: int | str) -> bool:
    try:
        with open(f"/proc/{pid}/status", "rb") as status:  # noqa: PTH123 - hot path
            return b"\nNoNewPrivs:\t1" in status.read()
    except OSError:
        return False


def escapees(scope: RunScope, others: set[int]) -> set[int]:
    """The app's children that escaped this run without its tag, as `env -i` (or a made-up
    tag) leaves them.

    While the app lives such a process is the app's child (the subreaper), so an escapee is a
    child of the app, born after the run began, carrying no tag of a run in flight (being
    spawned, with a live root, or supervised: `_live_tags`), outside the app's own
    session (every run starts a session of its own; the app's helpers without one stay in the
    app's), neither a run root nor a process a live run's monitor claimed, and either without the
    app's mark (`WORKBENCH_APP`, which the app sets when it becomes a subreaper, so the helpers
    it detaches carry it) or with `no_new_privs` that the app itself lacks (a hardened run's
    processes, which could copy the mark). While a root is being spawned (`spawning`), a child
    that looks like it is taken for that root. A local command can copy the mark and hide; a
    concurrent run's unseen escapee is killed with whichever run ends first.
    """
    me = os.getpid()
    app_session = os.getsid(me)
    app_nnp = _no_new_privs("self")
    mark = f"{APP_MARK_ENV}={me}".encode()
    found: set[int] = set()
    live = _live_tags()
    for pid in set(proc_children(me)) - others - _live_roots.keys():
        try:
            process = psutil.Process(pid)
            if os.getsid(pid) == app_session or process.create_time() < scope.since:
                continue
        except (psutil.Error, OSError):
            continue
        entries = _environ(pid) or []  # unreadable (made non-dumpable): no tag, no mark
        if any(entry in live for entry in entries if entry.startswith(_ANY_TAG)):
            continue  # a live run's tag decides whose it is; a made-up or ended one does not
        if _spawns and _still_spawning(pid):
            continue
        if mark not in entries or (not app_nnp and _no_new_privs(pid)):
            found.add(pid)
    return found


def _still_spawning(pid: int) -> bool:
    """True when `pid` looks like a root being spawned: a fork of the app before its exec (the
    app's command line; its program cannot be read once the app made itself non-dumpable), or
    during it (no command line yet)."""
    try:
        command = _command(pid)
    except OSError:
        return False
    return not command or command == _command("self")


def _command(pid: int | str) -> bytes:
    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:  # noqa: PTH123 - hot path
        return cmdline.read()


class Reach(Enum):
    """How far `collect` looks for the run's tag and uid, beyond what it knows of the run.

    `CHILDREN`: the app's direct children, where orphans land, and not the uid; cheap enough to
    repeat while killing. `SUBTREE`: the app's subtree outside other live runs, where a subreaper
    keeps its runs' orphans unless they joined a PID namespace made elsewhere (`nsenter`), whose
    init then takes them; the whole machine when the app is no subreaper. `MACHINE`: every
    process on the machine, to verify a kill, for `kill_now` and for a kept worker.
    """

    CHILDREN = auto()
    SUBTREE = auto()
    MACHINE = auto()


def _suspects(reach: Reach, others: set[int]) -> list[int]:
    """The processes a `SUBTREE` or `MACHINE` reach looks at (besides the run's own tree),
    outside `others`."""
    if reach is Reach.MACHINE or _subreaper_pid != os.getpid():
        return all_processes()
    return list(descendants(set(proc_children(_subreaper_pid)) - others) - others)


def _uid_processes(uid: int, among: Iterable[int]) -> set[int]:
    """The processes among `among` whose real uid is `uid` (their /proc/PID/status, read
    directly: through psutil it cost a few ms of every run)."""
    wanted = f"\nUid:\t{uid}\t".encode()
    found: set[int] = set()
    for pid in among:
        try:
            with open(f"/proc/{pid}/status", "rb") as status:  # noqa: PTH123 - hot path
                if wanted in status.read():
                    found.add(pid)
        except OSError:
            continue
    return found


def collect(
    root: psutil.Process | None, scope: RunScope, seen: Iterable[psutil.Process], reach: Reach
) -> dict[int, psutil.Process]:
    """Every live process of the run, by pid (never this process nor other live runs'): its
    tree, what its monitor saw, its escapees, and what carries its tag or uid within `reach`."""
    candidates = {p.pid: p for p in seen if alive(p)}
    if root is not None and alive(root):
        candidates[root.pid] = root
    if scope.alone:
        return candidates
    if scope.contained:  # its orphans go to the namespace's init, inside the tree; a wider
        # reach also finds a sandbox's init whose parent was killed before it asked to die with it
        starts = set(candidates)
        if reach is not Reach.CHILDREN:
            starts |= tagged_processes(scope.tag, _suspects(reach, set()))
        return dict(_alive_in(descendants(starts) - {os.getpid()}, candidates))
    others = _others(scope, candidates) - candidates.keys()
    starts = set(candidates) | escapees(scope, others)
    if reach is Reach.CHILDREN:
        children = set(proc_children(os.getpid())) - others
        starts |= {pid for pid in children if carries_tag(pid, scope.tag)}
    else:
        suspects = _suspects(reach, others)
        starts |= tagged_processes(scope.tag, suspects)
        if scope.uid is not None:
            starts |= _uid_processes(scope.uid, suspects)
    return dict(_alive_in(descendants(starts) - others - {os.getpid()}, candidates))


def _alive_in(
    pids: Iterable[int], known: dict[int, psutil.Process]
) -> Iterator[tuple[int, psutil.Process]]:
    """The live processes among `pids` (`known` ones reused, so a reused pid is not theirs)."""
    for pid in pids:
        process = known.get(pid)
        if process is None:
            try:
                process = psutil.Process(pid)
            except psutil.Error:
                continue
        if alive(process):
            yield pid, process


def _signal(processes: Iterable[psutil.Process], signum: int) -> None:
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.send_signal(signum)


async def kill_run(
    root: psutil.Process | None,
    scope: RunScope,
    seen: Iterable[psutil.Process],
    grace_s: float = KILL_GRACE_S,
) -> KillReport:
    """SIGTERM every process of the run, SIGKILL survivors after `grace_s`, then verify.

    Its tag and uid are looked for below the app first (`Reach.SUBTREE`), on the whole machine
    to verify (what joined a PID namespace made elsewhere is killed then, without the grace).
    New processes forked meanwhile (a fork bomb) are found and signalled on every round.
    `scope.since` bounds which zombie children of the app may be reaped.
    """
    seen = tuple(seen)
    signalled: set[int] = set()
    victims = collect(root, scope, seen, Reach.SUBTREE)
    commands = _commands(victims.keys() - {root.pid if root else 0}, KEEP_COMMANDS)
    _signal(victims.values(), signal.SIGTERM)
    signalled.update(victims)
    deadline = time.monotonic() + grace_s
    while victims and time.monotonic() < deadline:
        await asyncio.sleep(_POLL_S)
        victims = collect(root, scope, victims.values(), Reach.CHILDREN)
        fresh = victims.keys() - signalled
        commands += _commands(fresh, KEEP_COMMANDS - len(commands))
        _signal((victims[pid] for pid in fresh), signal.SIGTERM)
        signalled.update(fresh)
    await _kill_rounds(root, scope, victims, signalled)
    reap_orphans(scope.since)
    leftover = collect(root, scope, seen, Reach.MACHINE)
    for _ in range(_VERIFY_ROUNDS):
        if not leftover:  # else e.g. a sandbox's init whose parent was killed before it asked
            break  # to die with it, or what left the subtree and forks there
        commands += _commands(leftover.keys() - signalled, KEEP_COMMANDS - len(commands))
        await _kill_rounds(root, scope, leftover, signalled)
        reap_orphans(scope.since)
        leftover = collect(root, scope, seen, Reach.MACHINE)
    shown = tuple(command for command in commands if command)[:KEEP_COMMANDS]
    return KillReport(signalled=len(signalled), leftover=len(leftover), commands=shown)


def _commands(pids: Iterable[int], most: int) -> list[str]:
    """The command lines of up to `most` of `pids`."""
    return [command_line(pid) for pid in itertools.islice(pids, max(0, most))]


async def _kill_rounds(
    root: psutil.Process | None,
    scope: RunScope,
    victims: dict[int, psutil.Process],
    signalled: set[int],
) -> None:
    """SIGKILL `victims` and what they fork, round after round, adding them to `signalled`."""
    for _ in range(_KILL_ROUNDS):
        if not victims:
            return
        signalled.update(victims)
        victims = _kill_round(root, scope, victims)
        await asyncio.sleep(_POLL_S / 2)


def _kill_round(
    root: psutil.Process | None, scope: RunScope, victims: dict[int, psutil.Process]
) -> dict[int, psutil.Process]:
    """SIGKILL `victims`; return the run's processes still alive (or newly forked) after."""
    _signal(victims.values(), signal.SIGKILL)
    return collect(root, scope, victims.values(), Reach.CHILDREN)


def kill_now(root: psutil.Process | None, scope: RunScope, seen: Iterable[psutil.Process]) -> int:
    """SIGKILL every process of the run without awaiting (teardown of a cancelled run).

    Blocks for at most a few milliseconds per round; returns how many survived.
    """
    victims = collect(root, scope, seen, Reach.MACHINE)
    for _ in range(_KILL_ROUNDS):
        if not victims:
            break
        victims = _kill_round(root, scope, victims)
        time.sleep(0.002)
    return len(victims)


def reap_orphans(since: float) -> int:
    """Reap zombie children of the app started after `since` that asyncio does not wait for.

    A child started since a spawn under way began may be its root, which is tracked only once
    the spawn returns (reaped here, its exit code would be lost: asyncio reports 255): those
    are left to the reap that runs when the last spawn is done (`spawning`).
    """
    global _deferred_since
    unsure = min((began for began, _ in _spawns), default=math.inf)
    reaped = 0
    for pid in set(proc_children(os.getpid())) - _live_roots.keys():
        try:
            process = psutil.Process(pid)
            if (
                process.status() != psutil.STATUS_ZOMBIE
                or (created := process.create_time()) < since
            ):
                continue
            if created >= unsure:
                _deferred_since = min(since, _deferred_since or since)
                continue
            done, _ = os.waitpid(pid, os.WNOHANG)
        except (psutil.Error, ChildProcessError):
            continue
        reaped += done == pid
    return reaped
