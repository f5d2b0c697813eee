"""The lab's sessions: one started executor serves every probe run of one posture and limits.

`LabSessions` wraps the run service the lab is given: its `service` builds, per posture (with its
limits), a `SharedSession` that starts the real executor at the first run and keeps it across the
runs (one container for all the probes, not one each); every run still goes through the run
service, recorded and swept as any run, a start that fails is cleaned up and tried again by the
next run, and `close()` stops every session the lab started.
"""

import asyncio
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import ExecutorError
from workbench.executors.contract import Executor
from workbench.executors.types import CancelToken, OutputSink, RunRequest, RunResult, SessionSpec
from workbench.postures.model import Posture
from workbench.runs.service import ExecutorFactory, RunService


@dataclass(frozen=True, slots=True)
class _Mounts:
    """What a started session is bound to: a run in another folder needs another session."""

    skill_dir: Path
    workspace: Path
    runs_dir: Path

    @classmethod
    def of(cls, session: SessionSpec) -> "_Mounts":
        return cls(session.skill_dir, session.workspace.absolute(), session.runs_dir)


class SharedSession:
    """An `Executor` whose session outlives each run: `stop()` leaves it running (only a
    start that failed is cleaned up there) and `close()` ends it."""

    def __init__(self, posture: Posture, build: ExecutorFactory) -> None:
        self.posture = posture
        self._build = build
        self._inner: Executor | None = None
        self._mounts: _Mounts | None = None
        self._lock = asyncio.Lock()

    async def start(self, session: SessionSpec) -> None:
        async with self._lock:
            if self._mounts is None:
                self._inner = self._inner or self._build(self.posture)
                await self._inner.start(session)
                self._mounts = _Mounts.of(session)
            elif _Mounts.of(session) != self._mounts:
                raise ExecutorError("a shared lab session serves one skill folder and workspace")

    async def run(self, request: RunRequest, sink: OutputSink, cancel: CancelToken) -> RunResult:
        if self._inner is None or self._mounts is None:
            raise ExecutorError("the lab session was not started")
        return await self._inner.run(request, sink, cancel)

    async def stop(self) -> None:
        async with self._lock:
            if self._mounts is None and self._inner is not None:  # its start failed
                inner, self._inner = self._inner, None
                await inner.stop()

    async def close(self) -> None:
        """End the session and everything it started (idempotent)."""
        async with self._lock:
            inner, self._inner, self._mounts = self._inner, None, None
            if inner is not None:
                await inner.stop()


class LabSessions:
    """The shared sessions of one lab (see the module doc). Use `async with`."""

    def __init__(self, service: RunService) -> None:
        self._sessions: dict[Posture, SharedSession] = {}
        self._build = service.build_executor
        self.service = RunService(service.layout, service.history, self._session, service.limits)

    def _session(self, posture: Posture) -> Executor:
        if posture not in self._sessions:
            self._sessions[posture] = SharedSession(posture, self._build)
        return self._sessions[posture]

    async def __aenter__(self) -> "LabSessions":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop every session the lab started, all at once."""
        sessions = list(self._sessions.values())
        await asyncio.gather(*(session.close() for session in sessions))
