"""The `quickjs` posture: a JavaScript file run by QuickJS in a separate, limited worker.

The engine is memory-unsafe native code, so it never runs in the app's process. Each run
spawns one worker (`workbench.jsworker.worker`) through the shared process machinery
(`run_process`: new session, output capture with caps and spooled logs, 10 Hz sampling,
wall-clock timeout, Stop, whole-tree kill and its verification). The worker's stdout and
stderr carry only the script's console output; control messages arrive on a separate pipe the
script cannot reach (see `workbench.jsworker.protocol`), so printed text can never end or fake
a run.

Controls, outermost first: the wall-clock kill (always), rlimits the worker sets on itself
before the engine is loaded (address space = engine memory limit + headroom, CPU time, no
new processes, 16 descriptors, file size, no core dumps), then the engine's own memory and
stack limits. The engine's CPU time limit is not used: it refuses host calls (why, and the
measurements, are in the worker). Outcomes: the script finishing is `ok`; an uncaught
JS error or a stack overflow is `failed` with the message; the engine's memory limit is
`limit_exceeded` ("QuickJS memory limit 64 MiB"); RLIMIT_CPU is `limit_exceeded`; the worker
dying on any other signal (an engine crash) is `error`; the timeout is `timed_out`.

Identity: when the workbench runs as root, the worker runs as the session's throwaway uid,
chosen as the hardened posture chooses it; the workspace is lent to it (`SharedLoan`) while
runs are in flight. The worker opens the workspace and the script first, then drops to that
uid (no supplementary groups) before the rlimits, `ready` and the engine; the card reads the
uid back from /proc. As a user, the worker runs as that user.

COMMAND is `SCRIPT.js [ARG...]`; `scriptArgs` holds the ARGs. SCRIPT is `$SKILL_DIR/...` for
the skill folder, a relative path (looked up in the workspace, then in the skill folder, so a
skill's own `scripts/x.js` command works), or an absolute path inside one of the two; anything
else is refused before a worker starts.

`fetch` exists only when the posture lists `fetch_hosts`; the executor sets its caps (below)
and the worker enforces them (`workbench.jsworker.fetch`). Every call the worker makes or
refuses comes back as a `host_call` message and lands in `RunResult.host_calls`, even when the
run is later killed; the card lists the allowed hosts and the caps.

Start-up, and why there is no warm worker (`tests/perf/quickjs_startup.py`, medians of 30-40 on
a shared 2-CPU machine, three sessions): the worker used to start as a module of this package,
whose `__init__` then imported the registry, asyncio and psutil: 75 of its 89 ms from spawn to
`ready`. It now lives in `workbench.jsworker`, imports the stdlib only, and loads the engine
module `_quickjs` without the `quickjs` wrapper's thread-pool imports: spawn to `result` is
29-39 ms, of which a bare `python -I` is 11-16 ms and json (with re and enum) about 10. A warm
worker (pre-spawned, one run each) would pay 0.5-0.7 ms per run, cutting a whole
`QuickJsExecutor.run()` from 38-47 ms to about 8. It is not built: a `workbench run` takes
0.3-1 s end to end here, so the 30 ms are not something a person notices, and `run_process`
starts the wall clock, output capture, sampling and the run's kill tag at spawn, so adopting a
pre-spawned worker means changing the shared runner of every local posture.
"""

import asyncio
import contextlib
import json
import os
import secrets
import signal
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from workbench.executors.hardened import RUN_UID_BASE, RUN_UID_SPAN, _proc_texts
from workbench.executors.local import describe_user
from workbench.executors.outcome import classify, format_bytes
from workbench.executors.ownership import FolderLoan, SharedLoan
from workbench.executors.readback import PROC_LIMIT_ROWS, parse_limits, parse_status
from workbench.executors.runner import EndedBy, Launch, ProcessOutcome
from workbench.executors.subprocess_base import PreparedRun, RunContext, SubprocessExecutor
from workbench.executors.types import HostCall, PostureCard, RunResult, RunStatus, SessionSpec
from workbench.interpreter import child_argv
from workbench.jsworker.protocol import MessageDecoder, ProtocolError
from workbench.postures import MIB, Limits, PostureWarning

WORKER_MODULE = "workbench.jsworker.worker"
STACK_LIMIT_BYTES = 1 * MIB
ADDRESS_SPACE_HEADROOM = 256 * MIB  # the interpreter, its imports and fs buffers
OPEN_FILES = 16
FETCH_TIMEOUT_S = 10.0  # per call, cut to what is left of the run
FETCH_MAX_BYTES = 4 * MIB  # per response body (and per request body)
FETCH_MAX_CALLS = 100  # per run
SKILL_PREFIXES = ("$SKILL_DIR/", "${SKILL_DIR}/")


