"""A failed run's diagnosis on the command line, and the exact command that re-runs it.

`print_diagnosis` writes, on stderr, why the run failed (kind and control), the evidence line
with its stream and line number, the suggestion, and, when the diagnosis has a change, the
`workbench run ... --rerun-of RUN -- COMMAND` that re-runs the same command with it (after
`workbench env build` when the change is a built environment). `run_document` is the run's
JSON document with that command in its `diagnosis` (`rerun_command`, an argv list).
"""

import shlex
from typing import Any

from workbench.cli.output import warn
from workbench.postures.model import DEFAULT_LIMITS, MIB, Network, Posture
from workbench.runs.diagnosis import Change, Diagnosis
from workbench.runs.layout import DataLayout
from workbench.runs.record import RunRecord, record_to_dict
from workbench.runs.rerun import had_fresh_workspace, rerun_argv, rerun_posture

# The `workbench run` option of each limit a re-run may change, and how it writes a value.
_OPTIONS = (
    ("timeout_s", "--timeout"),
    ("memory_bytes", "--memory"),
    ("cpus", "--cpus"),
    ("pids", "--pids"),
    ("file_size_bytes", "--file-size"),
    ("cpu_seconds", "--cpu-time"),
)


def run_document(record: RunRecord, layout: DataLayout) -> dict[str, Any]:
    """`record_to_dict(record)`, its diagnosis carrying `rerun_command` when it has a change."""
    document = record_to_dict(record)
    diagnosis = record.diagnosis
    if diagnosis is not None and diagnosis.change is not None and document.get("diagnosis"):
        document["diagnosis"]["rerun_command"] = [
            shlex.join(argv) for argv in rerun_commands(record, diagnosis.change, layout)
        ]
    return document


def print_diagnosis(record: RunRecord, layout: DataLayout) -> None:
    """The diagnosis of `record` on stderr (nothing for a run without one)."""
    diagnosis = record.diagnosis
    if diagnosis is None:
        return
    warn(f"why: {_heading(diagnosis)}")
    warn(f"  {diagnosis.cause}")
    if diagnosis.evidence is not None:
        warn(f"  evidence ({diagnosis.evidence.where}): {diagnosis.evidence.text}")
    if diagnosis.suggestion:
        warn(f"  suggestion: {diagnosis.suggestion}")
    if diagnosis.change is not None and record.result is not None:
        commands = rerun_commands(record, diagnosis.change, layout)
        warn(f"  re-run {diagnosis.change.words()}:")
        for argv in commands:
            warn(f"    {shlex.join(argv)}")


def _heading(diagnosis: Diagnosis) -> str:
    if not diagnosis.control:
        return f"{diagnosis.kind.value} (no control of the posture stopped it)"
    return f"{diagnosis.kind.value}, by the control: {diagnosis.control}"


def rerun_commands(record: RunRecord, change: Change, layout: DataLayout) -> list[list[str]]:
    """The commands that re-run `record` with `change`: `workbench env build` first when the
    change builds the skill's environment, then `workbench run ... --rerun-of RUN`."""
    posture = rerun_posture(record, change)
    run = ["workbench", "run", "--skill", str(record.skill_dir), "--posture", posture.id.value]
    if not had_fresh_workspace(record, layout):
        run += ["--workspace", str(record.workspace)]
    run += _posture_options(posture)
    run += ["--rerun-of", record.run_id, "--", *rerun_argv(record, posture)]
    if change.build_env:
        return [["workbench", "env", "build", "--skill", str(record.skill_dir)], run]
    return [run]


def _posture_options(posture: Posture) -> list[str]:
    options = []
    for name, option in _OPTIONS:
        value = getattr(posture.limits, name)
        if value != getattr(DEFAULT_LIMITS, name):
            options += [option, _size(value) if name.endswith("_bytes") else f"{value:g}"]
    if posture.network is not Network.NONE:
        options += ["--network", posture.network.value]
    for host in posture.fetch_hosts:
        options += ["--allow-host", host]
    return options


def _size(value: int) -> str:
    for unit, scale in (("g", 1024 * MIB), ("m", MIB), ("k", 1024)):
        if value % scale == 0:
            return f"{value // scale}{unit}"
    return str(value)
