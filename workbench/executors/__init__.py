"""Executors: run a skill's command under a posture and report what happened.

`build_executor(posture)` returns an `Executor` (see `base.py`); the data it speaks is in
`types.py`.
"""

from workbench.executors.base import Executor
from workbench.executors.registry import build_executor, implemented_postures

__all__ = ["Executor", "build_executor", "implemented_postures"]
