"""One session container: start, commands with streamed output, the in-container sweep, stop.

`DockerSession` creates or adopts the container and starts commands (`exec`): a `docker exec`
(an `ExecStream`, which hands the exec socket's output to the event loop from a thread of its own),
or under gVisor a request to the container's supervisor (`supervisor_link`). It `sweep`s a run: it
kills every process carrying the run's tag, and the init's orphans that carry none (`env -i`
escapes), and verifies none is left, from the host through the cgroup and pidfds where it can
(runc, local engine, root), under gVisor through the supervisor, else by a second exec inside
(`KILL_SCRIPT`), with the supervisor's `kill -9 -1` when a fork bomb leaves no slot for that exec.
`remove_container`, `remove_volumes` and `remove_leftovers` clean up. Every docker-py call goes
through `asyncio.to_thread`."""

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.utils.socket import STDERR, STDOUT, frames_iter
from requests.exceptions import RequestException, Timeout

from workbench.errors import ExecutorError
from workbench.executors.docker.engine import close_attached, missing_image, shut_attached
from workbench.executors.docker.sampler import CgroupFiles
from workbench.executors.docker.spec import (
    LABEL_APP,
    LABEL_SESSION,
    RUNC_IDLE_TASKS,
    SESSION_TAG,
    SWEEP_SIGNAL,
)
from workbench.executors.docker.supervisor_link import (
    LinkSecret,
    SupervisedCommand,
    SupervisorLink,
)
from workbench.executors.process.outcome import format_bytes
from workbench.executors.types import Stream
from workbench.monitor.process import KEEP_COMMANDS, carries_tag, command_line, run_tag

