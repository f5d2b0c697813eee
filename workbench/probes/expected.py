"""The expected scoreboard: what each posture's description promises, probe by probe.

`EXPECTED[posture][probe]` is the verdict the posture's description promises and a note: for
`contained`, the control that does it ("network none"); for `not contained`, the *leak phrase*,
words of that posture's own warnings or "does not" lines that admit the leak, so the lab can
show the sentence a user was warned with; for `not applicable`, why. `leak_phrase_problems()`
checks that every leak phrase really is in the posture's text: an expected leak must be
written where the user reads about the posture, and an unexpected one is a failing test.

One posture depends on who runs the workbench: as root, `hardened` runs commands as a
throwaway uid, which the lab's private dotfile and the user's own 0755 folders are closed to
(`HARDENED_AS_ROOT`); as a user, it runs as that user and reaches them.
"""

import os
from dataclasses import dataclass

from workbench.postures.model import POSTURE_INFO, Posture, PostureId, assess
from workbench.probes.catalogue import ProbeId
from workbench.probes.verdict import Verdict


@dataclass(frozen=True, slots=True)
class Expect:
    """The promised verdict of one cell, and its control, leak phrase or reason."""

    verdict: Verdict
    note: str


def _c(note: str) -> Expect:
    return Expect(Verdict.CONTAINED, note)


def _n(leak_phrase: str) -> Expect:
    return Expect(Verdict.NOT_CONTAINED, leak_phrase)


_DISPLAY = Expect(Verdict.NOT_APPLICABLE, "about display, not the posture")
_YOUR_FILES = "can read, change and delete any of your files"
_ANY_FILE = "can still read and write anything you can"
_THROWAWAY_UID = "runs as a throwaway uid, so your own files are closed to it"
_OTHERS_MAY_READ = "can still read every file other users may read"

_CONTAINER: dict[ProbeId, Expect] = {
    ProbeId.ENV_SECRET: _c("the container gets none of the app's environment"),
    ProbeId.READ_OUTSIDE: _c("only the workspace and the skill folder are mounted"),
    ProbeId.READ_HOME: _c("only the workspace and the skill folder are mounted"),
    ProbeId.WRITE_OUTSIDE: _c("only the workspace and the skill folder are mounted"),
    ProbeId.WRITE_SKILL: _c("read-only mount"),
    ProbeId.LOOPBACK: _c("network none"),
    ProbeId.RESOLVE: _c("network none"),
    ProbeId.CPU: _c("wall-clock timeout (a CPU share slows a busy loop, never stops it)"),
    ProbeId.MEMORY: _c("cgroup memory limit"),
    ProbeId.FORK: _c("cgroup pids limit"),
    ProbeId.DISK: _n("No size limit on the workspace"),
    ProbeId.DAEMON: _c("the run's processes are killed in the container"),
    ProbeId.ESCAPE: _DISPLAY,
}

