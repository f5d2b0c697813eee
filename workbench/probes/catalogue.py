"""The probe catalogue: every experiment of the sandbox probe lab, and how to run it.

Each probe is one question answered by a script in a probe skill under `resources/probes/`, run with
its arguments by a command that works wherever `SKILL_DIR` points (the lab session's folder holding
every probe skill: `$SKILL_DIR/SKILL/scripts/probe.sh`, or `probe.js` under `quickjs`); every script
prints one line, `PROBE <id> reached|blocked|started <detail>`, which `probe_lines` parses.
"""

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from workbench.platform.paths import resources_dir
from workbench.postures.model import PostureId


class ProbeId(StrEnum):
    """The lab's experiments, in scoreboard order."""

    ENV_SECRET = "env-secret"
    READ_OUTSIDE = "read-outside"
    READ_HOME = "read-home"
    WRITE_OUTSIDE = "write-outside"
    WRITE_SKILL = "write-skill"
    LOOPBACK = "loopback"
    RESOLVE = "resolve"
    CPU = "cpu"
    MEMORY = "memory"
    FORK = "fork"
    DISK = "disk"
    RLIMIT = "rlimit"
    DAEMON = "daemon"
    ESCAPE = "escape"


@dataclass(frozen=True, slots=True)
class Probe:
    """One experiment: its question in plain words and the skill folder that runs it."""

    id: ProbeId
    question: str
    skill: str


PROBES: tuple[Probe, ...] = (
    Probe(
        ProbeId.ENV_SECRET,
        "Can it see a secret in the workbench's environment?",
        "probe-env-secret",
    ),
    Probe(
        ProbeId.READ_OUTSIDE,
        "Can it read a file outside the workspace?",
        "probe-read-file",
    ),
    Probe(
        ProbeId.READ_HOME,
        "Can it read a private dotfile (mode 0600, like an SSH key) by its path?",
        "probe-read-file",
    ),
    Probe(
        ProbeId.WRITE_OUTSIDE,
        "Can it create a file in a folder outside the workspace?",
        "probe-write-file",
    ),
    Probe(
        ProbeId.WRITE_SKILL,
        "Can it create a file in the skill's own folder?",
        "probe-write-file",
    ),
    Probe(
        ProbeId.LOOPBACK,
        "Can it connect to a listener on the host's loopback (127.0.0.1)?",
        "probe-loopback",
    ),
    Probe(
        ProbeId.RESOLVE,
        "Could a name lookup leave the machine (a route off it)? Nothing is sent.",
        "probe-network-route",
    ),
    Probe(ProbeId.CPU, "What stops a busy loop?", "probe-cpu-spin"),
    Probe(ProbeId.MEMORY, "Can it allocate twice the memory limit?", "probe-memory"),
    Probe(ProbeId.FORK, "Can it start twice the process limit?", "probe-fork"),
    Probe(
        ProbeId.DISK,
        "Can it write twice the file-size limit in many small files?",
        "probe-disk-fill",
    ),
    Probe(ProbeId.RLIMIT, "Can it raise its own CPU, file-size or memory limit?", "probe-rlimit"),
    Probe(ProbeId.DAEMON, "Does a detached background process survive the run?", "probe-daemon"),
    Probe(
        ProbeId.ESCAPE,
        "Is its terminal escape output shown as plain text?",
        "probe-escape",
    ),
)

PROBE_BY_ID: dict[ProbeId, Probe] = {probe.id: probe for probe in PROBES}

_LINE = re.compile(r"^PROBE (\S+) (reached|blocked|started) (\S+)\s*$", re.MULTILINE)


def probe_skills_dir() -> Path:
    """The bundled probe skills (not part of the example catalog)."""
    return resources_dir() / "probes"


def probe_argv(posture_id: PostureId, probe: ProbeId, args: tuple[str, ...]) -> tuple[str, ...]:
    """The command that runs `probe` with `args` under `posture_id` (see the module doc)."""
    scripts = f"$SKILL_DIR/{PROBE_BY_ID[probe].skill}/scripts"
    if posture_id is PostureId.QUICKJS:
        return (f"{scripts}/probe.js", probe.value, *args)
    return ("sh", "-c", f'exec sh "{scripts}/probe.sh" "$@"', "probe", probe.value, *args)


@dataclass(frozen=True, slots=True)
class ProbeLine:
    """One `PROBE` line a probe printed: what happened (`reached`, `blocked`, `started`)."""

    outcome: str
    detail: str


def probe_lines(output: str, probe: ProbeId) -> list[ProbeLine]:
    """The `PROBE` lines `probe` printed in `output`, in order (other probes' are ignored)."""
    return [
        ProbeLine(match.group(2), match.group(3))
        for match in _LINE.finditer(output)
        if match.group(1) == probe.value
    ]
