"""The `docker` and `gvisor` postures: one container per session, every command started in it.

`DockerExecutor.start()` creates the session container from the typed posture (`spec`), or takes a
warm one from a `ContainerPool`, after removing the session containers of killed workbenches, and
reads the effective posture card back from the engine. `run()` starts the command with the run's tag
(a `docker exec`; under gVisor through the container's supervisor, `supervisor_link`),
streams its output, samples the container (`ContainerSampler`), ends on exit, timeout, Stop or
shutdown, kills and verifies the run's processes (`DockerSession.sweep`) and classifies the result
(`outcome`); `stop()` removes the container. On an engine that does not see this machine's files
(`locality`) the session owns volumes instead of bind mounts and copies the skill and workspace in
before each command and the workspace back after it (`remote`), never from a warm pool. The
`gvisor` posture is the same executor on the `runsc` runtime. Design notes: docs/notes.md, "Docker
sessions" and "Remote engines".
"""

import asyncio
import contextlib
import os
import secrets
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docker
from docker.errors import DockerException
from requests.exceptions import RequestException

from workbench.errors import ExecutorError
from workbench.executors.docker.engine import EngineUnreachable, engine_client, resolve_engine
from workbench.executors.docker.locality import confirm, remember, sees_files
from workbench.executors.docker.outcome import (
    ExecEnd,
    classify,
    exec_refusal_notes,
    split_exec_refusal,
    split_exit,
)
from workbench.executors.docker.owner import reap_sessions, session_name
from workbench.executors.docker.remote import CopiedFiles
from workbench.executors.docker.sampler import ContainerSampler
from workbench.executors.docker.session import DockerSession, ExecStream, Sweep, used_bytes
from workbench.executors.docker.spec import (
    CONTAINER_UID,
    WORKSPACE_MOUNT,
    container_options,
    limits_refusal,
    network_refusal,
    posture_card,
    skill_mount,
    volume_name,
)
from workbench.executors.docker.supervisor_link import TAMPERED, SupervisedCommand
from workbench.executors.inflight import InFlight, prepare_runs_dir
from workbench.executors.process.capture import (
    StreamCapture,
    close_logs,
    finish_logs,
    stream_captures,
)
from workbench.executors.process.outcome import format_bytes, left_behind_warnings
from workbench.executors.process.ownership import FolderLoan, SharedLoan
from workbench.executors.process.runner import EndedBy, first_end
from workbench.executors.types import (
    CancelToken,
    OutputSink,
    PostureCard,
    RunRequest,
    RunResult,
    RunStatus,
    SessionSpec,
    Stream,
)
from workbench.executors.workspace_limit import WorkspaceWatch, bound_checks
from workbench.monitor.process import RUN_TAG_ENV, run_tag
from workbench.postures.description import assess
from workbench.postures.model import Posture, PostureId, PostureWarning, Severity

if TYPE_CHECKING:
    from workbench.executors.warm.containers import ContainerPool

ENGINE_TIMEOUT_S = 10
CONTAINER_GONE = "the session container stopped during the run (removed or stopped from outside)"
DRAIN_S = 5.0  # after the sweep, how long the output stream may take to close (a busy engine)
_OUTPUT_LEFT_OPEN = PostureWarning(
    Severity.CAUTION,
    f"The command's output stayed open {DRAIN_S:g} s after it ended (a process it left holds "
    "it, or the engine is slow to close it): what came after that was not read.",
)
HALTED_FOR_ESCAPEE = (
    "a run's command outlived every sweep (it changed or shed its run tag), and the container "
    "was stopped to end it"
)
_COMMAND_ESCAPED = PostureWarning(
    Severity.CAUTION,
    "The session container was stopped to end the command, whose own process outlived every "
    "sweep (it changed or shed its run tag, so it could not be told from another run's); any run "
    "sharing the container was stopped too.",
)
SHOWN_SAID_CHARS = 300  # of what the supervisor said as its container stopped, in the cause
WORN_SHARE = 0.5  # of RLIMIT_CPU, which the supervisor spends too: a fresh container past it
KILLED_SETTLE_S = 1.0  # for a container killed from outside to stop after its exec ended
RESWEEP_S = 0.05  # first wait for the exec's end before sweeping again (then doubled)


def runtime_of(posture: Posture) -> str:
    """The engine runtime of a container posture: runsc for gvisor, else runc."""
    return "runsc" if posture.id is PostureId.GVISOR else "runc"


