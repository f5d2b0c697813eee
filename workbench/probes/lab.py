"""`run_lab`: every probe under every chosen posture, through the run service, into a scoreboard.

The headless API the CLI and the GUI share: it plants the site (`LabSite`), runs each probe as an
ordinary recorded run with small limits (`LAB_LIMITS`, `CPU_TIMEOUT_S`) and its output streamed
nowhere, in sessions that all run at the same time (`_sessions`), judges it (`judge`) against the
host's own evidence, compares it with the posture's promise (`expected`) into a `Scoreboard` in
posture and probe order (`on_cell` hears of each cell as it is judged), and removes everything it
planted, also on errors and Ctrl-C.
"""

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.executors.types import CancelToken, OutputChunk, RunResult, RunStatus, new_run_id
from workbench.postures.containment import runs_as_root, stops_busy_loops_by_cpu_time
from workbench.postures.model import CONTAINER_POSTURES, MIB, Limits, Posture, PostureId
from workbench.probes.catalogue import PROBE_BY_ID, ProbeId, probe_argv
from workbench.probes.expected import expected
from workbench.probes.sessions import LabSessions
from workbench.probes.site import CANARY_ENV, LabSite, SessionFolders, host_route_off_machine
from workbench.probes.verdict import HostEvidence, Judgement, Verdict, judge
from workbench.runs.record import RunOrigin
from workbench.runs.service import RunPlan, RunService

# Small, so the whole lab stays fast. Every probe but `cpu` ends on its own in well under a
# second, so the timeout is generous: a loaded machine must not turn a leak into a timeout.
LAB_LIMITS = Limits(
    timeout_s=10.0,
    memory_bytes=64 * MIB,
    cpus=1.0,
    pids=32,
    cpu_seconds=1,
    open_files=256,
    file_size_bytes=8 * MIB,
    disk_bytes=8 * MIB,
)
GVISOR_MIN_MEMORY = 256 * MIB
# The `cpu` probe's timeout under a posture that only the wall clock stops it in: the busy loop
# spins that long. Where a CPU-time limit is promised, the lab's timeout stays, so a loaded machine
# that slows the loop never lets the clock act first.
CPU_TIMEOUT_S = 1.0
SKILL_DIR_WORD = "SKILL_DIR"  # the write probe's word for "the skill folder as I see it"
# Probes that run alone, each in a session that ends with its run (see `_sessions`), but for
# `LAST_IN_A_CONTAINER` under a container posture, when they run under the shared session's limits.
ALONE = (ProbeId.CPU, ProbeId.MEMORY, ProbeId.FORK, ProbeId.DISK, ProbeId.DAEMON)
# Of those, the ones that end a container session's probes instead, in this order: what each
# leaves behind (files over the disk limit, processes still being reaped) no later run there needs.
LAST_IN_A_CONTAINER = (ProbeId.DISK, ProbeId.FORK)
# Probes whose verdict rests on the app watching a host run from its own process, which other
# runs beside it disturb: whose escapee a process is (`reaper`: a concurrent run's monitor may
# hold it) and how much a run wrote (a disk limit polled from the app's loop).
WATCHED = (ProbeId.DISK, ProbeId.DAEMON)


@dataclass(frozen=True, slots=True)
class Cell:
    """One probe under one posture: the verdict, its evidence and the run that shows it.

    `note` is the posture's own words for the verdict (its control, or the warning that admits
    the leak) when the verdict is the promised one, else empty.
    """

    probe: ProbeId
    posture: PostureId
    verdict: Verdict
    detail: str
    note: str
    expected: Verdict
    run_id: str
    status: str

    @property
    def unexpected(self) -> bool:
        """True when the verdict is not the one the posture's description promises."""
        return self.verdict is not self.expected

    def explanation(self) -> str:
        """The note and the evidence in one phrase, e.g. "network none: connect-failed"."""
        if not self.note or self.note.casefold() in self.detail.casefold():
            return self.detail
        if self.verdict is Verdict.NOT_CONTAINED:
            return f'{self.detail} (the posture warns: "{self.note}")'
        return f"{self.note}: {self.detail}"