# Kills every process of the run, scanning /proc until two passes in a row kill none and see
# none of the run's vanish (a process that forked and exited between a pass's listing and its
# check leaves a child, or a zombie, the next pass finds). The run's are those whose
# environment holds its tag ($1) and the escapees: orphans of the init (parent 1) that carry
# neither a tag of the runs in flight ($4) nor the session's ($3, which this killer, the
# supervisor and its sleep carry; an orphan carrying it is spared only when it is the
# supervisor, the init's oldest child), or no tag at all (`env -i`), or whose environment is
# unreadable. A concurrent run's processes carry their own, and an exec still starting has no
# parent in here, so none of these is touched; nor is an untagged process whose parent lives
# (once that is killed, a pass finds it an orphan). A zombie
# still holds a process slot: a pass is not clean while the init has one to reap (its parent is
# the init, the run's or gone); one that a concurrent run's live process holds does not count.
# A process's stat line counts only whole (a name may hold a line break, which cuts the line
# short and could fake a parent): a cut one reads as an orphan's. A pass reads every tag with
# one grep (`-a -o`: environ is NUL-separated), not one per process, cheap enough for many
# concurrent sweeps; when it cannot start (no free process slot) the killer's own tag is
# missing from its answer, and the pass is not clean. Prints "k
# <command line>" for each process it killed (the line empty after the first $2), then "left
# <processes still being killed after the last pass>".
KILL_SCRIPT = """
tag=$1; KEEP=$2; session=$3; spared=" $3 $4 "; me=/proc/$$/environ; nl='
'; seen=; killed=0; found=0; clean=0; round=0; main=; first=
for s in /proc/[0-9]*/stat; do
  read -r stat < "$s" 2>/dev/null || continue
  set -f; set -- ${stat##*) }; set +f
  [ $# -ge 20 ] && [ "$2" = 1 ] || continue
  shift 19
  if [ -z "$first" ] || [ "$1" -lt "$first" ]; then first=$1; main=${s#/proc/}; fi
done
main=${main%/stat}
while [ $clean -lt 2 ] && [ $round -lt 100 ]; do
  found=0; round=$((round + 1))
  tags="$(grep -aso 'WORKBENCH_RUN_ID=[-_.a-zA-Z0-9]*' /proc/[0-9]*/environ)$nl"
  case $tags in *"$me:"*) ;; *) found=1; clean=0; sleep 0.01; continue ;; esac
  for f in /proc/[0-9]*/environ; do
    p=${f#/proc/}; p=${p%/environ}
    [ "$p" = 1 ] || [ "$p" = $$ ] && continue
    case $tags in *"$f:$tag$nl"*) ours=1 ;; *"$f:"*) ours=0 ;; *) ours= ;; esac
    if ! read -r stat < "/proc/$p/stat" 2>/dev/null; then
      [ "$ours" = 1 ] && found=$((found + 1))
      continue
    fi
    set -f; set -- ${stat##*) }; set +f
    [ $# -ge 20 ] || set -- ? 1  # a name with a line break cut its line: an orphan, say
    parent=$2
    if [ "$1" = Z ]; then
      case $parent:$tags in 1:*) ;; *"/proc/$parent/environ:$tag$nl"*) ;;
        *"/proc/$parent/environ:"*) continue ;; esac
      found=$((found + 1)); continue
    fi
    if [ "$ours" = 0 ]; then
      t=${tags#*"$f:"}; t=${t%%"$nl"*}
      case $spared in *" $t "*) ;; *) ours= ;; esac
      [ "$t" = "$session" ] && [ "$parent" = 1 ] && [ "$p" != "$main" ] && ours=
    fi
    [ "$ours" = 0 ] && continue
    [ -z "$ours" ] && [ "$parent" != 1 ] && continue
    case " $seen " in
      *" $p "*) kill -9 "$p" 2>/dev/null && found=$((found + 1)); continue ;;
    esac
    [ $killed -lt $KEEP ] && cmd=$(tr '\\0' ' ' < "/proc/$p/cmdline" 2>/dev/null)
    kill -9 "$p" 2>/dev/null || continue
    found=$((found + 1)); seen="$seen $p"; killed=$((killed + 1))
    [ $killed -le $KEEP ] || cmd=
    echo "k $cmd"
  done
  if [ $found -gt 0 ]; then clean=0; sleep 0.01; else clean=$((clean + 1)); fi
done
echo "left $found"
"""
SWEEP_TRIES = 5
SWEEP_POLL_S = 0.05
EXIT_POLL_S = 0.05
KILLER_TIMEOUT_S = 15.0  # an exec whose container dies may never end its stream
MEASURE_TIMEOUT_S = 5.0  # for the output of one measure of the workspace (`used_bytes`)
REMOVE_WAIT_S = 60.0  # for a removal the engine goes on with after the client's timeout
HOST_ROUNDS = 100  # passes over the cgroup's members, as the in-container killer makes
HOST_POLL_S = 0.002
HOST_SETTLE_S = 0.5  # how long killed processes may take to be reaped before the exec sweep
# How long the engine may take to report the OOM kill of a container that stopped. Under runc
# the OOM killer takes the largest process, a command, and the container goes on: one that
# stopped was seldom stopped for memory. Under gVisor it can be the sandbox's own kernel.
RUNC_OOM_REPORT_S = 2.0
GVISOR_OOM_REPORT_S = 10.0
OOM_POLL_S = 0.1
MEMORY_KILL_SHARE = 0.5  # of the memory limit: a bomb that doubles its use was sampled past it
POOL_NAME_PREFIX = "skill-workbench-pool-"  # a warm pool's container, until it is claimed
# A request sent into a lost link may be lost or torn with it, which the supervisor could not
# tell from a command taking one: its container is not served again.
LINK_LOST = "the link to its supervisor was lost while it ran, and the container was stopped"

Chunk = tuple[Stream, bytes]


@dataclass(frozen=True, slots=True)
class Sweep:
    """What a sweep did: processes of the run it killed (the first few's command lines), and
    how many it could not."""

    killed: int
    leftover: int
    commands: tuple[str, ...] = ()


