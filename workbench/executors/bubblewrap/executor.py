"""The `bubblewrap` posture's executor: each command in a fresh bwrap sandbox, read back.

A run spawns `bwrap` (see `sandbox.py`) with the seccomp filter on a pipe (`seccomp.py`) and the
loader as its command (`loader.py`), which sets the limits and Landlock and starts the command
as the sandbox's PID 1. When the workbench runs as root, bwrap is started as a throwaway uid
picked per session (the switch is done by the spawn itself, no wrapper), so the sandbox's user
namespace is that uid's and the workspace is lent to it while runs are in flight, as for
`hardened`. The run is `contained`: the PID namespace keeps every process the command starts
inside bwrap's tree, and bwrap dies with the workbench, so the timeout, Stop and the leftover
count act on that tree alone; when the command exits, the loader counts and kills what it left
behind and reports how the command really ended (bwrap alone would give a signal N as exit
code 128 + N). The disk limit is a guard that sums what the sandbox's processes wrote to
storage (`/proc/PID/io`, reaped children included) a hundred times a second and ends the run
when it passes the limit. With allowed hosts, the proxy (`proxy.py`) serves the listener the
loader hands over, and its log becomes the result's `network_log`. What was applied is read
back from the loader's report into the card: the namespaces, the writable mounts, each rlimit
and hard = soft, no_new_privs, the seccomp filter, the Landlock ABI, the network interfaces.
"""

import asyncio
import contextlib
import os
import secrets
import socket
from dataclasses import replace
from pathlib import Path

from workbench.errors import ExecutorError, UsageError
from workbench.executors.bubblewrap.availability import Bwrap, check, find_bwrap
from workbench.executors.bubblewrap.loader import PROXY_PORT, loader_launch
from workbench.executors.bubblewrap.proxy import AllowList, EgressProxy
from workbench.executors.bubblewrap.sandbox import HOME, SandboxSpec, bwrap_args, landlock_rules
from workbench.executors.bubblewrap.seccomp import program
from workbench.executors.hardened import limits_exec
from workbench.executors.hardened.environ import scrub_env
from workbench.executors.hardened.executor import RUN_UID_BASE, RUN_UID_SPAN, read_to_eof
from workbench.executors.process.local import describe_user
from workbench.executors.process.outcome import format_bytes
from workbench.executors.process.ownership import FolderLoan, SharedLoan, unreachable
from workbench.executors.process.readback import (
    PROC_LIMIT_ROWS,
    limit_checks,
    memory_problem,
    parse_limits,
    parse_status,
)
from workbench.executors.process.reaper import app_environment
from workbench.executors.process.runner import EndedBy, Launch, ProcessOutcome
from workbench.executors.process.session import PreparedRun, RunContext, SubprocessExecutor
from workbench.executors.types import NetworkAttempt, PostureCard, RunResult, SessionSpec
from workbench.monitor.process import descendants
from workbench.postures.model import Limits, PostureWarning

NAMESPACES = ("user", "mnt", "pid", "ipc", "net", "uts", "cgroup")
DISK_CHECK_S = 0.01
SECCOMP_SUMMARY = "no new namespaces, ptrace, keyrings, perf, bpf, io_uring or unix sockets"
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


def rlimits(limits: Limits) -> dict[str, int]:
    """The rlimits a bubblewrap command runs under, hard = soft (bwrap's own init counts as one
    of its processes)."""
    return {
        "CPU": limits.cpu_seconds,
        "AS": limits.memory_bytes,
        "NPROC": limits.pids,
        "NOFILE": limits.open_files,
        "FSIZE": limits.file_size_bytes,
        "CORE": 0,
    }