@dataclass(frozen=True, slots=True)
class Scoreboard:
    """Every cell of one lab, with the limits it ran under."""

    postures: tuple[PostureId, ...]
    probes: tuple[ProbeId, ...]
    cells: tuple[Cell, ...]
    limits: Limits
    as_root: bool
    interrupted: bool
    seconds: float

    def cell(self, posture_id: PostureId, probe: ProbeId) -> Cell | None:
        """The cell of `probe` under `posture_id`, if it ran."""
        return next((c for c in self.cells if c.posture is posture_id and c.probe is probe), None)

    def unexpected(self) -> list[Cell]:
        """The cells whose verdict differs from the posture's promise."""
        return [cell for cell in self.cells if cell.unexpected]


def scoreboard_to_dict(board: Scoreboard) -> dict[str, Any]:
    """The JSON form of a scoreboard (the CLI wraps it in a schema-versioned document)."""
    return {
        "postures": [p.value for p in board.postures],
        "probes": [
            {"id": p.value, "question": PROBE_BY_ID[p].question, "skill": PROBE_BY_ID[p].skill}
            for p in board.probes
        ],
        "limits": {
            "timeout_s": board.limits.timeout_s,
            "cpu_probe_timeout_s": min(board.limits.timeout_s, CPU_TIMEOUT_S),
            "memory_bytes": board.limits.memory_bytes,
            "pids": board.limits.pids,
            "cpu_seconds": board.limits.cpu_seconds,
            "file_size_bytes": board.limits.file_size_bytes,
            "disk_bytes": board.limits.disk_bytes,
        },
        "as_root": board.as_root,
        "interrupted": board.interrupted,
        "seconds": round(board.seconds, 2),
        "cells": [
            {
                "probe": c.probe.value,
                "posture": c.posture.value,
                "verdict": c.verdict.value,
                "expected": c.expected.value,
                "unexpected": c.unexpected,
                "note": c.note,
                "detail": c.detail,
                "run_id": c.run_id,
                "status": c.status,
            }
            for c in board.cells
        ],
    }


async def run_lab(
    postures: Iterable[PostureId],
    service: RunService,
    *,
    probes: Iterable[ProbeId] = tuple(ProbeId),
    limits: Limits = LAB_LIMITS,
    cancel: CancelToken | None = None,
    on_cell: Callable[[Cell], None] | None = None,
    parent: Path | None = None,
) -> Scoreboard:
    """Run every probe under every posture (see the module doc); `cancel` ends it early.

    `on_cell` is called with each cell as it is judged; `parent` is where the lab's temporary
    folder goes (the system's temporary folder by default).
    """
    chosen, probe_ids = tuple(postures), tuple(probes)
    cancel = cancel or CancelToken()
    started, as_root, cells = time.monotonic(), runs_as_root(), []
    lab_id = new_run_id()  # the history groups the lab's runs under this session

    def judged(cell: Cell) -> None:
        cells.append(cell)
        if on_cell is not None:
            on_cell(cell)

    async with LabSite(parent) as site, LabSessions(service) as sessions:
        plans = [plan for posture_id in chosen for plan in _sessions(posture_id, probe_ids, limits)]
        folders = await asyncio.to_thread(
            lambda: [
                site.session_folders(f"session-{n}", probes)
                for n, (_, _, probes) in enumerate(plans)
            ]
        )
        lab_sessions = [
            _LabSession(
                site, sessions.service if shared else service, posture, probes, place, lab_id
            )
            for (posture, shared, probes), place in zip(plans, folders, strict=True)
        ]
        on_host = [lab for lab in lab_sessions if lab.on_the_host()]
        watched = [lab for lab in on_host if lab.watched_from_the_host()]

        async def host_sessions() -> None:
            async with asyncio.TaskGroup() as group:
                for lab in on_host:
                    if lab not in watched:
                        group.create_task(lab.run(cancel, as_root, judged))
            for lab in watched:
                await lab.run(cancel, as_root, judged)

        async with asyncio.TaskGroup() as group:
            group.create_task(host_sessions())
            for lab in lab_sessions:
                if lab not in on_host:
                    group.create_task(lab.run(cancel, as_root, judged))
    order = {(p, probe): n for n, (p, probe) in enumerate(_grid(chosen, probe_ids))}
    return Scoreboard(
        postures=chosen,
        probes=probe_ids,
        cells=tuple(sorted(cells, key=lambda cell: order[cell.posture, cell.probe])),
        limits=limits,
        as_root=as_root,
        interrupted=cancel.cancelled,
        seconds=time.monotonic() - started,
    )


