"""Executors: run a skill's command under a posture and report what happened.

`build_executor(posture)` returns an `Executor` (see `contract.py`); the data it speaks is in
`types.py`. The registry imports every executor (docker-py, psutil, ...), so it loads only
when one of these names is first used: importing `workbench.executors.types` stays cheap.
"""

TYPE_CHECKING = False  # not typing's: importing typing would slow every QuickJS worker's start

if TYPE_CHECKING:
    from workbench.executors.contract import Executor
    from workbench.executors.registry import build_executor, implemented_postures

__all__ = ["Executor", "build_executor", "implemented_postures"]


def __getattr__(name: str) -> object:
    if name == "Executor":
        from workbench.executors import contract

        return contract.Executor
    if name in ("build_executor", "implemented_postures"):
        from workbench.executors import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
