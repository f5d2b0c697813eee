"""The expected scoreboard: the verdict each posture's containment claim promises, probe by probe.

Every probe tries one aspect of the containment table (`PROBE_ASPECTS`: `read-home` tries your
private files, `loopback` and `resolve` the network, `fork` the process count, ...), so the
verdict a posture promises is its claim on that aspect (`postures.containment.claim`), for a
workbench running as root or not: `contained` with the control that does it as the note, or
`not contained` with the sentence of the posture's text that admits it, so the lab can show the
words a user was warned with. `escape` is about the workbench's display, not the posture.
`unadmitted_leaks()` lists the expected leaks the posture's text does not admit.
"""

from dataclasses import dataclass

from workbench.postures.containment import Aspect, admission, claim
from workbench.postures.model import PostureId
from workbench.probes.catalogue import ProbeId
from workbench.probes.verdict import Verdict

PROBE_ASPECTS: dict[ProbeId, Aspect | None] = {
    ProbeId.ENV_SECRET: Aspect.SECRETS,
    ProbeId.READ_OUTSIDE: Aspect.HOST_FILES,
    ProbeId.READ_HOME: Aspect.PRIVATE_FILES,
    ProbeId.WRITE_OUTSIDE: Aspect.WRITE_OUTSIDE,
    ProbeId.WRITE_SKILL: Aspect.SKILL_FOLDER,
    ProbeId.LOOPBACK: Aspect.NETWORK,
    ProbeId.RESOLVE: Aspect.NETWORK,
    ProbeId.CPU: Aspect.CPU,
    ProbeId.MEMORY: Aspect.MEMORY,
    ProbeId.FORK: Aspect.PROCESSES,
    ProbeId.DISK: Aspect.DISK,
    ProbeId.RLIMIT: Aspect.LIMITS,
    ProbeId.DAEMON: Aspect.DAEMONS,
    ProbeId.ESCAPE: None,  # about display, not the posture
}


@dataclass(frozen=True, slots=True)
class Expect:
    """The promised verdict of one cell, and its control, admission or reason."""

    verdict: Verdict
    note: str


def expected(posture_id: PostureId, probe: ProbeId, *, as_root: bool) -> Expect:
    """The promised verdict of one cell for a workbench running as root or not."""
    aspect = PROBE_ASPECTS[probe]
    if aspect is None:
        return Expect(Verdict.NOT_APPLICABLE, "about display, not the posture")
    found = claim(posture_id, aspect, as_root=as_root)
    if not found.applies:
        return Expect(Verdict.NOT_APPLICABLE, found.why)
    if found.contained:
        return Expect(Verdict.CONTAINED, found.why)
    return Expect(Verdict.NOT_CONTAINED, admission(found))


def unadmitted_leaks(posture_id: PostureId, *, as_root: bool) -> list[str]:
    """Each expected leak of `posture_id` that no card line or warning of it admits."""
    return [
        f"{posture_id.value}/{probe.value}: nothing in the posture's text admits the leak"
        for probe in ProbeId
        if (promise := expected(posture_id, probe, as_root=as_root)).verdict
        is Verdict.NOT_CONTAINED
        and not promise.note
    ]