def written_bytes(pids: set[int]) -> int:
    """What `pids` (and the children they reaped) wrote to storage, less what was truncated
    away before it reached the disk."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/io", "rb") as io:  # noqa: PTH123 - hot path
                fields = dict(line.split(b": ") for line in io.read().splitlines())
        except (OSError, ValueError):
            continue
        total += int(fields[b"write_bytes"]) - int(fields[b"cancelled_write_bytes"])
    return total


class BubblewrapRun(PreparedRun):
    """One sandboxed run: the loader's report, the card, the proxy and the disk guard."""

    def __init__(
        self,
        launch: Launch,
        card: PostureCard,
        limits: Limits,
        pipes: tuple[int, tuple[int, ...]],
        channel: socket.socket | None,
        proxy: EgressProxy | None,
        workspace_loan: SharedLoan | None,
    ) -> None:
        super().__init__(launch, card, limits)
        self._status_read, self._child_ends = pipes  # ours; the sandbox's (closed once spawned)
        self._channel = channel
        self._proxy = proxy
        self._workspace_loan = workspace_loan
        self._reported = False
        self._error = ""
        self.end = ""  # how the command ended, as the loader saw it ("code:N", "signal:N")
        self.left = 0  # processes it left behind, which the loader killed
        self.network_log: tuple[NetworkAttempt, ...] = ()
        self.guard = self._watch_disk

    async def on_spawned(self, pid: int) -> None:
        """Serve the proxy's listener once the loader hands it over, then read the loader's
        report to its end (the sandbox's end) and fill in the card."""
        self._close_child_ends()
        checks: list[tuple[str, bool]] = []
        if self._proxy is not None and self._channel is not None:
            listener = await _receive_listener(self._channel)
            checks.append((f"the proxy listens on 127.0.0.1:{PROXY_PORT} inside", bool(listener)))
            if listener is not None:
                await self._proxy.serve(listener)
        read_fd, self._status_read = self._status_read, -1
        report = limits_exec.decode_report(await read_to_eof(read_fd))
        self._error = report.get("error", "")
        self.end, self.left = report.get("end", ""), int(report.get("left") or 0)
        if "limits" in report:
            self._reported = True
            checks = [*self._checks(report), *checks]
            self.card = replace(self.card, checks=tuple(checks))

    def _checks(self, report: dict[str, str]) -> list[tuple[str, bool]]:
        assert self.limits is not None
        limits = self.limits
        wanted = {name: (value, value) for name, value in rlimits(limits).items()}
        applied = parse_limits(report["limits"])
        rows = [applied.get(PROC_LIMIT_ROWS[name], (0, 1)) for name in wanted]
        status = parse_status(report["status"])
        abi = int(report.get("landlock") or 0)
        interfaces = _interfaces(report.get("net", ""))
        return [
            *limit_checks(limits, wanted, report["limits"]),
            ("hard limits equal soft ones: it cannot raise them", all(s == h for s, h in rows)),
            _namespaces_check(report.get("ns", "")),
            _mounts_check(report["mounts"], self.launch.cwd, limits),
            ("no_new_privs (set-uid programs gain nothing)", status.get("NoNewPrivs") == "1"),
            (f"seccomp filter ({SECCOMP_SUMMARY})", status.get("Seccomp") == "2"),
            (f"Landlock ABI {abi}: writes only where mounted writable", abi > 0)
            if abi
            else ("Landlock (this kernel has none)", False),
            (
                f"network: only its own loopback ({', '.join(interfaces) or 'none'})",
                set(interfaces) <= {"lo"},
            ),
            (
                f"disk writes at most {format_bytes(limits.disk_bytes)} in all (checked every "
                f"{DISK_CHECK_S:g} s)",
                True,
            ),
            (f"CPU share {limits.cpus:g} core(s) (needs a cgroup)", False),
        ]

    async def _watch_disk(self, pid: int) -> str:
        """The cause once the sandbox has written more than the disk limit (see the module
        docstring); runs until cancelled otherwise."""
        assert self.limits is not None
        limit = self.limits.disk_bytes
        while True:
            await asyncio.sleep(DISK_CHECK_S)
            # Off the event loop (the app's Qt thread): a /proc walk of the whole sandbox.
            written = await asyncio.to_thread(_tree_written, pid)
            if written > limit:
                return f"disk limit {format_bytes(limit)} (it wrote {format_bytes(written)})"

    def launch_error(self) -> str:
        """The loader's error, or, when the command exited before the loader reported (bwrap
        or the loader failed), the last thing they printed."""
        if self._error or self._reported or self.outcome is None:
            return self._error
        if self.outcome.ended_by is not EndedBy.EXIT:
            return ""
        said = self.outcome.stderr_text.strip().splitlines()
        return f"the sandbox did not start the command: {said[-1] if said else 'no message'}"

    def _close_child_ends(self) -> None:
        for fd in self._child_ends:
            os.close(fd)
        self._child_ends = ()

    async def close(self) -> None:
        """Close what the run opened, stop the proxy (keeping its log) and give the workspace
        back (whatever happened)."""
        self._close_child_ends()
        if self._status_read >= 0:
            os.close(self._status_read)
            self._status_read = -1
        try:
            if self._channel is not None:
                self._channel.close()
            if self._proxy is not None:
                self.network_log = await self._proxy.close()
        finally:
            if self._workspace_loan is not None:
                await self._workspace_loan.release()