EXPECTED: dict[PostureId, dict[ProbeId, Expect]] = {
    PostureId.LOCAL: {
        ProbeId.ENV_SECRET: _n("it sees your whole environment"),
        ProbeId.READ_OUTSIDE: _n(_YOUR_FILES),
        ProbeId.READ_HOME: _n(_YOUR_FILES),
        ProbeId.WRITE_OUTSIDE: _n(_YOUR_FILES),
        ProbeId.WRITE_SKILL: _n(_YOUR_FILES),
        ProbeId.LOOPBACK: _n("Block the network"),
        ProbeId.RESOLVE: _n("Block the network"),
        ProbeId.CPU: _c("wall-clock timeout"),
        ProbeId.MEMORY: _n("Limit memory"),
        ProbeId.FORK: _n("the number of processes"),
        ProbeId.DISK: _n("disk use"),
        ProbeId.DAEMON: _c("whole-tree kill"),
        ProbeId.ESCAPE: _DISPLAY,
    },
    PostureId.HARDENED: {
        ProbeId.ENV_SECRET: _c("environment scrubbed"),
        ProbeId.READ_OUTSIDE: _n(_ANY_FILE),
        ProbeId.READ_HOME: _n(_ANY_FILE),
        ProbeId.WRITE_OUTSIDE: _n(_ANY_FILE),
        ProbeId.WRITE_SKILL: _n(_ANY_FILE),
        ProbeId.LOOPBACK: _n("can still reach the network"),
        ProbeId.RESOLVE: _n("can still reach the network"),
        ProbeId.CPU: _c("RLIMIT_CPU"),
        ProbeId.MEMORY: _c("RLIMIT_AS"),
        ProbeId.FORK: _c("RLIMIT_NPROC"),
        ProbeId.DISK: _n("many files can still fill the disk"),
        ProbeId.DAEMON: _c("whole-tree kill"),
        ProbeId.ESCAPE: _DISPLAY,
    },
    PostureId.DOCKER: _CONTAINER,
    PostureId.GVISOR: {
        **_CONTAINER,
        ProbeId.MEMORY: _c("cgroup memory limit (it can take the whole sandbox down)"),
        ProbeId.FORK: _c("RLIMIT_NPROC inside gVisor"),
    },
    PostureId.QUICKJS: {
        ProbeId.ENV_SECRET: _c("no host API: no environment"),
        ProbeId.READ_OUTSIDE: _c("workspace-confined fs"),
        ProbeId.READ_HOME: _c("workspace-confined fs"),
        ProbeId.WRITE_OUTSIDE: _c("workspace-confined fs"),
        ProbeId.WRITE_SKILL: _c("workspace-confined fs"),
        ProbeId.LOOPBACK: _c("no network API (fetch is off)"),
        ProbeId.RESOLVE: _c("no network API (fetch is off)"),
        ProbeId.CPU: _c("RLIMIT_CPU on the worker"),
        ProbeId.MEMORY: _c("QuickJS memory limit"),
        ProbeId.FORK: _c("no process API"),
        ProbeId.DISK: _n("up to 256 MiB into the workspace"),
        ProbeId.DAEMON: _c("no process API"),
        ProbeId.ESCAPE: _DISPLAY,
    },
}

HARDENED_AS_ROOT: dict[ProbeId, Expect] = {
    ProbeId.READ_OUTSIDE: _n(_OTHERS_MAY_READ),
    ProbeId.READ_HOME: _c(_THROWAWAY_UID),
    ProbeId.WRITE_OUTSIDE: _c(_THROWAWAY_UID),
    ProbeId.WRITE_SKILL: _c(_THROWAWAY_UID),
}


def app_is_root() -> bool:
    """True when the workbench runs as root (hardened then uses a throwaway uid)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def expected(posture_id: PostureId, probe: ProbeId, *, as_root: bool) -> Expect:
    """The promised verdict of one cell for a workbench running as root or not."""
    if as_root and posture_id is PostureId.HARDENED and probe in HARDENED_AS_ROOT:
        return HARDENED_AS_ROOT[probe]
    return EXPECTED[posture_id][probe]


def posture_text(posture_id: PostureId) -> str:
    """Everything a user reads about a posture: its summary, "does not" lines and warnings."""
    info = POSTURE_INFO[posture_id]
    warnings = [warning.text for warning in assess(Posture(posture_id))]
    return "\n".join([info.summary, *info.does_not, *warnings])


def leak_phrase_problems(posture_id: PostureId, *, as_root: bool) -> list[str]:
    """Each expected leak of `posture_id` whose phrase is missing from the posture's text."""
    text = posture_text(posture_id).casefold()
    problems = []
    for probe in ProbeId:
        expect = expected(posture_id, probe, as_root=as_root)
        if expect.verdict is Verdict.NOT_CONTAINED and expect.note.casefold() not in text:
            problems.append(
                f"{posture_id.value}/{probe.value}: the expected leak is not in the posture's "
                f"warnings or 'does not' lines (looked for {expect.note!r})"
            )
    return problems
