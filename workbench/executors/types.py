"""The data of the executor contract: requests, output chunks, outcomes and results.

Every executor takes a `RunRequest`, streams `OutputChunk`s into an `OutputSink`, watches a
`CancelToken`, and returns a `RunResult` whose outcome is a `RunStatus` plus a `cause`
sentence naming the control that ended the run. Outcomes are never encoded in exit codes.
"""

import asyncio
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePath
from typing import Protocol

from workbench.monitor.sample import ResourceSample
from workbench.postures.model import Posture, PostureWarning
from workbench.workspace.changes import FileChange


def new_run_id(now: float | None = None) -> str:
    """A sortable, unique run id such as `20261122-134415-3f9a1c` (UTC)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(3)}"


class RunStatus(StrEnum):
    """How a run ended."""

    OK = "ok"  # exit code 0
    FAILED = "failed"  # the command ran and exited non-zero (or died on its own signal)
    TIMED_OUT = "timed_out"  # the wall-clock timeout killed it
    CANCELLED = "cancelled"  # the user pressed Stop
    OOM_KILLED = "oom_killed"  # killed for exceeding the memory limit
    LIMIT_EXCEEDED = "limit_exceeded"  # another limit (CPU time, processes, file size) ended it
    ERROR = "error"  # the workbench itself could not run it


class Stream(StrEnum):
    """Which output stream a chunk came from."""

    STDOUT = "stdout"
    STDERR = "stderr"


@dataclass(frozen=True, slots=True)
class OutputChunk:
    """Bytes read from one stream, `t` seconds after the run started."""

    stream: Stream
    data: bytes
    t: float


class OutputSink(Protocol):
    """Receives output chunks as they arrive. Must not block."""

    def __call__(self, chunk: OutputChunk, /) -> None: ...


class CancelToken:
    """Set by the user (Stop) to end a run; executors await `wait()` beside the command."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def cancel(self) -> None:
        """Ask the run to stop. Safe to call more than once."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """True once `cancel()` was called."""
        return self._event.is_set()

    async def wait(self) -> None:
        """Return when `cancel()` is called."""
        await self._event.wait()


@dataclass(frozen=True, slots=True)
class SkillEnvironment:
    """A skill's built environment as an executor applies it: plain data that
    `workbench.environments` makes. `root` is a host folder the command reads and never writes;
    `python` and `node` are folders inside it for PYTHONPATH and NODE_PATH; `image`, when set, is
    the image a container posture runs instead of its own (the one with the system packages)."""

    env_id: str
    root: Path
    python: tuple[str, ...] = ()
    node: tuple[str, ...] = ()
    image: str = ""

    def variables(self, seen_at: PurePath, base: Mapping[str, str]) -> dict[str, str]:
        """PYTHONPATH and NODE_PATH for a command that sees `root` at `seen_at`, each ahead of
        the value it has in `base`."""
        found = {}
        for name, folders in (("PYTHONPATH", self.python), ("NODE_PATH", self.node)):
            paths = [str(seen_at / folder) for folder in folders] + [base.get(name, "")]
            if folders:
                found[name] = ":".join(path for path in paths if path)
        return found


@dataclass(frozen=True, slots=True)
class SessionSpec:
    """What an executor needs to start a session: the skill, the workspace it serves and the
    skill's environment, if it runs with one."""

    skill_dir: Path
    skill_name: str
    workspace: Path
    runs_dir: Path  # parent folder for per-run folders (logs, private HOME/TMPDIR)
    exclude: tuple[str, ...] = ()  # paths below the workspace that are not its (the data folder)
    environment: SkillEnvironment | None = None


@dataclass(frozen=True, slots=True)
class RunRequest:
    """One command to run in the session's workspace."""

    argv: tuple[str, ...]
    run_id: str = field(default_factory=new_run_id)  # names the run's folder under runs_dir
    env: dict[str, str] = field(default_factory=dict)  # extra variables the user asked for
    output_cap_bytes: int = 4 * 1024 * 1024  # per stream, kept in memory
    on_sample: Callable[[ResourceSample], None] | None = None  # live monitor samples
    on_progress: Callable[[str], None] | None = None  # work around the command, in words


