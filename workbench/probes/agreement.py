"""How often the capability preview predicts the real run, for every probe and bundled example.

`measure(service, postures)` runs the probe lab and previews each cell's very command (with its
limits) while the lab's site exists, then runs each bundled example's own command under each
posture (the containers' runs beside the host's) and previews that; each `Pair` holds the
preview's verdict and the real outcome in the preview's terms: `cannot-run`, `partly-blocked`
(the lab found it contained, or a control of the posture stopped or refused part of the run) or
`runs` (it ran, or failed for its own reasons).
Cells the lab cannot judge are left out, and so are runs on this computer of a skill that would
reach the internet or write outside its workspace and runs the workbench could not start (their
pairs say why); `Agreement.rate()` is the share that agree.
"""

import asyncio
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.authoring.preview import CapabilityPreview, Verdict, preview
from workbench.errors import WorkbenchError
from workbench.executors.types import CancelToken, OutputChunk, RunStatus, new_run_id
from workbench.platform.paths import example_skills_dir
from workbench.postures.model import CONTAINER_POSTURES, Posture, PostureId
from workbench.probes.lab import Cell, run_lab
from workbench.probes.verdict import Verdict as ProbeVerdict
from workbench.runs.compare import shell_command
from workbench.runs.diagnosis import Kind, refused_in_passing
from workbench.runs.rerun import posture_from_dict
from workbench.runs.service import CompletedRun, RunPlan, RunService
from workbench.skills import Skill, discover, load_skill
from workbench.skills.scripts import Capability

EXAMPLE_TIMEOUT_S = 3.0  # a runaway example is stopped by it as surely as by the default
# What a measured run must never do to this computer: such a skill runs only in a container.
_NEVER_ON_THE_HOST = {
    Capability.NETWORK: "reach the internet",
    Capability.WRITE_OUTSIDE: "write outside its workspace",
}


@dataclass(frozen=True, slots=True)
class Pair:
    """One skill's command under one posture: the preview's verdict, what happened (None when
    it was not measured), and why in a few words."""

    skill: str
    posture: PostureId
    predicted: Verdict
    actual: Verdict | None
    evidence: str

    @property
    def agrees(self) -> bool:
        """Whether the preview predicted what happened."""
        return self.actual is self.predicted


@dataclass(frozen=True, slots=True)
class Agreement:
    """Every pair of one measurement."""

    pairs: tuple[Pair, ...]

    def measured(self) -> list[Pair]:
        """The pairs with a real outcome to compare with."""
        return [pair for pair in self.pairs if pair.actual is not None]

    def rate(self) -> float:
        """The share of the measured pairs where the preview agrees with the run."""
        measured = self.measured()
        return sum(pair.agrees for pair in measured) / len(measured) if measured else 0.0

    def lines(self) -> list[str]:
        """The measurement as text: one line per pair, then the rate."""
        lines = []
        for pair in self.pairs:
            actual = pair.actual.value if pair.actual is not None else "not measured"
            mark = "" if pair.actual is None else ("ok  " if pair.agrees else "MISS")
            lines.append(
                f"{mark:<4} {pair.skill:<24} {pair.posture.value:<9} predicted "
                f"{pair.predicted.value:<15} actual {actual:<15} {pair.evidence}"
            )
        measured = self.measured()
        agree = sum(pair.agrees for pair in measured)
        lines.append(f"agreement: {agree} of {len(measured)} pairs ({self.rate():.0%})")
        return lines


async def measure(
    service: RunService,
    postures: Iterable[PostureId],
    cancel: CancelToken | None = None,
    *,
    examples: Sequence[Path] | None = None,
    lab: bool = True,
) -> Agreement:
    """Measure the preview against the probe lab (unless not `lab`) and the skills under
    `examples` (the bundled examples by default); see the module doc."""
    chosen = tuple(postures)
    cancel = cancel or CancelToken()
    pairs: list[Pair] = []

    def on_cell(cell: Cell) -> None:
        pairs.append(_probe_pair(service, cell))

    if lab:
        await run_lab(chosen, service, cancel=cancel, on_cell=on_cell)
    skills = discover(examples if examples is not None else [example_skills_dir()])
    pairs += await _example_pairs(service, skills, chosen, cancel)
    return Agreement(tuple(pairs))


def verdict_of(result: CapabilityPreview, posture_id: PostureId) -> Verdict:
    """The preview's verdict for one posture."""
    return next(p.verdict for p in result.predictions if p.posture is posture_id)