class ExecStream:
    """A started `docker exec`: its output chunks as they arrive, then its exit code."""

    def __init__(self, api: docker.APIClient, exec_id: str) -> None:
        self._api = api
        self.exec_id = exec_id
        self._queue: asyncio.Queue[Chunk | None] = asyncio.Queue()
        self._sock: Any = None
        self._pump: asyncio.Future[None] | None = None
        self._eof = asyncio.Event()

    async def open(self) -> None:
        """Start the exec and the thread that pumps its output into the queue."""
        self._sock = await asyncio.to_thread(self._api.exec_start, self.exec_id, socket=True)
        loop = asyncio.get_running_loop()
        self._pump = loop.create_future()
        # A thread of its own, not the loop's pool: it blocks for as long as the exec's output
        # stays open (a background process can hold it), and 20 concurrent runs would take
        # every thread of the pool the engine calls need.
        threading.Thread(target=self._read, args=(loop,), name="exec-output", daemon=True).start()

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        put = self._queue.put_nowait
        kinds = {STDOUT: Stream.STDOUT, STDERR: Stream.STDERR}
        try:
            for stream_id, data in frames_iter(self._sock, False):  # type: ignore[no-untyped-call]
                if data and stream_id in kinds:
                    loop.call_soon_threadsafe(put, (kinds[stream_id], data))
        except (OSError, ValueError):  # the socket was shut down under us
            pass
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(put, None)
                loop.call_soon_threadsafe(_resolve, self._pump)

    async def chunks(self) -> AsyncIterator[Chunk]:
        """Output chunks until the exec's streams close."""
        while (chunk := await self._queue.get()) is not None:
            yield chunk
        self._eof.set()

    async def exited(self) -> int:
        """Wait until the exec's process has ended; its exit code."""
        while True:
            info = await asyncio.to_thread(self._api.exec_inspect, self.exec_id)
            code = info.get("ExitCode")
            # Not running and no exit code yet: the engine has not started the process.
            if not info.get("Running") and code is not None:
                return int(code)
            # The streams closing usually means exit. `asyncio.timeout`, not `wait_for`: under
            # Python 3.11 a cancel that lands as `wait_for` times out becomes its TimeoutError.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(EXIT_POLL_S):
                    await self._eof.wait()

    async def close(self) -> None:
        """Shut the connection down (unblocks the reader thread), wait for it, release it."""
        if self._sock is None:
            return
        await shut_attached(self._sock, self._pump)
        self._sock = None


