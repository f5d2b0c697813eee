"""The bubblewrap posture's row: what the posture adds to starting a bwrap sandbox.

Ours is the sandbox the executor starts for `true`, spawned and waited for from this process:
bwrap with the posture's namespaces and mounts, its seccomp filter on a pipe, and the loader
that sets the limits and Landlock, forks the command and waits for it (built by the same
functions the executor uses). The floor is bare bwrap with the same namespace and mount
options running `true` itself. The note adds `posix_spawn(true)` and a whole
`BubblewrapExecutor.run` of `true` (its spawn, monitoring, kill check and read-back), which
the row does not bound. As root, both sandboxes run as the same throwaway uid, as the
executor's do.
"""

import os
import subprocess

from workbench.bench.local_rows import posix_spawn_true
from workbench.bench.rows import (
    BenchContext,
    Goal,
    Group,
    Outcome,
    RowSpec,
    checked_run,
    scratch_session,
    started_executor,
)
from workbench.bench.stats import Case, interleave, timed_call
from workbench.executors.bubblewrap.availability import find_bwrap
from workbench.executors.bubblewrap.executor import rlimits
from workbench.executors.bubblewrap.loader import loader_launch
from workbench.executors.bubblewrap.sandbox import SandboxSpec, bwrap_args, landlock_rules
from workbench.executors.bubblewrap.seccomp import program
from workbench.executors.hardened.executor import RUN_UID_BASE
from workbench.postures.model import DEFAULT_LIMITS, Posture, PostureId

SPAWN = RowSpec(
    "bubblewrap-spawn",
    "bubblewrap sandbox of /bin/true (filter, loader, limits, Landlock)",
    "the posture's bwrap + seccomp + loader running true",
    "bare bwrap, same namespaces and mounts, running true",
    Goal("<= 1.5x", max_ratio=1.5),
)


async def spawn_rows(
    context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
) -> None:
    """The posture's sandbox of `true` against bare bwrap (see the module docstring)."""
    del wanted
    bwrap = find_bwrap()
    if bwrap is None:
        outcomes[SPAWN.id] = Outcome(skipped="no bwrap here")
        return
    session = scratch_session(context.scratch / "bubblewrap")
    uid = RUN_UID_BASE if os.geteuid() == 0 else None
    if uid is not None:
        for folder in (context.scratch, session.workspace.parent):
            folder.chmod(0o755)
        os.chown(session.workspace, uid, uid)
    seccomp = program()
    assert seccomp is not None

    def sandbox(posture: bool) -> None:
        read_fd, write_fd = os.pipe()
        status_read, status_write = os.pipe()
        os.write(write_fd, seccomp)
        os.close(write_fd)
        spec = SandboxSpec(session.skill_dir, session.workspace, DEFAULT_LIMITS.disk_bytes, read_fd)
        options = bwrap_args(spec)
        loader, env = loader_launch(
            status_write, rlimits(DEFAULT_LIMITS), landlock_rules(spec), None, dict(os.environ)
        )
        argv = [str(bwrap.path), *options, "--", *loader, "true"]
        if not posture:  # the same sandbox without the filter and the loader
            argv = [str(bwrap.path), *options[: options.index("--seccomp")], "--", "true"]
        try:
            subprocess.run(
                argv, check=True, pass_fds=(read_fd, status_write), user=uid, group=uid, env=env,
                extra_groups=None if uid is None else [],
            )  # fmt: skip
        finally:
            for fd in (read_fd, status_read, status_write):
                os.close(fd)

    rounds = context.rounds(30, 10)
    async with started_executor(Posture(PostureId.BUBBLEWRAP), session) as executor:
        cases = [
            Case("ours", timed_call(lambda: sandbox(True))),
            Case("floor", timed_call(lambda: sandbox(False))),
            Case("spawn", timed_call(posix_spawn_true)),
            Case("run", checked_run(executor, ("true",))),
        ]
        stats = await interleave(cases, rounds)
    note = (
        f"posix_spawn(true) {stats['spawn'].median * 1000:.2f} ms; a whole executor run of "
        f"true {stats['run'].median * 1000:.1f} ms; {bwrap.describe()}"
    )
    outcomes[SPAWN.id] = Outcome(stats["ours"], stats["floor"], note=note)


GROUPS = (Group("bubblewrap", (SPAWN,), spawn_rows, PostureId.BUBBLEWRAP),)
