"""The `quickjs` posture: a JavaScript file run by QuickJS in a separate, limited worker.

`QuickJsExecutor` resolves the run's entry script (`resolve_entry_script`: `SCRIPT.js [ARG...]`,
inside the workspace or the skill folder), spawns a worker
(`workbench.executors.quickjs.worker.main`) or adopts a warm one from a `QuickJsWorkerPool`, and
runs it through the shared process machinery. It owns the run's controls (wall-clock kill, the
worker's rlimits, the engine's memory and stack limits, the `fetch` caps when the posture lists
`fetch_hosts`), the worker's identity (the session's throwaway uid when the app runs as root), and
the verdict: the worker's `result` message or its death become the run's status and cause, and its
`host_call` messages `RunResult.host_calls`. Design notes and measurements: docs/notes.md, "QuickJS
worker".
"""

import json
import os
import secrets
import signal
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.executors.hardened.executor import RUN_UID_BASE, RUN_UID_SPAN
from workbench.executors.process.local import describe_user
from workbench.executors.process.outcome import classify, cpu_limit_reached, format_bytes
from workbench.executors.process.ownership import FolderLoan, SharedLoan
from workbench.executors.process.runner import EndedBy, Launch, ProcessOutcome
from workbench.executors.process.session import PreparedRun, RunContext, SubprocessExecutor
from workbench.executors.quickjs.run import (
    FETCH_MAX_BYTES,
    FETCH_MAX_CALLS,
    FETCH_TIMEOUT_S,
    STACK_LIMIT_BYTES,
    WarmRun,
    WorkerRun,
    fetch_checks,
    worker_rlimits,
)
from workbench.executors.types import PostureCard, RunResult, RunStatus, SessionSpec
from workbench.platform.interpreter import child_call_argv
from workbench.postures.model import Posture, PostureWarning

if TYPE_CHECKING:
    from workbench.executors.warm.quickjs import QuickJsWorkerPool

WORKER_MODULE = "workbench.executors.quickjs.worker.main"
ENGINE_MODULE = "_quickjs"  # the binding's engine, which the worker imports itself
SKILL_PREFIXES = ("$SKILL_DIR/", "${SKILL_DIR}/")


def worker_argv() -> tuple[str, ...]:
    """The argv prefix of a fresh worker process: `main` of `WORKER_MODULE`, with the engine's
    folder on its path."""
    return child_call_argv(WORKER_MODULE, "main", needs=(ENGINE_MODULE,))


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


