"""The `hardened` posture: a local process with rlimits, a scrubbed environment, a private HOME and
TMPDIR, another uid when the app is root, and the whole-tree kill.

`HardenedExecutor` prepares each run: it scrubs the environment (`environ`), picks the session's
throwaway uid and lends it the workspace when the app is root (else makes the app non-dumpable
and gives each run a user namespace of its own, where RLIMIT_NPROC counts the run's processes
only), makes the private HOME and TMPDIR, and execs the command through `limits_exec` (a perl
wrapper), which applies the rlimits and identity; it reads back from /proc what was applied into
the posture card, and afterwards copies HOME and TMPDIR into the run folder, gives the workspace
back and sweeps the uid's leftovers (`leftovers`). Design notes: docs/notes.md, "Hardened posture".
"""

import asyncio
import functools
import os
import resource
import secrets
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import psutil

from workbench.errors import ExecutorError
from workbench.executors.hardened import limits_exec
from workbench.executors.hardened.environ import scrub_env
from workbench.executors.hardened.leftovers import sweep
from workbench.executors.process.local import describe_user
from workbench.executors.process.outcome import format_bytes
from workbench.executors.process.ownership import (
    FolderLoan,
    SharedLoan,
    can_reach,
    unreachable,
)
from workbench.executors.process.readback import (
    PROC_LIMIT_ROWS,
    limit_checks,
    memory_problem,
    parse_limits,
    parse_status,
    proc_texts,
    requested_rlimits,
)
from workbench.executors.process.reaper import app_environment
from workbench.executors.process.runner import Launch
from workbench.executors.process.session import PreparedRun, RunContext, SubprocessExecutor
from workbench.executors.types import PostureCard, SessionSpec
from workbench.monitor.process import RUN_TAG_ENV
from workbench.postures.model import Limits, PostureWarning, Severity
from workbench.workspace.safe_walk import copy_plain, remove_tree

RUN_UID_BASE = 0x60000000
RUN_UID_SPAN = 1 << 28
# The card's row for an ordinary user's run: held when the run got a user namespace of its own.
OWN_USERNS_CHECK = "own user namespace (RLIMIT_NPROC counts the run's processes only)"
# Tried once per app: the app builds an executor, and so starts a session, for every run.
_own_user_namespace_problem = functools.cache(limits_exec.own_user_namespace_problem)