class DockerExecutor:
    """Runs commands of one skill session in one container (see the module docstring)."""

    def __init__(self, posture: Posture, pool: "ContainerPool | None" = None) -> None:
        self.posture = posture
        self.runtime = runtime_of(posture)
        self._pool = pool
        self.warm = False  # the container came from the pool (never used, checked clean)
        self._spec: SessionSpec | None = None
        self._session: DockerSession | None = None
        self._client: docker.DockerClient | None = None
        self._card = PostureCard(posture)
        self.session_id = ""  # the container label that finds this session's container
        self._loan: SharedLoan | None = None
        self._files: CopiedFiles | None = None  # on an engine that does not see our files
        self._in_flight = InFlight()
        self._recycling = asyncio.Lock()  # one replacement for runs that find it stopped

    async def start(self, session: SessionSpec) -> None:
        """Start the session container; `ExecutorError` when the engine cannot."""
        prepare_runs_dir(session.runs_dir)
        try:
            self._client = await asyncio.to_thread(engine_client, ENGINE_TIMEOUT_S)
            await asyncio.to_thread(reap_sessions, self._client)  # of workbenches killed mid-run
            refusal = await asyncio.to_thread(self._refusal, self._client)
        except EngineUnreachable as error:  # already a sentence naming the engine
            raise ExecutorError(str(error)) from error
        except DockerException as error:
            raise ExecutorError(f"The Docker engine failed to answer: {error}") from error
        if refusal:  # e.g. gVisor asked for a network its runtime cannot give
            raise ExecutorError(refusal)
        self._spec = session
        self._session = await self._local_session(session) or await self._copied_session(session)
        self._card = self._read_card(self._session)
        self._in_flight.reopen()
        if self._files is None and os.geteuid() == 0 and not self.posture.run_as_root:
            loan = FolderLoan(session.workspace, CONTAINER_UID, CONTAINER_UID)
            self._loan = SharedLoan(loan)

    async def _local_session(self, session: SessionSpec) -> DockerSession | None:
        """A session that bind-mounts the folders, or None when the engine does not see them
        (`locality`: asked once per engine, confirmed in each cold session container)."""
        assert self._client is not None
        url = resolve_engine().url
        try:
            local = await asyncio.to_thread(
                sees_files, self._client, url, session.workspace, self.posture.image
            )
        except (DockerException, RequestException) as error:
            raise ExecutorError(f"The Docker engine failed to answer: {error}") from error
        if not local:
            return None
        warm = await self._warm_session(session)
        if warm is not None:  # its pool asked, and its mounts were checked at the claim
            return warm
        started = await self._cold_session(session)
        if await asyncio.to_thread(confirm, started.api, started.container_id, session.workspace):
            return started
        remember(url, None)  # the engine moved since it was asked: ask again next time
        await started.stop()
        return None

    async def _copied_session(self, session: SessionSpec) -> DockerSession:
        """A session whose skill and workspace are copied in and out (`remote`)."""
        assert self._client is not None
        self.session_id, self.warm = secrets.token_hex(6), False
        options = self._options(session, self.session_id, copied=True)
        started = DockerSession(self._client, options)
        await started.start()
        uid, gid = map(int, str(options["user"]).split(":"))
        self._files = CopiedFiles(started.api, session, (uid, gid))
        try:
            await self._load(started)
        except ExecutorError:
            await started.stop()
            raise
        return started

    async def _load(self, session: DockerSession) -> None:
        """Serve the copied files from `session`'s container (adopted when it is new), its
        skill volume holding the skill as it is now."""
        assert self._files is not None
        if self._files.container_id != session.container_id:
            self._files.adopt(session.container_id)
        skill_volume = volume_name(self.session_id, "skill")
        await asyncio.to_thread(self._files.load_skill, self.posture.image, skill_volume)

    def _refusal(self, client: docker.DockerClient) -> str:
        """Why the engine cannot give this posture what it asks for ("" when it can)."""

        def engine_cpus() -> int:
            return int(client.info().get("NCPU") or os.cpu_count() or 1)

        return limits_refusal(self.posture.limits, engine_cpus) or network_refusal(
            self.posture, self.runtime, client
        )

    async def _cold_session(self, session: SessionSpec) -> DockerSession:
        assert self._client is not None
        self.session_id, self.warm = secrets.token_hex(6), False
        started = DockerSession(self._client, self._options(session, self.session_id))
        await started.start()
        return started

    async def _warm_session(self, session: SessionSpec) -> DockerSession | None:
        """The pool's clean container for this session, or None (no pool, none ready)."""
        assert self._client is not None
        claimed = await self._pool.claim(self.posture, session) if self._pool else None
        if claimed is None:
            return None
        options = self._options(session, claimed.session_id)
        warm = DockerSession(self._client, options)  # a recycle starts a cold one like it
        try:
            await warm.adopt(claimed.container_id)
        except ExecutorError:  # it stopped since the claim
            return None
        self.session_id, self.warm = claimed.session_id, True
        return warm

    def _options(
        self, session: SessionSpec, session_id: str, copied: bool = False
    ) -> dict[str, Any]:
        """The session container's options, named as this process's (`owner`)."""
        options = container_options(self.posture, session, session_id, self.runtime, copied)
        return options | {"name": session_name(session_id)}

    def _read_card(self, session: DockerSession) -> PostureCard:
        """The effective posture card, and whether the container came warm from the pool."""
        card = posture_card(self.posture, session.attrs, self.runtime)
        environment = self._spec.environment if self._spec and self._files is None else None
        card = replace(card, environment=environment.env_id if environment else "")
        card = replace(card, checks=card.checks + bound_checks(self.posture.limits, watched=True))
        how = (
            "Warm container from the pool (never used, checked clean)"
            if self.warm
            else "Container started cold (no warm one ready)"
        )
        return replace(card, started=how)

    @property
    def container_id(self) -> str:
        """The session container's id ("" before `start()`)."""
        return self._session.container_id if self._session else ""

    async def stop(self) -> None:
        """End every run in flight (killing its processes), then remove the container."""
        await self._in_flight.end_all()
        try:
            if self._session is not None:
                await self._session.stop()
        finally:  # also when the engine went away and the container could not be removed
            if self._client is not None:
                await asyncio.to_thread(self._client.close)
            self._session = self._client = self._spec = self._files = None

    async def run(self, request: RunRequest, sink: OutputSink, cancel: CancelToken) -> RunResult:
        """Run one command in the container; see `Executor.run`."""
        if self._spec is None or self._session is None:
            raise ExecutorError("The executor was not started (or was stopped) before a run.")
        run_id = request.run_id
        run_dir = self._spec.runs_dir / run_id
        run_dir.mkdir(parents=True, exist_ok=True)  # the run service may have made it
        warnings = tuple(assess(self.posture))
        with self._in_flight.run():
            problem = await self._problem(self._spec, self._session, request)
            if problem:
                return self._error(run_id, run_dir, problem, warnings)
            if self._loan is not None:
                try:
                    await self._loan.acquire()
                except OSError as error:
                    cause = f"cannot lend the workspace to uid {CONTAINER_UID}: {error}"
                    return self._error(run_id, run_dir, cause, warnings)
            if self._files is not None:
                try:
                    await self._load(self._session)
                    say = _in_loop(request.on_progress)
                    await asyncio.to_thread(self._files.send, WORKSPACE_MOUNT, say)
                except ExecutorError as error:
                    return self._error(run_id, run_dir, str(error), warnings)
            log_cap = self.posture.limits.log_bytes
            captures = stream_captures(run_dir, request.output_cap_bytes, log_cap, sink)
            try:
                return await self._run(
                    self._spec, self._session, request, run_dir, captures, cancel, warnings
                )
            except BaseException:  # cancelled or failed: no result, but the logs get it all
                close_logs(captures.values())
                raise
            finally:
                if self._loan is not None:
                    await self._loan.release()

    async def _problem(self, spec: SessionSpec, session: DockerSession, request: RunRequest) -> str:
        if not request.argv:
            return "empty command: nothing to run"
        if not spec.workspace.is_dir():
            return f"workspace missing: {spec.workspace} is not a folder"
        # The supervisor's CPU time counts against its RLIMIT_CPU as a command's does: a
        # session whose supervisor spent half of it starts over before the limit ends it.
        try:
            async with self._recycling:
                worn = session.supervisor_cpu_seconds > WORN_SHARE * self.posture.limits.cpu_seconds
                stale = session.link_lost or (worn and self._in_flight.count == 1)
                if stale or not await session.running():
                    await session.recycle()
                    self.warm = False
                    if self._files is not None:
                        await self._load(session)
                    self._card = self._read_card(session)
        except (DockerException, OSError) as error:
            return f"the Docker engine does not answer: {error}"
        except ExecutorError as error:
            return f"the session container was gone and could not be replaced: {error}"
        return ""

    async def _run(
        self,
        spec: SessionSpec,
        session: DockerSession,
        request: RunRequest,
        run_dir: Path,
        captures: dict[Stream, StreamCapture],
        cancel: CancelToken,
        warnings: tuple[PostureWarning, ...],
    ) -> RunResult:
        run_id = request.run_id
        limits = self.posture.limits
        env = {
            **request.env,
            "SKILL_DIR": skill_mount(spec),
            "WORKSPACE": WORKSPACE_MOUNT,
            RUN_TAG_ENV: run_id,
        }
        tag = run_tag(run_id).decode()
        watch = self._workspace_watch(spec, session)
        await watch.baseline()  # before the command writes anything
        before = session.cgroup.counters() if session.cgroup else None
        t0 = time.monotonic()
        sampler = ContainerSampler(
            session.cgroup,
            self._stats,
            session.baseline_tasks,
            request.on_sample,
            t0,
            gvisor=self.runtime == "runsc",
        )
        monitor = asyncio.create_task(sampler.run())
        guard = asyncio.create_task(watch.guard())
        stream: ExecStream | SupervisedCommand | None = None
        tasks: list[asyncio.Task[object]] = []
        sweep: Sweep | None = None
        refusals: list[str] = []  # what the runtime wrote into stdout when it could not start
        ended_by, code, failure, escaped = EndedBy.SPAWN_ERROR, None, "", False
        session.runs.add(tag)
        try:
            stream = await session.exec(list(request.argv), env, WORKSPACE_MOUNT)
            pump = asyncio.create_task(_pump(stream, captures, t0, refusals))
            exited: asyncio.Task[int] = asyncio.create_task(stream.exited())
            tasks += [pump, exited]
            ended_by = await first_end(
                exited, limits.timeout_s, cancel, self._in_flight.shutdown, guard
            )
            wall = time.monotonic() - t0
            sweep = await session.sweep(tag)
            wait, deadline = RESWEEP_S, time.monotonic() + DRAIN_S
            while not await _settled(exited, wait) and time.monotonic() < deadline:
                sweep = await session.sweep(tag)  # Stop came before the command had started
                wait *= 2
            if not await _settled(exited, KILLED_SETTLE_S):  # the sweeps could not tell the
                escaped = True  # command's own process from another run's exec
                await session.halt(HALTED_FOR_ESCAPEE)
                await _settled(exited, KILLED_SETTLE_S)
                warnings += (_COMMAND_ESCAPED,)
            code = exited.result() if exited.done() else None
            # The rest of the same DRAIN_S (after a halt, the stream closes with the container).
            left = max(KILLED_SETTLE_S if escaped else 0.0, deadline - time.monotonic())
            if not await _settled(pump, left):
                warnings += (_OUTPUT_LEFT_OPEN,)
        except (DockerException, OSError) as error:
            wall = time.monotonic() - t0
            failure = f"the engine failed during the run: {error}"
            with contextlib.suppress(DockerException, OSError):
                if not await session.running():
                    failure = CONTAINER_GONE
        finally:
            if sweep is None and stream is not None:  # run() was cancelled, or the engine failed
                with contextlib.suppress(DockerException, OSError):
                    sweep = await session.sweep(tag)
            session.runs.discard(tag)
            if stream is not None:
                await stream.close()
            for task in (*tasks, monitor, guard):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, DockerException, OSError):
                    await task
        after = session.cgroup.counters() if session.cgroup else None
        if not failure and not escaped:  # an exec ends with 137 when its container is killed
            oom = before is not None and after is not None and after.oom_kills > before.oom_kills
            killed = ended_by is EndedBy.EXIT and code == 128 + signal.SIGKILL and not oom
            with contextlib.suppress(DockerException, OSError):
                running = await session.running(KILLED_SETTLE_S if killed else 0.0)
                failure = "" if running else CONTAINER_GONE
        if self._files is not None:
            say = _in_loop(request.on_progress)
            warnings += await asyncio.to_thread(
                self._files.bring_back, WORKSPACE_MOUNT, run_dir, say
            )
        outputs = dict(zip(captures, await finish_logs(captures.values()), strict=True))
        stderr = captures[Stream.STDERR]
        end = ExecEnd(
            ended_by=ended_by,
            exit_code=code,
            before=before,
            after=after,
            output_text="\n".join(
                (stderr.head_text, stderr.tail_text, captures[Stream.STDOUT].tail_text, *refusals)
            ),
            background_killed=sweep.killed if sweep and ended_by is EndedBy.EXIT else 0,
            stderr_text="\n".join((stderr.head_text, stderr.tail_text)),
            cpu_seconds=sampler.cpu_seconds,
            limit_cause=guard.result() if ended_by is EndedBy.LIMIT else "",
        )
        status, cause = (
            (RunStatus.ERROR, failure)
            if failure
            else classify(end, self.posture.limits, request.argv[0], self.runtime)
        )
        with contextlib.suppress(DockerException, OSError):
            memory = sampler.peak_rss_bytes, self.posture.limits.memory_bytes
            if failure == CONTAINER_GONE and session.halted:
                cause = f"{CONTAINER_GONE}: {session.halted}"
            elif failure == CONTAINER_GONE and session.supervisor_tampered:
                cause = f"{CONTAINER_GONE}: {TAMPERED}"
            elif failure == CONTAINER_GONE and (how := await session.stopped_for_memory(*memory)):
                # gVisor charges its own kernel to the container: a memory bomb there can take
                # the whole sandbox down, which is still the memory limit at work.
                status = RunStatus.OOM_KILLED
                cause = f"memory limit {format_bytes(self.posture.limits.memory_bytes)} ({how})"
            elif failure == CONTAINER_GONE and session.supervisor_said:
                cause += f"; its supervisor said: {session.supervisor_said[-SHOWN_SAID_CHARS:]}"
        commands = sweep.commands if sweep else ()
        warnings += left_behind_warnings(end.background_killed, status, commands)
        warnings += exec_refusal_notes(refusals)
        exit_code, sig = split_exit(code)
        return RunResult(
            run_id=run_id,
            status=status,
            cause=cause,
            exit_code=exit_code,
            signal=sig,
            wall_seconds=wall,
            cpu_seconds=sampler.cpu_seconds,
            peak_rss_bytes=sampler.peak_rss_bytes,
            peak_processes=sampler.peak_processes,
            stdout=outputs[Stream.STDOUT],
            stderr=outputs[Stream.STDERR],
            card=self._card,
            warnings=warnings,
            leftover_processes=sweep.leftover if sweep else 0,
            samples=tuple(sampler.samples),
            run_dir=run_dir,
        )

    def _workspace_watch(self, spec: SessionSpec, session: DockerSession) -> WorkspaceWatch:
        """The watch of the workspace: the folder on this machine, or on a remote engine `du`
        in the container, whose copy the workspace is there."""
        limit = self.posture.limits.disk_bytes
        if self._files is None:
            return WorkspaceWatch.of_folder(spec.workspace, limit)
        api, container = session.api, session.container_id

        def measure(_: threading.Event) -> int | None:
            return used_bytes(api, container, WORKSPACE_MOUNT)

        # Its cost is the wait for the engine's work, not this machine's: a larger share of it.
        return WorkspaceWatch(measure, limit, share=0.5, clock=time.monotonic)

    def _stats(self) -> dict[str, object]:
        assert self._client is not None and self._session is not None
        stats: dict[str, object] = self._client.api.stats(
            self._session.container_id, stream=False, one_shot=True
        )
        return stats

    def _error(
        self, run_id: str, run_dir: Path, cause: str, warnings: tuple[PostureWarning, ...]
    ) -> RunResult:
        return RunResult.not_run(run_id, run_dir, cause, self._card, warnings)


async def _pump(
    stream: ExecStream | SupervisedCommand,
    captures: dict[Stream, StreamCapture],
    t0: float,
    refusals: list[str],
) -> None:
    """Feed the command's output to the captures; the runtime's refusal to start an exec's
    command, which opens its stdout (`outcome`), goes to `refusals` instead."""
    first = True
    async for kind, data in stream.chunks():
        if first and kind is Stream.STDOUT:
            first = False
            data, refusal = split_exec_refusal(data)
            refusals += [refusal] if refusal else []
        if data:
            captures[kind].feed(data, time.monotonic() - t0)


async def _settled(task: "asyncio.Task[Any]", seconds: float) -> bool:
    """Whether `task` is done, waiting up to `seconds` for it (never cancelling it).
    `asyncio.timeout`, not `wait_for`: see `ExecStream.exited`."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await asyncio.shield(task)
    return task.done()


def _in_loop(say: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """`say`, called from a worker thread but run in this event loop's thread."""
    if say is None:
        return None
    loop = asyncio.get_running_loop()

    def in_loop(text: str) -> None:
        loop.call_soon_threadsafe(say, text)

    return in_loop