class DockerSession:
    """The container of one executor session, on one runtime."""

    def __init__(self, client: docker.DockerClient, options: dict[str, Any]) -> None:
        self._client = client
        self._options = options
        self.container_id = ""
        self.attrs: dict[str, Any] = {}
        self.cgroup: CgroupFiles | None = None
        self.baseline_tasks = 0
        self._host: CgroupFiles | None = None  # set when the host can kill the run's processes
        self._link: SupervisorLink | None = None  # under gVisor, to the container's supervisor
        self._linking = asyncio.Lock()
        self._secret = LinkSecret()
        self._latest_link: SupervisorLink | None = None  # open or lost: what it heard
        self.runs: set[str] = set()  # the tags of the runs in flight: their orphans are spared
        # The killers under way, each with the live tags it was given: a command starts only
        # once those that may lack its run's tag are done (`exec`), or one could take its
        # orphans for escapees.
        self._killers: set[asyncio.Future[None]] = set()
        self.halted = ""  # why the session stopped its own container (`halt`), if it did

    @property
    def api(self) -> docker.APIClient:
        return self._client.api

    async def start(self) -> None:
        """Create and start the container, then find its cgroup."""
        try:
            self.container_id = await asyncio.to_thread(self._create)
            await asyncio.to_thread(self.api.start, self.container_id)
        except ImageNotFound as error:  # nothing was created
            raise ExecutorError(missing_image(str(self._options.get("image")))) from error
        except (DockerException, RequestException) as error:
            with contextlib.suppress(DockerException, RequestException, ExecutorError):
                await self.stop()
            raise ExecutorError(f"Could not start the session container: {error}") from error
        await self.adopt(self.container_id)

    async def adopt(self, container_id: str) -> None:
        """Serve from `container_id`, already started (a warm one from the pool): inspect it
        and find its cgroup. `ExecutorError` (the container removed) when it does not run."""
        self.container_id = container_id
        self._secret = LinkSecret()  # a new container: a new supervisor to send a key to
        self._latest_link = None
        self.halted = ""
        try:
            await self.inspect()
        except (DockerException, RequestException) as error:
            with contextlib.suppress(DockerException, RequestException, ExecutorError):
                await self.stop()
            raise ExecutorError(f"Could not start the session container: {error}") from error
        if self.attrs["State"].get("Running") is not True:
            await self.stop()
            python = " (under gVisor its main process is a python3 supervisor)"
            raise ExecutorError(
                "The session container exited right after it started"
                f"{python if self.supervised else ''}."
            )
        host_pid = int(self.attrs["State"].get("Pid") or 0)
        cgroup = CgroupFiles.for_pid(host_pid) if host_pid else None
        # On another machine the engine's pid is some other process here, in another cgroup.
        self.cgroup = cgroup if cgroup and self.container_id in str(cgroup.pids) else None
        # Under runc the idle tree is the spec's: counted this soon after the start, it could
        # miss the shell's sleep, and no host sweep of the session would ever be verified.
        if self.cgroup is None:
            self.baseline_tasks = 0
        elif self.supervised:
            self.baseline_tasks = self.cgroup.usage().tasks
        else:
            self.baseline_tasks = RUNC_IDLE_TASKS
        host_kills = not self.supervised and os.geteuid() == 0
        self._host = self.cgroup if host_kills else None

    @property
    def supervised(self) -> bool:
        """Whether commands start through the container's supervisor (gVisor), not an exec."""
        return self._options.get("runtime") == "runsc"

    async def supervisor(self) -> SupervisorLink:
        """The link to the container's supervisor, attached at its first use (a pool's
        container is started by one process and served by another), again if it was lost.
        `ConnectionResetError` when the container does not run: the engine holds an attach to
        a stopped container open until it starts again."""
        async with self._linking:  # one link: every attached client gets every answer
            if self._link is None or self._link.lost:
                if self._secret.sent and await self._running_now():
                    await self.halt(LINK_LOST)
                await self._close_link()
                if not await self._running_now():
                    raise ConnectionResetError("the session container does not run")
                link = SupervisorLink(self.api, self.container_id, self._secret)
                await link.open()
                self._link = self._latest_link = link
                if not await self._running_now():  # it stopped before the attach: no answer
                    await self._close_link()
                    raise ConnectionResetError("the session container does not run")
            return self._link

    @property
    def link_lost(self) -> bool:
        """Whether the link to the supervisor was lost (the container may still run, but is
        not served again: see `LINK_LOST`)."""
        return self._link is not None and self._link.lost

    @property
    def supervisor_said(self) -> str:
        """What the supervisor (or the init, when it could not start it) wrote to its stderr
        before it had its key ("" for nothing, or no supervisor)."""
        return self._latest_link.said if self._latest_link else ""

    @property
    def supervisor_tampered(self) -> bool:
        """Whether a process in the container wrote into or read the supervisor's channel
        (the link then stopped the container)."""
        return self._latest_link is not None and self._latest_link.tampered

    @property
    def supervisor_cpu_seconds(self) -> float:
        """The supervisor's own CPU time as of its last sweep (it counts against RLIMIT_CPU)."""
        return self._link.cpu_seconds if self._link else 0.0

    async def _close_link(self) -> None:
        if self._link is not None:
            link, self._link = self._link, None
            await link.close()

    def _create(self) -> str:
        # The session's volumes are made first, with its labels: Podman drops the labels of a
        # volume a mount creates, and `remove_volumes` finds a session's volumes by label.
        for mount in self._options.get("mounts") or ():
            self.api.create_volume(mount["Source"], labels=self._options["labels"])
        return str(self._client.containers.create(**self._options).id)

    async def inspect(self) -> dict[str, Any]:
        """Refresh and return the container's inspect data."""
        self.attrs = await asyncio.to_thread(self.api.inspect_container, self.container_id)
        return self.attrs

    async def running(self, settle_s: float = 0.0) -> bool:
        """True when the container still exists and runs (and still did `settle_s` later).

        Where the host sees the container's cgroup, it exists while the container runs and
        holds at least the init: no engine call is needed. A container killed from outside ends
        its exec before its init has gone: an exec that died of SIGKILL asks with a settle time.
        """
        deadline = time.monotonic() + settle_s
        while await self._running_now():
            if time.monotonic() >= deadline:
                return True
            await asyncio.sleep(EXIT_POLL_S)
        return False

    async def _running_now(self) -> bool:
        if self._host is not None:
            try:
                return self._host.tasks() > 0
            except (OSError, ValueError):
                return False
        return (await self._state()).get("Running") is True

    async def stopped_for_memory(self, peak_bytes: int, limit_bytes: int) -> str:
        """How the container that stopped under a run was stopped for memory ("" when it was
        not): the engine says the kernel OOM-killed it, or it was killed (exit 137) with at
        least `MEMORY_KILL_SHARE` of its limit in use, as sampled.

        The engine may learn of an OOM kill a while after the container stopped (under gVisor,
        more than three seconds on a loaded machine), or never hear of it when the kernel killed
        gVisor's own kernel: ask for up to `GVISOR_OOM_REPORT_S` (`RUNC_OOM_REPORT_S` under
        runc). Only a container that stopped under a run waits this long, and not one that was
        removed.
        """
        near_the_limit = peak_bytes >= MEMORY_KILL_SHARE * limit_bytes > 0
        wait_s = GVISOR_OOM_REPORT_S if self.supervised else RUNC_OOM_REPORT_S
        for _ in range(int(wait_s / OOM_POLL_S)):
            state = await self._state()
            if not state:  # removed: whatever stopped it, the engine has nothing more to say
                return ""
            if state.get("OOMKilled") is True:
                return "cgroup OOM killed the container"
            if near_the_limit and state.get("ExitCode") == 137:
                return (
                    f"the container was killed with {format_bytes(peak_bytes)} in use; the "
                    "engine reported no OOM kill"
                )
            await asyncio.sleep(OOM_POLL_S)
        return ""

    async def _state(self) -> dict[str, object]:
        try:
            attrs = await self.inspect()
        except NotFound:
            return {}
        state: dict[str, object] = attrs["State"]
        return state

    async def exec(
        self, argv: list[str], env: dict[str, str], workdir: str
    ) -> ExecStream | SupervisedCommand:
        """Start `argv` in the container and return its stream: under gVisor through the
        supervisor (`gvisor_supervisor`), else with `docker exec`. The run's tag is in `runs`
        already; a killer started before that is waited for first."""
        if earlier := set(self._killers):
            await asyncio.wait(earlier)
        if self.supervised:
            return await (await self.supervisor()).start(argv, env, workdir)
        created = await asyncio.to_thread(
            self.api.exec_create, self.container_id, argv, environment=env, workdir=workdir
        )
        stream = ExecStream(self.api, str(created["Id"]))
        await stream.open()
        return stream

    async def sweep(self, tag: str) -> Sweep:
        """Kill every process carrying `tag` in its environment and the untagged escapees
        (`KILL_SCRIPT`), and verify none is left.

        When not even the killer can start (a fork bomb holds every slot of the pids limit),
        or it cannot kill them all, the supervisor kills every process of the container
        instead (a concurrent run's too), and the killer retries.
        """
        commands: list[str] = []
        if self._host is not None:
            verified = await self._host_sweep(self._host, tag.encode(), commands)
            if verified:
                return Sweep(len(commands), 0, tuple(commands[:KEEP_COMMANDS]))
        host_killed, killed = len(commands), 0
        for _ in range(SWEEP_TRIES):
            try:
                output, ended = await self._kill(tag)
            except (DockerException, OSError):
                output, ended = "", True
            lines = output.splitlines()
            kills = [line[2:].strip() for line in lines if line.startswith("k ")]
            killed, commands = killed + len(kills), commands + [c for c in kills if c]
            left = next((int(line[5:]) for line in lines if line.startswith("left ")), -1)
            if left == 0:
                break
            if not await self.running():
                left = 0  # a stopped container holds no process
                break
            if not ended:  # slow (a loaded machine), not refused: try again, and never with
                continue  # the supervisor's kill of everything, a concurrent run's too
            with contextlib.suppress(APIError):
                await asyncio.to_thread(self.api.kill, self.container_id, SWEEP_SIGNAL)
            await asyncio.sleep(SWEEP_POLL_S)
        shown = tuple(dict.fromkeys(commands))[:KEEP_COMMANDS]
        return Sweep(host_killed + killed, 0 if left == 0 else max(left, 1), shown)

    async def _kill(self, tag: str) -> tuple[str, bool]:
        """The killer's report (`KILL_SCRIPT`'s lines) and whether it ended: the supervisor's
        sweep under gVisor, else the script in an exec of its own."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._killers.add(done)
        live = sorted(self.runs)
        try:
            if self.supervised:
                link = await self.supervisor()
                return await link.sweep(tag, KEEP_COMMANDS, live), True
            session = run_tag(SESSION_TAG).decode()
            live_tags = " ".join(live)
            argv = ["sh", "-c", KILL_SCRIPT, "kill", tag, str(KEEP_COMMANDS), session, live_tags]
            return await self.exec_text(argv)
        finally:
            self._killers.discard(done)
            done.set_result(None)

    async def _host_sweep(self, cgroup: CgroupFiles, tag: bytes, commands: list[str]) -> bool:
        """Kill the run's processes by host pid, adding each one's command line to `commands`;
        True when verified that none is left.

        Not verified when the task count does not come back to the idle session's (a process
        without the tag, such as an escapee, one still being reaped past the bound) or the
        files cannot be read. The count holds zombies until they are reaped, the cgroup's
        process list does not: while that list is the idle session's, the rest is being reaped.
        """
        killed: dict[int, str] = {}
        try:
            for _ in range(HOST_ROUNDS):
                found = [pid for pid in cgroup.processes() if carries_tag(pid, tag)]
                if not found:
                    break
                for pid in found:
                    if pid not in killed and (command := _kill_tagged(pid, tag)) is not None:
                        killed[pid] = command
                await asyncio.sleep(HOST_POLL_S)
            else:  # still finding some after every pass (a fork bomb outruns the passes)
                return False
            deadline = time.monotonic() + HOST_SETTLE_S
            while cgroup.tasks() != self.baseline_tasks:
                reaping = any(map(_exists, killed)) or (
                    len(cgroup.processes()) == self.baseline_tasks
                )
                if time.monotonic() > deadline or not reaping:
                    return False  # what is left is not the run's, or is slow
                await asyncio.sleep(HOST_POLL_S)
        except (OSError, ValueError):
            return False
        finally:
            commands += killed.values()
        return True

    async def exec_text(self, argv: list[str]) -> tuple[str, bool]:
        """Run `argv` in the container and return its stdout, and whether its output ended
        within `KILLER_TIMEOUT_S` (else what came until then)."""
        created = await asyncio.to_thread(self.api.exec_create, self.container_id, argv)
        stream = ExecStream(self.api, str(created["Id"]))
        await stream.open()
        out = bytearray()
        ended = False
        try:
            async with asyncio.timeout(KILLER_TIMEOUT_S):
                async for kind, data in stream.chunks():
                    if kind is Stream.STDOUT:
                        out += data
                ended = True
        except TimeoutError:
            pass
        finally:
            await stream.close()
        return out.decode(errors="replace"), ended

    async def halt(self, why: str) -> None:
        """Kill the container (every process in it: it stops, and the next run's check
        replaces it); `halted` says `why` to the runs it ends."""
        self.halted = why
        with contextlib.suppress(DockerException, RequestException):
            await asyncio.to_thread(self.api.kill, self.container_id)

    async def recycle(self) -> None:
        """Replace a container that stopped (or was removed) by a fresh one."""
        await self.stop()
        await self.start()

    async def stop(self) -> None:
        """Remove the container (forced), and the session's volumes if it has them. Safe to
        call more than once."""
        await self._close_link()
        if self.container_id:
            await asyncio.to_thread(remove_container, self.api, self.container_id)
        if self._options.get("mounts"):
            await asyncio.to_thread(
                remove_volumes, self.api, self._options["labels"][LABEL_SESSION]
            )


def _resolve(future: "asyncio.Future[None] | None") -> None:
    if future is not None and not future.done():
        future.set_result(None)


def _kill_tagged(pid: int, tag: bytes) -> str | None:
    """SIGKILL `pid` if it still carries `tag` (checked through a pidfd: never a reused pid);
    its command line, or None when it was not killed."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:  # already gone
        return None
    try:
        if not carries_tag(pid, tag):
            return None
        command = command_line(pid)
        signal.pidfd_send_signal(fd, signal.SIGKILL)
    except OSError:
        return None
    finally:
        os.close(fd)
    return command