class BubblewrapExecutor(SubprocessExecutor):
    """Runs each command in a bwrap sandbox (see the module docstring)."""

    _run_uid: int | None = None
    _workspace_loan: SharedLoan | None = None
    _bwrap: Bwrap | None = None

    async def start(self, session: SessionSpec) -> None:
        """Start the session: find bwrap, check that it makes a sandbox here (as the session's
        throwaway uid when the workbench is root), and lend the workspace then."""
        run_uid = RUN_UID_BASE + secrets.randbelow(RUN_UID_SPAN) if os.geteuid() == 0 else None
        availability = await asyncio.to_thread(check, run_uid)
        if not availability.available:
            raise ExecutorError(f"The bubblewrap posture cannot run here: {availability.reason}")
        self._bwrap = await asyncio.to_thread(find_bwrap)
        await super().start(session)
        if run_uid is not None:
            self._run_uid = run_uid
            self._workspace_loan = SharedLoan(FolderLoan(session.workspace, run_uid, run_uid))

    async def _prepare(self, context: RunContext) -> PreparedRun | str:
        session, run_uid, limits = context.session, self._run_uid, self.posture.limits
        assert self._bwrap is not None
        if problem := memory_problem(limits):
            return problem
        if run_uid is not None and (problem := unreachable(session, run_uid, "bubblewrap")):
            return problem
        try:
            allow = AllowList.parse(self.posture.allow_hosts)
        except UsageError as error:
            return f"bad allowed host: {error}"
        seccomp = program()
        if seccomp is None:
            return f"no seccomp filter for {os.uname().machine}"
        proxy_url = f"http://127.0.0.1:{PROXY_PORT}"
        proxy_env = {
            name: proxy_url for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
        }
        fixed = {
            **context.command_env(context.request.env),
            "HOME": str(HOME),
            "TMPDIR": "/tmp",
            **(proxy_env if allow.entries else {}),
        }
        env = scrub_env(self.posture, app_environment(), context.request.env, fixed)
        if self._workspace_loan is not None:
            try:
                await self._workspace_loan.acquire()
            except OSError as error:
                return f"cannot lend the workspace to uid {run_uid}: {error}"
        status_read, status_write = os.pipe()
        seccomp_fd = _filled_pipe(seccomp)
        channel, inside = socket.socketpair() if allow.entries else (None, None)
        inside_fd = inside.detach() if inside is not None else None
        environment = () if session.environment is None else (session.environment.root,)
        spec = SandboxSpec(
            session.skill_dir, session.workspace, limits.disk_bytes, seccomp_fd, environment
        )
        loader, loader_env = loader_launch(
            status_write, rlimits(limits), landlock_rules(spec), inside_fd, env.env
        )
        argv = (str(self._bwrap.path), *bwrap_args(spec), "--", *loader, *context.request.argv)
        child_ends = (status_write, seccomp_fd, *(() if inside_fd is None else (inside_fd,)))
        launch = Launch(
            argv, loader_env, session.workspace, child_ends, user=run_uid, contained=True
        )
        card = PostureCard(
            posture=self.posture,
            env_kept=env.kept,
            env_dropped=env.dropped,
            run_as=_run_as(run_uid, self._bwrap),
        )
        loop = asyncio.get_running_loop()
        proxy = EgressProxy(allow, loop.time()) if allow.entries else None
        return BubblewrapRun(
            launch, card, limits, (status_read, child_ends), channel, proxy, self._workspace_loan
        )

    def _result(
        self,
        context: RunContext,
        prepared: PreparedRun,
        outcome: ProcessOutcome,
        warnings: tuple[PostureWarning, ...],
    ) -> RunResult:
        assert isinstance(prepared, BubblewrapRun)
        if outcome.ended_by is EndedBy.EXIT and prepared.end:
            how, _, number = prepared.end.partition(":")
            killed = outcome.kill.signalled + prepared.left
            outcome = replace(
                outcome,
                returncode=-int(number) if how == "signal" else int(number),
                kill=replace(outcome.kill, signalled=killed),
            )
        result = super()._result(context, prepared, outcome, warnings)
        return replace(result, network_log=prepared.network_log)