async def read_to_eof(fd: int) -> bytes:
    """Everything written to the pipe `fd` until its last writer closes it (closes `fd`)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    data = bytearray()

    class _Collect(asyncio.Protocol):
        def data_received(self, chunk: bytes) -> None:
            data.extend(chunk)

        def connection_lost(self, exc: Exception | None) -> None:
            if not done.done():
                done.set_result(None)

    transport, _ = await loop.connect_read_pipe(_Collect, os.fdopen(fd, "rb", buffering=0))
    try:
        await done
    finally:
        transport.close()
    return bytes(data)


def _own_tasks() -> int:
    """Processes and threads of this uid (RLIMIT_NPROC counts all of them)."""
    uid = os.getuid()
    count = 0
    for process in psutil.process_iter(["uids", "num_threads"]):
        uids, threads = process.info["uids"], process.info["num_threads"]
        if uids is not None and uids.real == uid:
            count += threads or 1
    return count


class HardenedRun(PreparedRun):
    """One hardened run: reads the wrapper's report, reads back /proc, gives folders back."""

    def __init__(
        self,
        launch: Launch,
        card: PostureCard,
        limits: Limits,
        rlimits: tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]],
        userns: str | None,
        status_pipe: tuple[int, int],
        run_uid: int | None,
        private: tuple[Path, Path] | None,
        workspace_loan: SharedLoan | None,
    ) -> None:
        super().__init__(launch, card, limits)
        self._wanted, self._requested = rlimits  # what the posture asks, what the wrapper asks
        # An ordinary user's run: "" when it asks for a user namespace of its own, else why it
        # does not (then its RLIMIT_NPROC counts all the user's processes); None for root's.
        self._userns = userns
        self._own_userns = False  # the wrapper made one and said so
        if userns:
            self._caution(
                f"No user namespace of the run's own ({userns}): RLIMIT_NPROC counts all your "
                "processes, raised by those running as the run started, so ones that end during "
                "the run give it more."
            )
        self._read_fd, self._write_fd = status_pipe
        self._run_uid = run_uid
        self._private = private  # (its folder, the run folder) when HOME/TMPDIR live apart
        self._workspace_loan = workspace_loan
        self._error = ""

    async def on_spawned(self, pid: int) -> None:
        """Wait for the wrapper to exec (its status pipe closes) and read back the limits."""
        self._close_write_end()
        read_fd, self._read_fd = self._read_fd, -1
        report = limits_exec.decode_report(await read_to_eof(read_fd))
        self._error = report.get("error", "")
        if self._error or "limits" not in report:  # not exec'd: failed, or killed before
            return
        namespace = report.get("userns_id", "")
        self._own_userns = report.get("userns") == "own" and namespace not in (
            "",
            limits_exec.app_user_namespace(),
        )
        if self._userns == "" and not self._own_userns:  # the session's check had passed
            self._caution(
                f"No user namespace of the run's own ({report.get('userns') or 'none made'}): "
                "its RLIMIT_NPROC counted all your processes, so it could start fewer."
            )
        limits_text, status_text = proc_texts(pid) or (report["limits"], report["status"])
        self.card = replace(self.card, checks=tuple(self._checks(limits_text, status_text)))

    def _caution(self, text: str) -> None:
        self.notes += (PostureWarning(Severity.CAUTION, text),)

    def _checks(self, limits_text: str, status_text: str) -> list[tuple[str, bool]]:
        assert self.limits is not None
        checks = limit_checks(self.limits, self._wanted, limits_text)
        checks += _lowered_checks(self._wanted, self._requested, limits_text, self._own_userns)
        status = parse_status(status_text)
        if self._run_uid is not None:
            uid = str(self._run_uid)
            checks.append((f"runs as uid {uid}", status.get("Uid", "").split()[:1] == [uid]))
        else:
            dumpable = limits_exec.prctl(limits_exec.PR_GET_DUMPABLE)
            checks.append(("app not dumpable (its environment is unreadable)", dumpable == 0))
            checks.append((OWN_USERNS_CHECK, self._own_userns))
        checks.append(
            ("no_new_privs (set-uid programs gain nothing)", status.get("NoNewPrivs") == "1")
        )
        checks.append((f"CPU share {self.limits.cpus:g} core(s) (needs a cgroup)", False))
        checks.append(("network off (the host's network stays reachable)", False))
        return checks

    def launch_error(self) -> str:
        return self._error

    def _close_write_end(self) -> None:
        if self._write_fd >= 0:
            os.close(self._write_fd)
            self._write_fd = -1

    async def close(self) -> None:
        """Close the pipe if it was never read, keep the private folders' plain files in the
        run folder and remove them, and give the workspace back (whatever happened)."""
        self._close_write_end()
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1
        try:
            if self._private is not None:
                await asyncio.to_thread(_keep_and_remove, *self._private)
        finally:
            if self._workspace_loan is not None and await self._workspace_loan.release():
                await self._sweep()

    async def _sweep(self) -> None:
        """Remove what the throwaway uid left outside the workspace (no run of it is left)."""
        assert self._run_uid is not None
        if removed := await asyncio.to_thread(sweep, self._run_uid):
            self.notes += (
                PostureWarning(
                    Severity.INFO,
                    f"Removed what the command left outside the workspace: {', '.join(removed)}.",
                ),
            )


class HardenedExecutor(SubprocessExecutor):
    """Runs commands as limited local processes (see the module docstring)."""

    _run_uid: int | None = None
    _workspace_loan: SharedLoan | None = None
    _userns_problem = ""  # why an ordinary user's runs get no user namespace of their own

    async def start(self, session: SessionSpec) -> None:
        """Start the session: pick its throwaway uid when root (a random uid above 0x60000000
        with no passwd entry, so commands can neither read the app's /proc/PID/environ nor share
        RLIMIT_NPROC with other sessions), else make the app non-dumpable so the command cannot
        read its environment through /proc (no core dumps or debugger attach without root)."""
        if not sys.platform.startswith("linux"):
            raise ExecutorError("The hardened posture needs Linux (rlimits, prctl, /proc).")
        await super().start(session)
        if os.geteuid() == 0:
            uid = self._run_uid = RUN_UID_BASE + secrets.randbelow(RUN_UID_SPAN)
            self._workspace_loan = SharedLoan(FolderLoan(session.workspace, uid, uid))
        else:
            limits_exec.prctl(limits_exec.PR_SET_DUMPABLE, 0)
            self._userns_problem = await asyncio.to_thread(_own_user_namespace_problem)

    async def _prepare(self, context: RunContext) -> PreparedRun | str:
        session = context.session
        run_uid = self._run_uid
        if problem := memory_problem(self.posture.limits):
            return problem
        if run_uid is not None and (problem := unreachable(session, run_uid, "hardened")):
            return problem
        folder = context.run_dir  # of HOME and TMPDIR
        if run_uid is not None:  # out of the run folder, where links could be planted
            folder = Path(tempfile.mkdtemp(prefix=f"workbench-{context.run_id}-"))
        home, tmp = folder / "home", folder / "tmp"
        home.mkdir(mode=0o700)
        tmp.mkdir(mode=0o700)
        if run_uid is not None and (
            problem := await _lend_private(folder, run_uid, self._workspace_loan)
        ):
            return problem
        fixed = context.command_env(context.request.env) | {"HOME": str(home), "TMPDIR": str(tmp)}
        env = scrub_env(self.posture, app_environment(), context.request.env, fixed)
        limits = self.posture.limits
        # An ordinary user's run gets a user namespace of its own, where RLIMIT_NPROC counts its
        # processes only; without one, the limit is raised by what the user runs already.
        userns = None if run_uid is not None else self._userns_problem
        wanted = requested_rlimits(limits, _own_tasks() if userns else 0)
        requested = wanted if run_uid is not None else _within_hard_limits(wanted)
        read_fd, write_fd = os.pipe()
        wrapper, wrapper_env = limits_exec.wrapper_launch(
            requested,
            run_uid,
            write_fd,
            [*env.kept, RUN_TAG_ENV],
            env.env,
            own_userns=userns == "",
        )
        launch = Launch(
            (*wrapper, *context.request.argv),
            wrapper_env,
            session.workspace,
            pass_fds=(write_fd,),
            own_uid=run_uid,
        )
        card = PostureCard(
            posture=self.posture,
            env_kept=env.kept,
            env_dropped=env.dropped,
            run_as=_run_as(run_uid, home, tmp),
        )
        return HardenedRun(
            launch,
            card,
            limits,
            (wanted, requested),
            userns,
            (read_fd, write_fd),
            run_uid,
            None if run_uid is None else (folder, context.run_dir),
            self._workspace_loan,
        )