def _exists(pid: int) -> bool:
    """True while `pid` is in the process table (running, or a zombie not yet reaped)."""
    return os.path.exists(f"/proc/{pid}")  # noqa: PTH110 - hot path, plain names


def used_bytes(api: docker.APIClient, container_id: str, mount: str) -> int | None:
    """How many bytes of files the container holds under `mount` (apparent sizes, as
    `tree_bytes` counts them), as the container itself sees them; blocking, one exec whose
    output may take `MEASURE_TIMEOUT_S` at most (an exec's stream can stay open for good when
    its container dies). None when it cannot be told."""
    try:
        created = api.exec_create(container_id, ["du", "-sb", mount])
        sock = api.exec_start(created["Id"], socket=True)
    except (DockerException, RequestException):
        return None
    try:
        raw: Any = getattr(sock, "_sock", sock)  # the socket under docker-py's reader
        raw.settimeout(MEASURE_TIMEOUT_S)
        frames = frames_iter(sock, False)  # type: ignore[no-untyped-call]
        output = b"".join(data for stream_id, data in frames if stream_id == STDOUT)
    except (OSError, ValueError):
        return None
    finally:
        close_attached(sock)
    words = output.split()
    return int(words[-2]) if len(words) >= 2 and words[-2].isdigit() else None