def _filled_pipe(data: bytes) -> int:
    """The read end of a pipe holding `data` and closed for writing (bwrap reads to EOF)."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, data)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write_fd)
    return read_fd


async def _receive_listener(channel: socket.socket) -> socket.socket | None:
    """The listening socket the loader sends over `channel`, or None when it sends none (it
    failed first: its end of the pair closes with it)."""
    loop = asyncio.get_running_loop()
    readable: asyncio.Future[None] = loop.create_future()
    channel.setblocking(False)

    def ready() -> None:
        if not readable.done():
            readable.set_result(None)

    loop.add_reader(channel, ready)
    try:
        await readable
    finally:
        loop.remove_reader(channel)
    with contextlib.suppress(OSError):
        _, fds, _, _ = socket.recv_fds(channel, 1, 1)
        if fds:
            return socket.socket(fileno=fds[0])
    return None


def _namespaces_check(namespaces: str) -> tuple[str, bool]:
    """Held when every namespace the loader reported is another than the workbench's."""
    theirs = namespaces.split()
    ours = [str(Path(f"/proc/self/ns/{name}").readlink()) for name in NAMESPACES]
    own = len(theirs) == len(ours) and not set(theirs) & set(ours)
    return ("its own user, mount, PID, IPC, network, UTS and cgroup namespaces", own)


def _mounts_check(mountinfo: str, workspace: Path, limits: Limits) -> tuple[str, bool]:
    """Held when nothing but the workspace, /tmp, /dev/shm (and /proc, devices) is writable."""
    allowed = {str(workspace), "/tmp", "/dev/shm", "/proc", "/dev/pts"}
    allowed |= {f"/dev/{name}" for name in _DEVICES}
    writable = set()
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[5].split(",")[0] == "rw":
            writable.add(fields[4].replace("\\040", " "))
    extra = sorted(writable - allowed)
    size = format_bytes(limits.disk_bytes)
    label = f"writable: only the workspace, and /tmp and /dev/shm ({size} each)"
    if extra:
        label += f"; also writable: {', '.join(extra)}"
    return label, not extra


def _interfaces(net_dev: str) -> list[str]:
    return [line.split(":")[0].strip() for line in net_dev.splitlines()[2:] if ":" in line]


def _run_as(run_uid: int | None, bwrap: Bwrap) -> str:
    where = f"HOME {HOME} and TMPDIR /tmp, private and gone after the run; {bwrap.describe()}"
    if run_uid is None:
        return f"{describe_user(os.getuid())}: you, in a user namespace of its own. {where}"
    return (
        f"uid {run_uid}: a throwaway user for this session (the workbench runs as root), in a "
        f"user namespace of its own; the workspace is chowned to it while runs are in flight "
        f"and given back afterwards. {where}"
    )


def _tree_written(pid: int) -> int:
    """What the processes under `pid` have written so far (blocking: reads /proc)."""
    return written_bytes(descendants([pid]))