def _within_hard_limits(wanted: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """`wanted` with no limit above the app's own hard one, which the wrapper inherits and only
    root may raise (the kernel refuses it otherwise). A lower limit is a stricter one."""
    within = {}
    for name, (soft, hard) in wanted.items():
        ceiling = resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))[1]
        if ceiling != resource.RLIM_INFINITY and hard > ceiling:
            soft, hard = min(soft, ceiling), ceiling
        within[name] = (soft, hard)
    return within


def _lowered_checks(
    wanted: dict[str, tuple[int, int]],
    requested: dict[str, tuple[int, int]],
    limits_text: str,
    own_userns: bool,
) -> list[tuple[str, bool]]:
    """A card row per limit lowered below the posture's by `_within_hard_limits`."""
    applied = parse_limits(limits_text)
    return [
        (
            f"RLIMIT_{name} lowered to {_amount(name, soft, own_userns)}: your hard limit is "
            "below the posture's, and only root can raise it",
            applied.get(PROC_LIMIT_ROWS[name], (None, None))[0] == soft,
        )
        for name, (soft, _) in requested.items()
        if soft != wanted[name][0]
    ]


def _amount(name: str, value: int, own_userns: bool) -> str:
    if name in ("AS", "FSIZE"):
        return format_bytes(value)
    if name == "CPU":
        return f"{value} s"
    if name == "NPROC" and not own_userns:
        return f"{value} (all your processes count)"
    return str(value)


async def _lend_private(private: Path, run_uid: int, workspace_loan: SharedLoan | None) -> str:
    """Open `private` (root's) to `run_uid` for passing only, give it the HOME and TMPDIR
    inside, and join the workspace loan; a sentence when that fails (nothing is left lent)."""
    try:
        await asyncio.to_thread(_open_private, private, run_uid)
        if workspace_loan is not None:
            await workspace_loan.acquire()
    except OSError as error:
        await asyncio.to_thread(remove_tree, private)
        return f"cannot lend the workspace and private folders to uid {run_uid}: {error}"
    return ""


def _open_private(private: Path, run_uid: int) -> None:
    """Let `run_uid` pass through `private` and own the HOME and TMPDIR inside it."""
    private.chmod(0o711)  # the command may pass, never add, rename or list entries
    if not can_reach(private, run_uid, run_uid):
        raise OSError(f"{private.parent} is closed to other users (set TMPDIR elsewhere)")
    for folder in (private / "home", private / "tmp"):
        os.chown(folder, run_uid, run_uid)


def _keep_and_remove(private: Path, run_dir: Path) -> None:
    """Copy the plain files of the private HOME and TMPDIR into the run folder (never a link
    the command planted), then remove the private folder whatever the command did to it."""
    for name in ("home", "tmp"):
        copy_plain(private / name, run_dir / name)
    remove_tree(private)


def _run_as(run_uid: int | None, home: Path, tmp: Path) -> str:
    where = f"HOME {home}, TMPDIR {tmp}" + (
        ""
        if run_uid is None
        else " (their folders and regular files are copied into the run "
        "folder afterwards, links and special files are not)"
    )
    if run_uid is None:
        return (
            f"{describe_user(os.getuid())}: you (the workbench is not root, so it cannot "
            f"switch users; the app is non-dumpable so the command cannot read its "
            f"environment). {where}"
        )
    return (
        f"uid {run_uid}, gid {run_uid}: a throwaway user for this session (the workbench runs "
        f"as root). The workspace is chowned to it while runs are in flight and given back "
        f"afterwards (files with several hard links stay as they were). {where}"
    )
