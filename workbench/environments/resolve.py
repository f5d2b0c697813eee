"""Which environment a skill has under a posture: the proposal, its state, what a run uses.

`inputs_for(skill, target, store, needs)` is the proposal to build: the requirements the user
edited (kept in the store's skill record) when they did, else what the skill declares or what
its scripts were found to import (`needs`), with the Debian packages its scripts' commands
need. `status(skill, posture, store)` compares that with what is stored: `built` when the
environment of those inputs exists, `out of date` when only an older one of the skill does
(its requirements, the image or the interpreter changed since), `missing` when none does, and
`not needed` when the skill needs nothing beyond the image. A run takes the built environment,
or the out-of-date one with a warning (`for_run`); a missing one is only a warning; `built_for`
is that for several postures at once (a comparison).
"""

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from workbench.environments.needs import Needs, read_needs
from workbench.environments.store import Environment, EnvironmentStore, Inputs
from workbench.environments.targets import Target, TargetKind, target_for, target_kind
from workbench.errors import WorkbenchError
from workbench.executors.types import SkillEnvironment
from workbench.postures.model import Posture, PostureId
from workbench.skills.model import Skill


class EnvState(StrEnum):
    """Where a skill's environment for one target stands."""

    BUILT = "built"
    OUT_OF_DATE = "out of date"
    MISSING = "missing"
    NOT_NEEDED = "not needed"


@dataclass(frozen=True, slots=True)
class EnvStatus:
    """A skill's environment under one posture (see the module docstring). `environment` is
    the built one, or for `out of date` the last one built for the skill."""

    state: EnvState
    inputs: Inputs
    needs: Needs
    edited: bool  # the requirements are the user's edit, not the skill's own
    environment: Environment | None = None

    def warning(self, skill_name: str, posture: Posture) -> str:
        """What a run should tell the person about this state ("" when nothing)."""
        build = f"`workbench env build --skill {skill_name} --posture {posture.id}`"
        if self.state is EnvState.OUT_OF_DATE and self.environment is not None:
            return (
                f"the skill's environment {self.environment.env_id} is out of date (its "
                "requirements, image or Python changed since it was built): rebuild it with "
                + build
            )
        if self.state is EnvState.MISSING:
            wanted = ", ".join(self.inputs.python + self.inputs.node + self.inputs.system)
            return f"the skill needs {wanted}, and has no environment built: build it with {build}"
        return ""


def inputs_for(skill: Skill, target: Target, store: EnvironmentStore, needs: Needs) -> Inputs:
    """The proposal to build for `skill` on `target` (see the module docstring)."""
    record = store.skill_record(skill.path)
    python = record.get("python")
    system = record.get("system")
    return Inputs(
        python=tuple(python) if isinstance(python, list) else needs.python,
        node=needs.node,
        system=tuple(system) if isinstance(system, list) else needs.system,
        target=target,
    )


def status(skill: Skill, posture: Posture, store: EnvironmentStore) -> EnvStatus:
    """The skill's environment under `posture` (asks the image or interpreter its Python)."""
    needs = read_needs(skill)
    inputs = inputs_for(skill, target_for(posture, store.targets_cache), store, needs)
    record = store.skill_record(skill.path)
    edited = "python" in record or "system" in record
    container = inputs.target.kind is TargetKind.IMAGE
    needed = bool(inputs.python or inputs.node or (inputs.system and container))
    if (built := store.get(inputs.env_id)) is not None:
        return EnvStatus(EnvState.BUILT, inputs, needs, edited, built)
    built_ids = record.get("built")
    last = built_ids.get(inputs.target.kind) if isinstance(built_ids, dict) else None
    older = store.get(last) if isinstance(last, str) else None
    if older is not None and _same_base(older, inputs.target):
        return EnvStatus(EnvState.OUT_OF_DATE, inputs, needs, edited, older)
    return EnvStatus(EnvState.MISSING if needed else EnvState.NOT_NEEDED, inputs, needs, edited)


def for_run(
    skill: Skill, posture: Posture, store: EnvironmentStore
) -> tuple[Environment | None, str]:
    """The environment a run of `skill` under `posture` uses, and a warning to show (or "")."""
    if target_kind(posture.id) is None:
        return None, ""
    found = status(skill, posture, store)
    warning = found.warning(skill.name, posture)
    if found.state in (EnvState.BUILT, EnvState.OUT_OF_DATE):
        return found.environment, warning
    return None, warning


def _same_base(environment: Environment, target: Target) -> bool:
    """An older environment stands for the skill on a target with the same image tag or
    interpreter path (what changed is its requirements or the base's id)."""
    return environment.inputs.target.base == target.base


def built_for(
    skill: Skill, postures: Iterable[Posture], store: EnvironmentStore
) -> dict[PostureId, SkillEnvironment]:
    """The environment a run of `skill` uses under each of `postures` that has one (a posture
    whose Python cannot be asked gets none: its run says what it lacks)."""
    found: dict[PostureId, SkillEnvironment] = {}
    for posture in postures:
        with contextlib.suppress(WorkbenchError):
            environment, _ = for_run(skill, posture, store)
            if environment is not None:
                found[posture.id] = environment.for_run()
    return found