def remove_container(api: docker.APIClient, container_id: str) -> None:
    """Remove a container (forced); gone already is fine. An engine slower than the client's
    timeout (a gVisor sandbox with many processes takes a while to tear down) goes on removing
    it: then wait up to `REMOVE_WAIT_S` for it to be gone. `ExecutorError` when the engine
    refuses or does not answer."""
    try:
        api.remove_container(container_id, force=True)
    except NotFound:
        pass
    except (DockerException, RequestException) as error:  # also when the engine went away
        if isinstance(error, APIError) and error.status_code == 409:  # 409: in progress
            return
        if isinstance(error, Timeout) and _gone_within(api, container_id, REMOVE_WAIT_S):
            return
        raise ExecutorError(f"Could not remove container {container_id[:12]}: {error}") from error


def _gone_within(api: docker.APIClient, container_id: str, seconds: float) -> bool:
    """Whether the engine says the container is gone within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            api.inspect_container(container_id)
        except NotFound:
            return True
        except (DockerException, RequestException):
            pass  # still busy: ask again
        time.sleep(SWEEP_POLL_S * 4)
    return False


def remove_volumes(api: docker.APIClient, session_id: str | None = None) -> None:
    """Remove the workbench's volumes of one session (or of all) that no container uses; one
    in use or gone already stays. `ExecutorError` when the engine does not answer."""
    labels = [LABEL_APP] + ([f"{LABEL_SESSION}={session_id}"] if session_id else [])
    try:
        found = api.volumes(filters={"label": labels}).get("Volumes") or []
        for volume in found:
            with contextlib.suppress(APIError):  # in use (another session's), or gone
                api.remove_volume(volume["Name"])
    except (DockerException, RequestException) as error:
        raise ExecutorError(f"Could not remove the session's volumes: {error}") from error


def pooled(item: dict[str, Any]) -> bool:
    """True when a container listing's entry is still waiting in a warm pool (not claimed)."""
    return any(name.lstrip("/").startswith(POOL_NAME_PREFIX) for name in item.get("Names") or ())


def remove_leftovers(client: docker.DockerClient, session_id: str | None = None) -> int:
    """Remove workbench containers (of one session, or all); return how many were removed.

    Containers waiting in a warm pool are not leftovers (another process may be about to
    claim them); `container_claims.drain` removes those.
    """
    labels = [LABEL_APP] + ([f"{LABEL_SESSION}={session_id}"] if session_id else [])
    found = client.api.containers(all=True, filters={"label": labels})
    found = [item for item in found if not pooled(item)]
    for item in found:
        remove_container(client.api, item["Id"])
    remove_volumes(client.api, session_id)
    return len(found)