def resolve_entry_script(session: SessionSpec, argv0: str) -> tuple[Path, str] | str:
    """The script's real path and display name, or a sentence saying why it is refused."""
    roots = [(session.skill_dir.resolve(), "$SKILL_DIR/"), (session.workspace.resolve(), "")]
    prefix = next((p for p in SKILL_PREFIXES if argv0.startswith(p)), None)
    if prefix is not None:
        candidates = [(roots[0][0] / argv0[len(prefix) :], roots[0])]
    elif Path(argv0).is_absolute():
        candidates = [(Path(argv0), root) for root in roots]
    else:  # relative: in the workspace if there, else the skill folder (a skill's own commands)
        candidates = [(root / argv0, (root, label)) for root, label in reversed(roots)]
    if not argv0.endswith(".js"):
        return f"the quickjs posture runs JavaScript files only, and {argv0!r} is not a .js file"
    present = [(c.resolve(), root, label) for c, (root, label) in candidates if _present(c)]
    for real, root, label in present:
        if real == present[0][0] and root in real.parents and real.is_file():
            return real, label + real.relative_to(root).as_posix()
    if not present and not Path(argv0).is_absolute():
        return f"script not found: {argv0}"
    return (
        f"script {argv0!r} is refused: it must be a .js file inside the workspace or the "
        "skill folder ($SKILL_DIR/...)"
    )


def _present(path: Path) -> bool:
    return path.is_symlink() or path.exists()


def worker_rlimits(limits: Limits) -> dict[str, tuple[int, int]]:
    """The rlimits the worker applies to itself, as {name: (soft, hard)}."""
    address_space = limits.memory_bytes + ADDRESS_SPACE_HEADROOM
    return {
        "AS": (address_space, address_space),
        "CPU": (limits.cpu_seconds, limits.cpu_seconds + 1),
        "NPROC": (0, 0),
        "NOFILE": (OPEN_FILES, OPEN_FILES),
        "FSIZE": (limits.file_size_bytes, limits.file_size_bytes),
        "CORE": (0, 0),
    }


def fetch_checks(hosts: tuple[str, ...]) -> list[tuple[str, bool]]:
    """The card's lines for `fetch`: off, or each allowed host and the caps."""
    if not hosts:
        return [("fetch off (no network API)", True)]
    caps = (
        f"fetch: http/https only, no redirects followed, {FETCH_TIMEOUT_S:g} s per call, "
        f"{format_bytes(FETCH_MAX_BYTES)} per response, {FETCH_MAX_CALLS} calls per run"
    )
    return [(f"fetch allowed for {host}", True) for host in hosts] + [(caps, True)]


def limit_checks(proc_limits: str, wanted: dict[str, tuple[int, int]]) -> list[tuple[str, bool]]:
    """Pair each wanted rlimit with whether `/proc/PID/limits` shows it applied."""
    rows = parse_limits(proc_limits)
    checks = []
    for name, (soft, _) in wanted.items():
        label = f"RLIMIT_{name} " + (format_bytes(soft) if name in ("AS", "FSIZE") else str(soft))
        held = rows.get(PROC_LIMIT_ROWS[name], (None,))[0] == soft
        checks.append((label + (" s" if name == "CPU" else ""), held))
    return checks


def uid_check(proc_status: str, uid: int) -> tuple[str, bool]:
    """The card's line for the throwaway uid, held when every uid of the worker is it."""
    uids = parse_status(proc_status).get("Uid", "").split()
    return (f"runs as uid {uid}", len(uids) == 4 and set(uids) == {str(uid)})


class _ControlReader(asyncio.Protocol):
    """Collects the worker's control messages until its pipe closes."""

    def __init__(self) -> None:
        self.decoder = MessageDecoder()
        self.messages: list[dict[str, Any]] = []
        self.error = ""
        loop = asyncio.get_running_loop()
        self.ready: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()

    def data_received(self, data: bytes) -> None:
        try:
            self.messages += self.decoder.feed(data)
        except ProtocolError as error:
            self.error = str(error)
        if not self.ready.done() and self.messages:
            self.ready.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        for future in (self.ready, self.closed):
            if not future.done():
                future.set_result(None)


