"""The headless services the desktop window is built from (Qt-free plain data).

`workbench.ui.app` fills a `Services` with the real catalog, posture probe and run service; tests
fill it with fakes where the real thing would be slow. Every plain callable here may block, so
the window calls them through `asyncio.to_thread`.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.executors.warm.starts import WarmPool
from workbench.postures.model import Availability, PostureId
from workbench.runs.service import RunService
from workbench.skills import Skill


@dataclass(frozen=True, slots=True)
class PostureProbe:
    """What this machine can run: each posture's availability and the Docker engine's state."""

    availability: dict[PostureId, Availability]
    docker_runtimes: frozenset[str] | None
    """The engine's runtimes, or None when no Docker engine answered."""


@dataclass(frozen=True, slots=True)
class Services:
    """Everything the main window needs from the rest of the workbench."""

    roots: tuple[Path, ...]
    """The catalog roots shown at start-up (defaults plus the ones given on the command line)."""
    discover: Callable[[Sequence[Path]], list[Skill]]
    """Every skill under the given roots (blocking)."""
    load_skill: Callable[[Path], Skill]
    """One skill folder (blocking)."""
    probe_postures: Callable[[], PostureProbe]
    """Ask the machine which postures can run (blocking, up to a few seconds)."""
    runs: RunService
    """Runs a skill's command under a posture and records it in the history."""
    open_pools: Callable[[], Mapping[PostureId, WarmPool]] = dict
    """The warm pools of the postures that keep them (blocking: it loads the engine's client);
    none by default."""
