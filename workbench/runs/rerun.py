"""Re-running a diagnosed run with a change: the same command, the posture the change makes.

`rerun_posture(record, change)` is the posture the run really had (from its card, its limits
and network included) with the diagnosis's `Change` made (an empty `Change()` re-runs it as it
was); `rerun_plan` is the whole plan: the same skill and command, the same workspace folder
(or, for a run that had a fresh one, a new fresh one), the skill's environment for the posture
as a new run would take it, and `rerun_of` naming the run, so History links the two. A re-run
that moves to or from QuickJS gets the command in the form that posture takes (`rerun_argv`).
"""

import dataclasses
import shlex
from typing import Any

from workbench.environments.resolve import for_run
from workbench.errors import WorkbenchError
from workbench.executors.types import SkillEnvironment, new_run_id
from workbench.postures.model import Limits, Network, Posture, PostureId
from workbench.runs.compare import shell_command
from workbench.runs.diagnosis import Change
from workbench.runs.layout import DataLayout
from workbench.runs.record import RunRecord
from workbench.runs.service import RunPlan
from workbench.skills.catalog import load_skill


def posture_from_dict(item: dict[str, Any]) -> Posture:
    """A `Posture` back from its JSON form (a run card's); unknown keys are left out."""
    limit_names = {f.name for f in dataclasses.fields(Limits)}
    limits = Limits(**{k: v for k, v in item.get("limits", {}).items() if k in limit_names})
    return Posture(
        PostureId(item["id"]),
        limits=limits,
        network=Network(item.get("network", Network.NONE)),
        env_allow=tuple(item.get("env_allow", Posture(PostureId.LOCAL).env_allow)),
        confirmed_secret_env=tuple(item.get("confirmed_secret_env", ())),
        extra_mounts=tuple(item.get("extra_mounts", ())),
        run_as_root=bool(item.get("run_as_root", False)),
        image=str(item.get("image", Posture(PostureId.DOCKER).image)),
        fetch_hosts=tuple(item.get("fetch_hosts", ())),
        allow_hosts=tuple(item.get("allow_hosts", ())),
    )


def rerun_posture(record: RunRecord, change: Change) -> Posture:
    """The posture of the re-run: the run's own as its card recorded it (the posture's safe
    defaults for a run that has no card), with `change` made."""
    card = (record.result or {}).get("card") or {}
    posture = posture_from_dict(card.get("posture") or {"id": record.posture})
    return change.apply(posture)


def rerun_argv(record: RunRecord, posture: Posture) -> tuple[str, ...]:
    """The command for the re-run under `posture`: the run's own, written as QuickJS takes it
    (a .js file and its arguments) or as a shell takes it (`sh -c TEXT`) when the re-run
    moves between the two."""
    argv = record.argv
    was_quickjs = record.posture == PostureId.QUICKJS
    if was_quickjs == (posture.id is PostureId.QUICKJS):
        return argv
    shell = len(argv) == 3 and argv[:2] == ("sh", "-c")
    return shell_command(posture.id, argv[2] if shell else shlex.join(argv))


def had_fresh_workspace(record: RunRecord, layout: DataLayout) -> bool:
    """Whether the run had a fresh folder made for it (rather than one the user chose)."""
    return record.workspace == layout.fresh_workspace(record.run_id).absolute()


def rerun_environment(
    record: RunRecord, posture: Posture, layout: DataLayout
) -> SkillEnvironment | None:
    """The skill's environment for `posture` that a new run of it takes (`for_run`); None
    when it has none, or its folder cannot be read any more (the run then says what it lacks)."""
    try:
        found, _ = for_run(load_skill(record.skill_dir), posture, layout.environment_store())
    except WorkbenchError:
        return None
    return found.for_run() if found else None


def rerun_plan(record: RunRecord, change: Change, layout: DataLayout) -> RunPlan:
    """The plan that re-runs `record`'s command with `change` (see the module doc)."""
    run_id = new_run_id()
    fresh = had_fresh_workspace(record, layout)
    posture = rerun_posture(record, change)
    return RunPlan(
        record.skill_name,
        record.skill_dir,
        posture,
        rerun_argv(record, posture),
        layout.fresh_workspace(run_id) if fresh else record.workspace,
        run_id=run_id,
        environment=rerun_environment(record, posture, layout),
        rerun_of=record.run_id,
    )
