"""The closed map from posture id to executor class, and `build_executor()`.

Adding a posture means adding its class here; nothing else looks executors up by name. Each
executor's module (docker-py, psutil, a seccomp compiler, ...) is imported when the first
executor of its posture is built, so naming the postures costs nothing.
"""

import importlib

from workbench.errors import PostureError
from workbench.executors.contract import Executor
from workbench.postures.model import Posture, PostureId

# posture id -> (module, class)
_EXECUTORS: dict[PostureId, tuple[str, str]] = {
    PostureId.LOCAL: ("workbench.executors.process.local", "LocalExecutor"),
    PostureId.HARDENED: ("workbench.executors.hardened.executor", "HardenedExecutor"),
    PostureId.BUBBLEWRAP: ("workbench.executors.bubblewrap.executor", "BubblewrapExecutor"),
    PostureId.QUICKJS: ("workbench.executors.quickjs.executor", "QuickJsExecutor"),
    PostureId.DOCKER: ("workbench.executors.docker.executor", "DockerExecutor"),
    # the same executor on the runsc runtime
    PostureId.GVISOR: ("workbench.executors.docker.executor", "DockerExecutor"),
}


def implemented_postures() -> tuple[PostureId, ...]:
    """The posture ids that have an executor in this build."""
    return tuple(_EXECUTORS)


def build_executor(posture: Posture) -> Executor:
    """A new, not yet started executor for `posture`; `PostureError` when there is none."""
    try:
        module, name = _EXECUTORS[posture.id]
    except KeyError:
        raise PostureError(
            f"The {posture.id.value} posture is not implemented yet; "
            f"choose one of: {', '.join(p.value for p in _EXECUTORS)}."
        ) from None
    executor: Executor = getattr(importlib.import_module(module), name)(posture)
    return executor
