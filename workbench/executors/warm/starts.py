"""Warm starts: resources kept ready between runs, and the executor factory that uses them.

`WarmPool` is the protocol of a pool that keeps started sandboxes for the next run of one key
(posture and session), hands each out clean and refills in the background; `WarmStarts` holds a
session's pools by posture id, and its `build_executor` is the `RunService` executor factory that
asks a posture's pool for its executor, or builds a cold one when there is no pool.
"""

from dataclasses import dataclass, field
from typing import Protocol

from workbench.executors.contract import Executor
from workbench.executors.registry import build_executor
from workbench.executors.types import SessionSpec
from workbench.postures.model import Posture, PostureId


@dataclass(frozen=True, slots=True)
class PoolStatus:
    """What a pool holds right now, for the CLI and the GUI."""

    size: int  # how many the pool keeps ready (0: off)
    ready: int  # started and unused, for `key`
    starting: int  # being started in the background
    key: str  # what the ready ones serve, in words ("hello-python in /tmp/ws, 256 MiB"), or ""
    problem: str = ""  # why the pool cannot fill (engine down, image missing), or ""


class WarmPool(Protocol):
    """Started sandboxes kept ready for the next run; see the module doc."""

    def status(self) -> PoolStatus:
        """The pool's state now (cheap, no I/O)."""
        ...

    def executor(self, posture: Posture) -> Executor:
        """A new, not yet started executor for `posture` that takes from this pool."""
        ...

    async def resize(self, size: int) -> None:
        """Keep `size` ready from now on (0 drains the pool)."""
        ...

    async def prime(self, posture: Posture, session: SessionSpec) -> None:
        """Fill the pool for runs of `posture` in `session` (drains what serves another key)."""
        ...

    async def close(self) -> None:
        """Drain the pool and release everything it holds."""
        ...


@dataclass(slots=True)
class WarmStarts:
    """The warm pools of one app or CLI session, by posture id."""

    pools: dict[PostureId, WarmPool] = field(default_factory=dict)

    def build_executor(self, posture: Posture) -> Executor:
        """A new executor for `posture`, given the pool of its posture when there is one."""
        pool = self.pools.get(posture.id)
        return build_executor(posture) if pool is None else pool.executor(posture)

    async def close(self) -> None:
        """Close every pool."""
        for pool in self.pools.values():
            await pool.close()