class _WorkerRun(PreparedRun):
    """One worker run: owns the control pipe and turns the worker's report into a verdict."""

    def __init__(
        self,
        launch: Launch,
        card: PostureCard,
        limits: Limits,
        read_fd: int,
        run_uid: int | None,
        workspace_loan: SharedLoan | None,
    ) -> None:
        super().__init__(launch, card, limits)
        self.read_fd = read_fd
        self.run_uid = run_uid
        self.workspace_loan = workspace_loan
        self.write_fd = launch.pass_fds[0]
        self.reader = _ControlReader()
        self.transport: asyncio.ReadTransport | None = None

    async def on_spawned(self, pid: int) -> None:
        """Read the applied rlimits and uid back once the worker is ready; read to the end."""
        os.close(self.write_fd)
        self.write_fd = -1
        pipe = os.fdopen(self.read_fd, "rb", buffering=0)
        self.read_fd = -1
        loop = asyncio.get_running_loop()
        self.transport, _ = await loop.connect_read_pipe(lambda: self.reader, pipe)
        await self.reader.ready
        if self.reader.messages:  # from /proc of the worker, or its own copy if it is gone
            ready = self.reader.messages[0]
            texts = _proc_texts(pid) or (str(ready.get("limits")), str(ready.get("status")))
            checks = limit_checks(texts[0], worker_rlimits(self.card.posture.limits))
            if self.run_uid is not None:
                checks.append(uid_check(texts[1], self.run_uid))
            self.card = replace(self.card, checks=tuple(checks) + self.card.checks)
        await self.reader.closed

    async def close(self) -> None:
        """Close whatever end of the control pipe is still open here; give the workspace back."""
        if self.transport is not None:
            self.transport.close()
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                os.close(fd)
        if self.workspace_loan is not None:
            await self.workspace_loan.release()

    def result_message(self) -> dict[str, Any] | None:
        """The worker's `result` message, if it sent one."""
        return next((m for m in self.reader.messages if m.get("type") == "result"), None)

    def host_calls(self) -> tuple[HostCall, ...]:
        """The calls the worker logged (fetch), in order."""
        calls = []
        for message in self.reader.messages:
            if message.get("type") != "host_call":
                continue
            with contextlib.suppress(KeyError, TypeError, ValueError):
                calls.append(
                    HostCall(
                        api=str(message["api"]),
                        target=str(message["target"]),
                        allowed=message["allowed"] is True,
                        outcome=str(message["outcome"]),
                        t=float(message["t"]),
                        duration_s=float(message["duration_s"]),
                    )
                )
        return tuple(calls)