@dataclass(frozen=True, slots=True)
class CapturedOutput:
    """One stream of a finished run: the capped text in memory and its log on disk (the whole
    stream, or its head and tail when it was longer than the log's cap)."""

    text: str  # decoded as UTF-8 with replacement
    total_bytes: int
    truncated: bool
    log_path: Path | None
    log_dropped_bytes: int = 0  # bytes between the log's head and tail that it does not hold
    log_error: str = ""  # why the log stops short (a write failed: the disk full), "" if not


@dataclass(frozen=True, slots=True)
class PostureCard:
    """What was actually applied to a run, read back after it started (not what was asked).

    `checks` pairs a control with whether it held, e.g. ("RLIMIT_AS 256 MiB", True). `started`
    says how the sandbox came to be when a warm pool could serve it: taken warm (and how), or
    started cold. `environment` and `image_id` say what the run ran with, so it can be repeated.
    """

    posture: Posture
    checks: tuple[tuple[str, bool], ...] = ()
    env_kept: tuple[str, ...] = ()
    env_dropped: tuple[str, ...] = ()
    run_as: str = ""
    started: str = ""
    environment: str = ""  # the skill environment's id, "" when it ran without one
    image_id: str = ""  # the image a container posture ran, as the engine names it


@dataclass(frozen=True, slots=True)
class HostCall:
    """One call a command made through a host API that reaches out of its posture (e.g. fetch).

    `target` says what was asked ("GET https://example.org/x"), `allowed` whether the posture
    let it through, `outcome` what came of it ("HTTP 200 OK, 512 bytes", "refused: ...",
    "error: ..."); `t` is seconds after the run started (as the command saw it start: never past
    the run's end), `duration_s` how long the call took.
    """

    api: str
    target: str
    allowed: bool
    outcome: str
    t: float
    duration_s: float = 0.0


@dataclass(frozen=True, slots=True)
class NetworkAttempt:
    """One connection a command asked the allow-list proxy for, allowed or refused.

    `verdict` is `allowed` (connected), `refused` (not on the allow-list) or `failed` (allowed,
    but the host could not be reached: `detail` says why); `t` is seconds after the run
    started; the byte counts are what went up to the host and came back.
    """

    host: str
    port: int
    t: float
    verdict: str
    bytes_sent: int = 0
    bytes_received: int = 0
    method: str = "CONNECT"
    detail: str = ""


@dataclass(frozen=True, slots=True)
class RunResult:
    """Everything known about a finished run."""

    run_id: str
    status: RunStatus
    cause: str
    exit_code: int | None
    signal: int | None
    wall_seconds: float
    cpu_seconds: float
    peak_rss_bytes: int
    peak_processes: int
    stdout: CapturedOutput
    stderr: CapturedOutput
    card: PostureCard
    warnings: tuple[PostureWarning, ...] = ()
    changes: tuple[FileChange, ...] = ()
    leftover_processes: int = 0
    samples: tuple[ResourceSample, ...] = ()
    run_dir: Path | None = None
    host_calls: tuple[HostCall, ...] = ()
    network_log: tuple[NetworkAttempt, ...] = ()

    @classmethod
    def not_run(
        cls,
        run_id: str,
        run_dir: Path,
        cause: str,
        card: PostureCard,
        warnings: tuple[PostureWarning, ...],
    ) -> "RunResult":
        """The `error` result of a command the executor could not start, with `cause`."""
        nothing = CapturedOutput(text="", total_bytes=0, truncated=False, log_path=None)
        return cls(
            run_id=run_id,
            status=RunStatus.ERROR,
            cause=cause,
            exit_code=None,
            signal=None,
            wall_seconds=0.0,
            cpu_seconds=0.0,
            peak_rss_bytes=0,
            peak_processes=0,
            stdout=nothing,
            stderr=nothing,
            card=card,
            warnings=warnings,
            run_dir=run_dir,
        )