class QuickJsExecutor(SubprocessExecutor):
    """Runs a JavaScript file in a fresh QuickJS context in a fresh (or warm), limited worker."""

    _run_uid: int | None = None
    _workspace_loan: SharedLoan | None = None
    _pool_uid = False  # the uid is the pool's (its workers are reused), not this session's

    def __init__(self, posture: Posture, pool: "QuickJsWorkerPool | None" = None) -> None:
        super().__init__(posture)
        self._pool = pool

    async def start(self, session: SessionSpec) -> None:
        """Start the session; as root, pick its throwaway uid and lend it the workspace."""
        await super().start(session)
        identity = None if self._pool is None else self._pool.identity(session)
        if identity is not None:  # a reused worker keeps the pool's uid
            self._run_uid, self._workspace_loan = identity.uid, identity.loan
            self._pool_uid = True
        elif os.geteuid() == 0:
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
        fetch = None
        if self.posture.fetch_hosts:
            fetch = {
                "hosts": list(self.posture.fetch_hosts),
                "timeout_s": FETCH_TIMEOUT_S,
                "max_bytes": FETCH_MAX_BYTES,
                "max_calls": FETCH_MAX_CALLS,
            }
        spec: dict[str, Any] = {
            "run_as": uid,
            "rlimits": worker_rlimits(limits),
            "run": {
                "script_path": str(path),
                "display_name": display,
                "args": list(context.request.argv[1:]),
                "workspace": str(context.session.workspace),
                "memory_limit": limits.memory_bytes,
                "stack_limit": STACK_LIMIT_BYTES,
                "deadline": time.time() + limits.timeout_s,
                "fetch": fetch,
            },
        }
        env = context.command_env({})
        checks = [
            (f"QuickJS memory limit {format_bytes(limits.memory_bytes)}", True),
            (f"QuickJS stack limit {format_bytes(STACK_LIMIT_BYTES)}", True),
            ("QuickJS in-VM time limit (off: it refuses host calls)", False),
            (f"wall-clock kill after {limits.timeout_s:g} s", True),
        ]
        checks += fetch_checks(self.posture.fetch_hosts)
        pool = self._pool
        worker = None if pool is None else pool.take(self.posture)
        started = ""
        if pool is not None:
            started = worker.describe() if worker else "cold start: no warm worker was ready"
        card = PostureCard(
            self.posture,
            checks=tuple(checks),
            env_kept=() if worker else tuple(sorted(env)),  # a warm worker's is empty
            env_dropped=tuple(sorted(context.request.env)),
            run_as=_run_as(uid, worker is not None, identity=self._pool_uid),
            started=started,
        )
        if pool is not None and worker is not None:
            try:
                fds = _open_for_worker(context.session.workspace, path)
            except OSError as error:
                pool.settle(worker, kept=False)
                if loan is not None:
                    await loan.release()
                return f"cannot open {display} for the worker: {error.strerror or error}"
            return WarmRun(card, limits, worker, spec, fds, uid, loan, pool.settle)
        read_fd, write_fd = os.pipe()
        # -I: the working folder is the workspace, so it must never be on the worker's path.
        argv = (*worker_argv(), json.dumps({"control_fd": write_fd, **spec}))
        launch = Launch(argv, env, context.session.workspace, pass_fds=(write_fd,), alone=True)
        return WorkerRun(launch, card, limits, read_fd, uid, loan)

    def _result(
        self,
        context: RunContext,
        prepared: PreparedRun,
        outcome: ProcessOutcome,
        warnings: tuple[PostureWarning, ...],
    ) -> RunResult:
        result = super()._result(context, prepared, outcome, warnings)
        if not isinstance(prepared, WorkerRun):
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
            memory_high = any(m.get("type") == "memory_high" for m in prepared.reader.messages)
            status, cause = self._died(outcome, memory_high)
        else:
            status, cause = classify(outcome, self.posture.limits.timeout_s, None)
        return replace(result, status=status, cause=cause)

    def _reported(self, report: dict[str, Any]) -> tuple[RunStatus, str]:
        """Status and cause from the worker's `result` message."""
        error = str(report.get("error", ""))
        outcome = report.get("outcome")
        if outcome == "ok":
            return RunStatus.OK, "the script ran to its end"
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

    def _died(self, outcome: ProcessOutcome, memory_high: bool) -> tuple[RunStatus, str]:
        """Status and cause when the worker ended without a result; `memory_high`: the
        engine's heap had neared its limit (the engine may crash when it runs out)."""
        rc = outcome.returncode
        if rc is None or rc >= 0:
            return RunStatus.ERROR, f"the QuickJS worker exited with code {rc} without a result"
        cpu = self.posture.limits.cpu_seconds
        cpu_spent = cpu_limit_reached(outcome, cpu)
        if -rc == signal.SIGXCPU or (-rc == signal.SIGKILL and cpu_spent):
            return RunStatus.LIMIT_EXCEEDED, f"RLIMIT_CPU {cpu} s"
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        if memory_high:
            limit = format_bytes(self.posture.limits.memory_bytes)
            return RunStatus.LIMIT_EXCEEDED, (
                f"QuickJS memory limit {limit} (the engine crashed with {name} at the limit)"
            )
        return RunStatus.ERROR, (
            f"the QuickJS worker crashed ({name}): the engine failed on this script; "
            "the app is unaffected"
        )


def _open_for_worker(workspace: Path, script: Path) -> tuple[int, int]:
    """The workspace folder and the script, opened for a warm worker as a cold one opens them."""
    folder = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO cannot block
        return folder, os.open(script, flags)
    except OSError:
        os.close(folder)
        raise


def _run_as(uid: int | None, warm: bool, identity: bool) -> str:
    """The card's `run_as`: who the worker ran as, and how it got there."""
    if uid is None:
        user = describe_user(os.getuid())
        return f"{user}: you (the workbench is not root, so it cannot switch users)"
    whose = "of the warm pool, kept by its reused workers" if identity else "for this session"
    how = (
        "the warm worker loaded the engine before the run, received the workspace and the "
        "script as descriptors the app opened, and switched to it before anything of the run"
        if warm
        else "the worker switches to it before loading the engine, after opening the workspace "
        "and the script"
    )
    return (
        f"uid {uid}, gid {uid}: a throwaway user {whose} (the workbench runs as root); {how}. "
        "The workspace is chowned to it while runs are in flight and given back afterwards."
    )
