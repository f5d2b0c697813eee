"""The expected scoreboard is each posture's containment claim, and its text admits every leak."""

import pytest

from workbench.postures import containment
from workbench.postures.containment import Claim, runs_as_root
from workbench.postures.description import POSTURE_INFO, assess
from workbench.postures.model import Posture, PostureId
from workbench.probes.catalogue import ProbeId
from workbench.probes.expected import PROBE_ASPECTS, expected, unadmitted_leaks
from workbench.probes.verdict import Verdict


def test_every_probe_tries_an_aspect_but_the_display_one() -> None:
    assert set(PROBE_ASPECTS) == set(ProbeId)
    assert [probe for probe, aspect in PROBE_ASPECTS.items() if aspect is None] == [ProbeId.ESCAPE]


@pytest.mark.parametrize("as_root", [True, False])
@pytest.mark.parametrize("posture_id", list(PostureId))
def test_every_expected_leak_is_admitted_in_the_postures_text(
    posture_id: PostureId, as_root: bool
) -> None:
    assert unadmitted_leaks(posture_id, as_root=as_root) == []


def test_a_leak_the_description_does_not_admit_is_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    row = dict(containment.CONTAINMENT[PostureId.DOCKER])
    row[containment.Aspect.NETWORK] = Claim(False, "reaches the host's loopback")
    monkeypatch.setitem(containment.CONTAINMENT, PostureId.DOCKER, row)
    problems = unadmitted_leaks(PostureId.DOCKER, as_root=False)
    assert [problem.split(":")[0] for problem in problems] == ["docker/loopback", "docker/resolve"]


def test_hardened_as_root_keeps_your_own_files_closed_but_not_as_a_user() -> None:
    as_root = expected(PostureId.HARDENED, ProbeId.READ_HOME, as_root=True)
    as_user = expected(PostureId.HARDENED, ProbeId.READ_HOME, as_root=False)
    assert (as_root.verdict, as_user.verdict) == (Verdict.CONTAINED, Verdict.NOT_CONTAINED)
    assert expected(PostureId.LOCAL, ProbeId.READ_HOME, as_root=True).verdict is (
        Verdict.NOT_CONTAINED
    )


@pytest.mark.parametrize("posture_id", list(PostureId))
def test_a_leak_is_noted_with_a_sentence_the_user_reads(posture_id: PostureId) -> None:
    info = POSTURE_INFO[posture_id]
    read = {f"Does not {line[0].lower()}{line[1:]}" for line in info.does_not}
    read |= {warning.text for warning in assess(Posture(posture_id))}
    for probe in ProbeId:
        promise = expected(posture_id, probe, as_root=runs_as_root())
        if promise.verdict is Verdict.NOT_CONTAINED:
            assert promise.note in read, f"{posture_id}/{probe}"


def test_local_admits_its_open_network_on_its_card() -> None:
    promise = expected(PostureId.LOCAL, ProbeId.LOOPBACK, as_root=False)
    assert promise == expected(PostureId.LOCAL, ProbeId.RESOLVE, as_root=False)
    assert promise.note == "Does not block the network."
    assert expected(PostureId.DOCKER, ProbeId.LOOPBACK, as_root=False).note == "network none"
