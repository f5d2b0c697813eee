"""The `local` posture: a plain subprocess on the host, as the user, with no isolation.

The command gets the app's whole environment but the app's own mark (`reaper.app_environment`),
plus `SKILL_DIR` and `WORKSPACE` (and the skill environment's PYTHONPATH ahead of the app's), and
runs in the workspace. Nothing is limited but the wall-clock timeout, which still kills the whole
process tree (escaped daemons included, with no tag or a made-up one, except one that copies the
app's `WORKBENCH_APP` mark: see `reaper.escapees`). Every result carries the posture's DANGER
warnings.
"""

import os
import pwd

from workbench.executors.process.reaper import app_environment
from workbench.executors.process.runner import Launch
from workbench.executors.process.session import PreparedRun, RunContext, SubprocessExecutor
from workbench.executors.types import PostureCard


def describe_user(uid: int) -> str:
    """`alice (uid 1000)`, or just the uid when it has no name."""
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


class LocalExecutor(SubprocessExecutor):
    """Runs commands as plain local processes."""

    async def _prepare(self, context: RunContext) -> PreparedRun:
        env = {**app_environment(), **context.request.env}
        env.update(context.command_env(env))
        card = PostureCard(
            posture=self.posture,
            env_kept=tuple(sorted(env)),
            run_as=f"{describe_user(os.getuid())}: you, with no isolation",
        )
        launch = Launch(context.request.argv, env, context.session.workspace)
        return PreparedRun(launch, card, limits=None)