def _grid(
    postures: tuple[PostureId, ...], probes: tuple[ProbeId, ...]
) -> list[tuple[PostureId, ProbeId]]:
    return [(posture_id, probe) for posture_id in postures for probe in probes]


def _sessions(
    posture_id: PostureId, probes: tuple[ProbeId, ...], limits: Limits
) -> list[tuple[Posture, bool, list[ProbeId]]]:
    """The sessions of `posture_id`: the posture (with limits) each runs under, whether it is
    shared by its runs, and its probes.

    The probes that only look (a secret, files, the network, escapes) run one after another in
    one shared session (`LabSessions`: one container for all of them, not one each). A probe
    that pushes a limit (`ALONE`) runs in a session of its own, so what it does to its sandbox
    never changes another probe's verdict, and so does `daemon`, which asks what survives a run:
    a run ends its session (the container goes with it). Under a container posture, where a
    session costs a container's start (about a second of the machine's CPU, more under gVisor),
    `disk` and `fork` end the shared session instead, after every probe that only looks, when
    they run under its limits. The `WATCHED` probes of the postures on the host run after the
    other host sessions, one at a time; the container sessions go on.
    """

    def posture(probe: ProbeId) -> Posture:
        return replace(Posture(posture_id), limits=_limits_for(posture_id, probe, limits))

    shared = [probe for probe in probes if probe not in ALONE]
    if shared and posture_id in CONTAINER_POSTURES:
        shared += [
            probe
            for probe in LAST_IN_A_CONTAINER
            if probe in probes and posture(probe) == posture(shared[0])
        ]
    sessions = [(posture(shared[0]), True, shared)] if shared else []
    alone = [probe for probe in probes if probe in ALONE and probe not in shared]
    return sessions + [(posture(probe), False, [probe]) for probe in alone]


