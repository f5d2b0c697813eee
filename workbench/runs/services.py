"""`RunServices`: the data layout, run history, warm starts and run service of a process.

`RunServices.open()` is where the CLI and the app get them: it is the one place that finds the
user's data folder (a test, or the app when that folder cannot hold a history, passes another
layout), and the run service takes every executor from the warm starts. The app's pools
(`own_pools`) keep themselves filled. A CLI command keeps no pools of its own: `run()` serves a
docker or gvisor run from the warm containers `workbench pool fill` left in the engine for the
run's key, and then has a detached `workbench pool fill` start a replacement, so the engine keeps
that many and the command does not wait; a run with no pooled container for its key starts cold
and spawns nothing. The warm starts are built when first used (they import docker-py, which
`workbench history` never needs and the app loads in a thread once its window is up), and so is
the run service; `close()` closes the pools.
"""

import contextlib
import os
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from workbench.executors.types import CancelToken, OutputSink
from workbench.monitor.sample import ResourceSample
from workbench.platform.interpreter import child_argv
from workbench.postures.model import CONTAINER_POSTURES, Posture, PostureId
from workbench.runs.history import RunHistory
from workbench.runs.layout import DataLayout
from workbench.runs.options import posture_options
from workbench.runs.service import CompletedRun, RunPlan, RunService

if TYPE_CHECKING:
    from workbench.executors.contract import Executor
    from workbench.executors.warm.containers import ContainerPool
    from workbench.executors.warm.starts import WarmStarts


class RunServices:
    """What runs need, built once per process; see the module doc."""

    def __init__(self, layout: DataLayout, history: RunHistory, *, own_pools: bool) -> None:
        self.layout = layout
        self.history = history
        self.own_pools = own_pools

    @classmethod
    def open(cls, layout: DataLayout | None = None, *, own_pools: bool = False) -> "RunServices":
        """The services over `layout` (default: the user's data folder); `own_pools` for the
        app. `HistoryError` when the history cannot be opened there."""
        layout = layout or DataLayout.default()
        return cls(layout, RunHistory(layout.history_path), own_pools=own_pools)

    @cached_property
    def engine_pools(self) -> "dict[PostureId, ContainerPool]":
        """A command's pools of the containers `workbench pool fill` keeps; the app has none."""
        if self.own_pools:
            return {}
        from workbench.executors.warm.containers import ContainerPool

        spares = self.layout.fresh_workspaces
        return {p: ContainerPool(spares, refill=False) for p in CONTAINER_POSTURES}

    @cached_property
    def warm(self) -> "WarmStarts":
        """The warm pools by posture: the app's own, or a command's `engine_pools`."""
        from workbench.executors.warm.containers import ContainerPool
        from workbench.executors.warm.quickjs import QuickJsWorkerPool
        from workbench.executors.warm.starts import WarmPool, WarmStarts

        if not self.own_pools:
            return WarmStarts({**self.engine_pools})
        pools: dict[PostureId, WarmPool] = {
            p: ContainerPool(self.layout.fresh_workspaces) for p in CONTAINER_POSTURES
        }
        return WarmStarts({**pools, PostureId.QUICKJS: QuickJsWorkerPool()})

    @cached_property
    def runs(self) -> RunService:
        """The run service, recording into `history`, its executors from `warm`."""
        return RunService(self.layout, self.history, self._build_executor)

    def _build_executor(self, posture: Posture) -> "Executor":
        """An executor from the warm starts, built at the first run if nothing built them."""
        return self.warm.build_executor(posture)

    async def run(
        self,
        plan: RunPlan,
        sink: OutputSink,
        cancel: CancelToken,
        on_sample: Callable[[ResourceSample], None] | None = None,
        on_progress: Callable[[str], None] | None = None,
    ) -> CompletedRun:
        """Run `plan` once, warm when a pool holds a sandbox for it (see the module doc)."""
        pool = self.engine_pools.get(plan.posture.id)
        if pool is None:
            return await self.runs.run_once(plan, sink, cancel, on_sample, on_progress)
        session = self.runs.session(plan)
        size = await pool.adopt(plan.posture, session)
        try:
            return await self.runs.run_once(plan, sink, cancel, on_sample, on_progress)
        finally:
            fresh = pool.key(plan.posture, session).fresh
            await pool.detach()
            if size:
                _refill_detached(plan, size, fresh)

    async def close(self) -> None:
        """Close the warm pools; the app's remove the containers and workers they started."""
        await self.warm.close()


def _refill_detached(plan: RunPlan, size: int, fresh: bool) -> None:
    """Start `workbench pool fill` for `plan`'s key in its own session, output nowhere; it
    outlives this process (nothing waits for it)."""
    argv = [*child_argv("workbench"), "pool", "fill", "--skill", str(plan.skill_dir)]
    argv += [] if fresh else ["--workspace", str(plan.workspace)]
    argv += ["--posture", plan.posture.id.value, *posture_options(plan.posture)]
    argv += ["--size", str(size)]
    null = (os.devnull, os.O_RDWR, 0)
    files = [(os.POSIX_SPAWN_OPEN, fd, *null) for fd in (0, 1, 2)]
    with contextlib.suppress(OSError):  # no refill: the next run starts cold
        os.posix_spawn(argv[0], argv, os.environ, file_actions=files, setsid=True)