class QuickJsExecutor(SubprocessExecutor):
    """Runs a JavaScript file in a fresh QuickJS context in a fresh, limited worker."""

    _run_uid: int | None = None
    _workspace_loan: SharedLoan | None = None

    async def start(self, session: SessionSpec) -> None:
        """Start the session; as root, pick its throwaway uid and lend it the workspace."""
        await super().start(session)
        if os.geteuid() == 0:
            uid = self._run_uid = RUN_UID_BASE + secrets.randbelow(RUN_UID_SPAN)
            self._workspace_loan = SharedLoan(FolderLoan(session.workspace, uid, uid))

    async def _prepare(self, context: RunContext) -> PreparedRun | str:
        script = resolve_entry_script(context.session, context.request.argv[0])
        if isinstance(script, str):
            return script
        path, display = script
        uid, loan = self._run_uid, self._workspace_loan
        if loan is not None:
            try:
                await loan.acquire()
            except OSError as error:
                return f"cannot lend the workspace to uid {uid}: {error}"
        limits = self.posture.limits
        read_fd, write_fd = os.pipe()
        started_at = time.time()
        fetch = None
        if self.posture.fetch_hosts:
            fetch = {
                "hosts": list(self.posture.fetch_hosts),
                "timeout_s": FETCH_TIMEOUT_S,
                "max_bytes": FETCH_MAX_BYTES,
                "max_calls": FETCH_MAX_CALLS,
            }
        spec = {
            "control_fd": write_fd,
            "run_as": uid,
            "rlimits": worker_rlimits(limits),
            "run": {
                "script_path": str(path),
                "display_name": display,
                "args": list(context.request.argv[1:]),
                "workspace": str(context.session.workspace),
                "memory_limit": limits.memory_bytes,
                "stack_limit": STACK_LIMIT_BYTES,
                "started_at": started_at,
                "deadline": started_at + limits.timeout_s,
                "fetch": fetch,
            },
        }
        # -I: the working folder is the workspace, so it must never be on the worker's path.
        argv = (*child_argv(WORKER_MODULE), json.dumps(spec))
        env = context.command_env()
        launch = Launch(argv, env, context.session.workspace, pass_fds=(write_fd,))
        checks = [
            (f"QuickJS memory limit {format_bytes(limits.memory_bytes)}", True),
            (f"QuickJS stack limit {format_bytes(STACK_LIMIT_BYTES)}", True),
            ("QuickJS in-VM time limit (off: it refuses host calls)", False),
            (f"wall-clock kill after {limits.timeout_s:g} s", True),
        ]
        checks += fetch_checks(self.posture.fetch_hosts)
        card = PostureCard(
            self.posture,
            checks=tuple(checks),
            env_kept=tuple(sorted(env)),
            env_dropped=tuple(sorted(context.request.env)),
            run_as=_run_as(uid),
        )
        return _WorkerRun(launch, card, limits, read_fd, uid, loan)

    def _result(
        self,
        context: RunContext,
        prepared: PreparedRun,
        outcome: ProcessOutcome,
        warnings: tuple[PostureWarning, ...],
    ) -> RunResult:
        result = super()._result(context, prepared, outcome, warnings)
        if not isinstance(prepared, _WorkerRun):
            return result
        report = prepared.result_message()
        result = replace(result, host_calls=prepared.host_calls())
        if prepared.reader.error:
            status = RunStatus.ERROR
            cause = f"bad message from the QuickJS worker: {prepared.reader.error}"
        elif report is not None:
            status, cause = self._reported(report)
            result = replace(
                result,
                exit_code=0 if status is RunStatus.OK else 1,
                cpu_seconds=max(result.cpu_seconds, float(report.get("cpu_seconds", 0.0))),
                peak_rss_bytes=max(result.peak_rss_bytes, int(report.get("peak_rss_bytes", 0))),
            )
        elif outcome.ended_by is EndedBy.EXIT:
            status, cause = self._died(outcome)
        else:
            status, cause = classify(outcome, self.posture.limits.timeout_s, None)
        return replace(result, status=status, cause=cause)

    def _reported(self, report: dict[str, Any]) -> tuple[RunStatus, str]:
        """Status and cause from the worker's `result` message."""
        error = str(report.get("error", ""))
        outcome = report.get("outcome")
        if outcome == "ok":
            return RunStatus.OK, "the script finished"
        if outcome == "js_error":
            return RunStatus.FAILED, f"uncaught JavaScript error: {error}"
        if outcome == "stack_overflow":
            limit = format_bytes(STACK_LIMIT_BYTES)
            return RunStatus.FAILED, f"JavaScript stack overflow (QuickJS stack limit {limit})"
        if outcome == "memory":
            limit = format_bytes(self.posture.limits.memory_bytes)
            return RunStatus.LIMIT_EXCEEDED, f"QuickJS memory limit {limit}"
        if outcome == "address_space":
            limit = format_bytes(worker_rlimits(self.posture.limits)["AS"][0])
            return RunStatus.LIMIT_EXCEEDED, f"worker address space {limit} (RLIMIT_AS)"
        return RunStatus.ERROR, error or f"unknown result from the QuickJS worker: {outcome!r}"

    def _died(self, outcome: ProcessOutcome) -> tuple[RunStatus, str]:
        """Status and cause when the worker ended without a result."""
        rc = outcome.returncode
        if rc is None or rc >= 0:
            return RunStatus.ERROR, f"the QuickJS worker exited with code {rc} without a result"
        cpu = self.posture.limits.cpu_seconds
        cpu_spent = outcome.cpu_seconds >= cpu - 0.5
        if -rc == signal.SIGXCPU or (-rc == signal.SIGKILL and cpu_spent):
            return RunStatus.LIMIT_EXCEEDED, f"RLIMIT_CPU {cpu} s"
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return RunStatus.ERROR, (
            f"the QuickJS worker crashed ({name}): the engine failed on this script; "
            "the app is unaffected"
        )


def _run_as(uid: int | None) -> str:
    if uid is None:
        user = describe_user(os.getuid())
        return f"{user}: you (the workbench is not root, so it cannot switch users)"
    return (
        f"uid {uid}, gid {uid}: a throwaway user for this session (the workbench runs as root); "
        "the worker switches to it before loading the engine, after opening the workspace and "
        "the script. The workspace is chowned to it while runs are in flight and given back "
        "afterwards."
    )
