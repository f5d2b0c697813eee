"""The closed map from posture id to executor class, and `build_executor()`.

Adding a posture means adding its class here; nothing else looks executors up by name.
"""

from workbench.errors import PostureError
from workbench.executors.bubblewrap.executor import BubblewrapExecutor
from workbench.executors.contract import Executor
from workbench.executors.docker.executor import DockerExecutor
from workbench.executors.hardened.executor import HardenedExecutor
from workbench.executors.process.local import LocalExecutor
from workbench.executors.quickjs.executor import QuickJsExecutor
from workbench.postures.model import Posture, PostureId

_EXECUTORS: dict[
    PostureId,
    type[LocalExecutor]
    | type[HardenedExecutor]
    | type[BubblewrapExecutor]
    | type[QuickJsExecutor]
    | type[DockerExecutor],
] = {
    PostureId.LOCAL: LocalExecutor,
    PostureId.HARDENED: HardenedExecutor,
    PostureId.BUBBLEWRAP: BubblewrapExecutor,
    PostureId.QUICKJS: QuickJsExecutor,
    PostureId.DOCKER: DockerExecutor,
    PostureId.GVISOR: DockerExecutor,  # the same executor on the runsc runtime
}


def implemented_postures() -> tuple[PostureId, ...]:
    """The posture ids that have an executor in this build."""
    return tuple(_EXECUTORS)


def build_executor(posture: Posture) -> Executor:
    """A new, not yet started executor for `posture`; `PostureError` when there is none."""
    try:
        cls = _EXECUTORS[posture.id]
    except KeyError:
        raise PostureError(
            f"The {posture.id.value} posture is not implemented yet; "
            f"choose one of: {', '.join(p.value for p in _EXECUTORS)}."
        ) from None
    return cls(posture)
