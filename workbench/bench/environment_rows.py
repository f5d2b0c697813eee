"""Rows of skill environments: a cold build against uv alone, and a cache hit.

The skill needs PyYAML and six (declared in its `requirements.txt`), built for this computer's
`python3` as the local posture runs it. Ours is what `workbench env build` does in-process: the
environment's status (which asks the interpreter its version) and `build`. A cold build starts
each time from an empty environments folder; its floor is the same `uv pip install` command
the build runs, into an empty folder. Both share uv's package cache, warmed by the first call,
so the row measures what the workbench adds to the installer, not the registry. The cache hit
asks for the environment already built; its floor is the installer asked again for what is
installed already (what a tool without a store would run before each use).
"""

import asyncio
import itertools
from pathlib import Path

from workbench.bench.rows import BenchContext, Goal, Group, Outcome, RowSpec, run_quiet
from workbench.bench.stats import Case, interleave, timed_call
from workbench.environments.build import build, python_install_argv
from workbench.environments.resolve import status
from workbench.environments.store import PYTHON_DIR, EnvironmentStore
from workbench.postures.model import Posture, PostureId
from workbench.skills.catalog import load_skill
from workbench.skills.model import Skill

REQUIREMENTS = ("PyYAML", "six")
POSTURE = Posture(PostureId.LOCAL)

COLD = RowSpec(
    "env-cold-build",
    "skill environment, cold build",
    "env status + build into an empty store",
    "uv pip install of the same requirements into an empty folder",
    Goal("<= 1.3x", max_ratio=1.3),
)
HIT = RowSpec(
    "env-cache-hit",
    "skill environment, cache hit",
    "env status + build of the environment built already",
    "uv pip install of the same requirements, all installed already",
    Goal("< 1 s", max_ours_s=1.0),
)


def _skill(folder: Path) -> Skill:
    """A skill whose script imports the requirements, which it declares."""
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: bench-env\ndescription: bench\n---\n")
    (folder / "scripts" / "requirements.txt").write_text("\n".join(REQUIREMENTS) + "\n")
    (folder / "scripts" / "main.py").write_text("import six, yaml\n")
    return load_skill(folder)


def _status_and_build(skill: Skill, store: EnvironmentStore) -> None:
    """What `workbench env build` does: ask the environment's status, then build it."""
    found = status(skill, POSTURE, store)
    build(found.inputs, skill, store, lambda _step: None)


async def environment_rows(
    context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
) -> None:
    """The cold build and the cache hit, each against uv (see the module docstring)."""
    root = context.scratch / "environments"
    skill = _skill(root / "skill")
    store = EnvironmentStore(root / "built")
    await asyncio.to_thread(_status_and_build, skill, store)
    built = status(skill, POSTURE, store)
    if (environment := built.environment) is None:
        raise RuntimeError(f"the environment built is not found: {built.state}")
    fresh = itertools.count()

    def cold() -> None:
        _status_and_build(skill, EnvironmentStore(root / f"store-{next(fresh)}"))

    def installer(folder: Path) -> None:
        folder.mkdir(exist_ok=True)
        requirements = folder / "requirements.txt"
        run_quiet(python_install_argv(built.inputs, folder / PYTHON_DIR, requirements))

    if COLD.id in wanted:
        cases = [
            Case("ours", timed_call(cold)),
            Case("floor", timed_call(lambda: installer(root / f"uv-{next(fresh)}"))),
        ]
        stats = await interleave(cases, context.rounds(10, 3))
        note = f"{len(REQUIREMENTS)} requirements each time, uv's package cache warm"
        outcomes[COLD.id] = Outcome(stats["ours"], stats["floor"], note=note)
    if HIT.id in wanted:
        cases = [
            Case("ours", timed_call(lambda: _status_and_build(skill, store))),
            Case("floor", timed_call(lambda: installer(environment.path))),
        ]
        stats = await interleave(cases, context.rounds(20, 5))
        outcomes[HIT.id] = Outcome(stats["ours"], stats["floor"])


GROUPS = (Group("environments", (COLD, HIT), environment_rows),)