@dataclass(frozen=True, slots=True)
class _LabSession:
    """The probes that run one after another in one session, in its folders."""

    site: LabSite
    service: RunService
    posture: Posture
    probes: list[ProbeId]
    folders: SessionFolders
    lab_id: str  # the history's session of the whole lab run

    def on_the_host(self) -> bool:
        """True when the session's runs are processes of this machine that the app watches
        from its own process, not a container's."""
        return self.posture.id not in CONTAINER_POSTURES

    def watched_from_the_host(self) -> bool:
        """True for a probe (`WATCHED`) of a posture on the host: it runs after the other host
        sessions, one at a time, with no other host run beside it."""
        return set(self.probes) <= set(WATCHED) and self.on_the_host()

    async def run(self, cancel: CancelToken, as_root: bool, judged: Callable[[Cell], None]) -> None:
        for probe in self.probes:
            if cancel.cancelled:
                return
            cell = await self.cell(probe, cancel, as_root)
            if cell is None:
                return
            judged(cell)

    async def cell(self, probe: ProbeId, cancel: CancelToken, as_root: bool) -> Cell | None:
        """One probe run and its verdict; None when the run was cancelled."""
        site, posture = self.site, self.posture
        token = site.cell_token(posture.id, probe)
        plan = RunPlan(
            skill_name=PROBE_BY_ID[probe].skill,
            skill_dir=self.folders.skill_dir,
            posture=posture,
            argv=probe_argv(posture.id, probe, self.probe_args(probe, token)),
            workspace=self.folders.workspace,
            origin=RunOrigin.LAB,
            session=self.lab_id,
        )
        try:
            done = await self.service.run_once(plan, _discard, cancel)
        except WorkbenchError as error:
            judgement = Judgement(
                Verdict.NOT_APPLICABLE, f"the workbench could not run it: {error}"
            )
            return self.judged(probe, judgement, plan.run_id, RunStatus.ERROR.value, as_root)
        if done.result.status is RunStatus.CANCELLED:
            return None
        host = self.host_evidence(plan, probe, token, done.result)
        judgement = judge(probe, done.result, host)
        return self.judged(probe, judgement, plan.run_id, done.result.status.value, as_root)

    def judged(
        self, probe: ProbeId, judgement: Judgement, run_id: str, status: str, as_root: bool
    ) -> Cell:
        promise = expected(self.posture.id, probe, as_root=as_root)
        return Cell(
            probe=probe,
            posture=self.posture.id,
            verdict=judgement.verdict,
            detail=judgement.detail,
            note=promise.note if judgement.verdict is promise.verdict else "",
            expected=promise.verdict,
            run_id=run_id,
            status=status,
        )

    def probe_args(self, probe: ProbeId, token: str) -> tuple[str, ...]:
        """The arguments after the probe's id; limits come from the session's posture."""
        site, limits = self.site, self.posture.limits
        skill_dir = SKILL_DIR_WORD
        if self.posture.id is PostureId.QUICKJS:  # no environment there: name the folder itself
            skill_dir = str(self.folders.skill_dir)
        args: dict[ProbeId, tuple[str, ...]] = {
            ProbeId.ENV_SECRET: (CANARY_ENV, site.token),
            ProbeId.READ_OUTSIDE: (str(site.canary_file), site.token),
            ProbeId.READ_HOME: (str(site.dotfile), site.token),
            ProbeId.WRITE_OUTSIDE: (str(self.folders.drop), token),
            ProbeId.WRITE_SKILL: (skill_dir, token),
            ProbeId.LOOPBACK: (str(site.listener.port), token),
            ProbeId.RESOLVE: (),
            ProbeId.CPU: ("30",),
            ProbeId.MEMORY: (str(2 * limits.memory_bytes),),
            ProbeId.FORK: (str(2 * limits.pids),),
            ProbeId.DISK: (str(2 * limits.file_size_bytes),),
            ProbeId.RLIMIT: (),
            ProbeId.DAEMON: (token,),
            ProbeId.ESCAPE: (),
        }
        return args[probe]

    def host_evidence(
        self, plan: RunPlan, probe: ProbeId, token: str, result: RunResult
    ) -> HostEvidence:
        site = self.site
        if probe is ProbeId.WRITE_OUTSIDE:
            return HostEvidence(reached=site.take_written(self.folders.drop, probe, token))
        if probe is ProbeId.WRITE_SKILL:
            return HostEvidence(reached=site.take_written(plan.skill_dir, probe, token))
        if probe is ProbeId.LOOPBACK:
            return HostEvidence(reached=site.listener.saw(token))
        if probe is ProbeId.DAEMON:
            survivors = site.end_survivors(token)
            return HostEvidence(reached=survivors > 0 or result.leftover_processes > 0)
        if probe is ProbeId.RESOLVE and not host_route_off_machine():
            return HostEvidence(not_applicable="this machine itself has no route off it")
        return HostEvidence()


def _limits_for(posture_id: PostureId, probe: ProbeId, limits: Limits) -> Limits:
    if probe is ProbeId.CPU and not stops_busy_loops_by_cpu_time(posture_id):
        return replace(limits, timeout_s=min(limits.timeout_s, CPU_TIMEOUT_S))
    if posture_id is PostureId.GVISOR:
        # gVisor's own kernel is charged to the container: a small limit starves the sandbox
        # itself, and a probe would then see the sandbox die instead of its own limit act.
        return replace(limits, memory_bytes=max(limits.memory_bytes, GVISOR_MIN_MEMORY))
    return limits


def _discard(chunk: OutputChunk) -> None:
    del chunk  # probe output is judged from the result, never shown raw
