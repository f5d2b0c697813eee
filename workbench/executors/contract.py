"""The executor contract: the one Protocol every posture's executor implements.

An executor serves one session (a skill and its workspace). `start()` prepares it, `run()` runs
one command and reports the outcome as a `RunResult`, and `stop()` ends everything the session
started; it is idempotent. See docs/ARCHITECTURE.md, "Contracts".
"""

from typing import Protocol

from workbench.executors.types import CancelToken, OutputSink, RunRequest, RunResult, SessionSpec
from workbench.postures.model import Posture


class Executor(Protocol):
    """Runs commands of one skill session under one posture."""

    posture: Posture

    async def start(self, session: SessionSpec) -> None:
        """Prepare the session (folders, container, worker). Raises `ExecutorError`."""
        ...

    async def run(self, request: RunRequest, sink: OutputSink, cancel: CancelToken) -> RunResult:
        """Run one command, streaming its output into `sink`, until it ends or is cancelled.

        The command's own failures (non-zero exit, limits, command not found) are outcomes in
        the result; `ExecutorError` is raised only when the executor itself cannot work.
        """
        ...

    async def stop(self) -> None:
        """End the session and kill everything it started. Safe to call more than once."""
        ...