def _probe_pair(service: RunService, cell: Cell) -> Pair:
    record = service.history.get(cell.run_id)
    skill = load_skill(record.skill_dir)
    limits = posture_from_dict(record.result["card"]["posture"]).limits if record.result else None
    result = preview(skill, shlex.join(record.argv), limits or Posture(cell.posture).limits)
    predicted = verdict_of(result, cell.posture)
    name = f"{record.skill_name} ({cell.probe.value})"  # the probe's, not the lab's folder
    if cell.verdict is ProbeVerdict.NOT_APPLICABLE:
        return Pair(name, cell.posture, predicted, None, cell.detail)
    contained = cell.verdict is ProbeVerdict.CONTAINED
    actual = Verdict.PARTLY_BLOCKED if contained else Verdict.RUNS
    return Pair(name, cell.posture, predicted, actual, f"lab: {cell.verdict.value}, {cell.detail}")


async def _example_pairs(
    service: RunService, skills: list[Skill], postures: tuple[PostureId, ...], cancel: CancelToken
) -> list[Pair]:
    """The examples' pairs, in `skills`' then `postures`' order. The host's runs go one at a
    time, one skill after another (a host run beside another may take its escapee, see
    `probes.lab`); beside them go the container postures' runs, one skill's at a time."""
    on_host = [posture_id for posture_id in postures if posture_id not in CONTAINER_POSTURES]
    contained = [posture_id for posture_id in postures if posture_id in CONTAINER_POSTURES]
    done: list[tuple[int, Pair]] = []  # each with its skill's place in `skills`

    async def host_pairs() -> None:
        for index, skill in enumerate(skills):
            for posture_id in on_host:
                if cancel.cancelled:
                    return
                done.append((index, await _example_pair(service, skill, posture_id, cancel)))

    async def container_pairs() -> None:
        for index, skill in enumerate(skills):
            if cancel.cancelled:
                return
            async with asyncio.TaskGroup() as group:
                runs = [
                    group.create_task(_example_pair(service, skill, p, cancel)) for p in contained
                ]
            done.extend((index, run.result()) for run in runs)

    async with asyncio.TaskGroup() as group:
        group.create_task(host_pairs())
        group.create_task(container_pairs())
    done.sort(key=lambda placed: (placed[0], postures.index(placed[1].posture)))
    return [pair for _, pair in done]


async def _example_pair(
    service: RunService, skill: Skill, posture_id: PostureId, cancel: CancelToken
) -> Pair:
    command = skill.command or ""
    posture = Posture(posture_id).with_limits(timeout_s=EXAMPLE_TIMEOUT_S)
    result = preview(skill, command, posture.limits)
    predicted = verdict_of(result, posture_id)
    if posture_id in (PostureId.LOCAL, PostureId.HARDENED):
        for capability, what in _NEVER_ON_THE_HOST.items():
            if any(f.capability is capability for f in result.findings):
                return Pair(skill.name, posture_id, predicted, None, f"not run: it would {what}")
    try:
        argv = shell_command(posture_id, command)
    except WorkbenchError:  # its quoting is broken: the shell says so
        argv = ("sh", "-c", command)
    run_id = new_run_id()  # a fresh workspace of its own, as every fresh run gets
    workspace = service.layout.fresh_workspace(run_id)
    plan = RunPlan(skill.name, skill.path, posture, argv, workspace, run_id=run_id)
    try:
        done = await service.run_once(plan, _discard, cancel)
    except WorkbenchError as error:  # e.g. its session could not start: nothing to measure
        return Pair(
            skill.name, posture_id, predicted, None, f"the workbench could not run it: {error}"
        )
    actual, evidence = run_outcome(done)
    return Pair(skill.name, posture_id, predicted, actual, evidence)


def run_outcome(done: CompletedRun) -> tuple[Verdict, str]:
    """What a run did, in the preview's terms, and why (see the module doc)."""
    result, diagnosis = done.result, done.record.diagnosis
    if result.status is RunStatus.ERROR or (diagnosis and diagnosis.kind is Kind.NOT_RUN):
        return Verdict.CANNOT_RUN, f"{result.status.value}: {result.cause}"
    if diagnosis is not None:
        verdict = Verdict.PARTLY_BLOCKED if diagnosis.sandbox else Verdict.RUNS
        return verdict, f"{diagnosis.kind.value}: {diagnosis.control or result.cause}"
    refused = refused_in_passing(result, done.record.workspace)
    if refused is not None:
        return Verdict.PARTLY_BLOCKED, f"ok, but {refused.kind.value}: {refused.control}"
    if "background process" in result.cause:
        return Verdict.PARTLY_BLOCKED, f"ok, but {result.cause}"
    return Verdict.RUNS, result.cause


def _discard(chunk: OutputChunk) -> None:
    del chunk
