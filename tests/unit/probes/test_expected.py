"""The expected scoreboard agrees with what each posture's description says."""

import pytest

from workbench.postures.model import PostureId
from workbench.probes import expected as expected_module
from workbench.probes.catalogue import ProbeId
from workbench.probes.expected import (
    EXPECTED,
    Expect,
    expected,
    leak_phrase_problems,
    posture_text,
)
from workbench.probes.verdict import Verdict


def test_every_posture_has_a_promise_for_every_probe() -> None:
    assert set(EXPECTED) == set(PostureId)
    for posture_id, row in EXPECTED.items():
        assert set(row) == set(ProbeId), posture_id


@pytest.mark.parametrize("as_root", [True, False])
@pytest.mark.parametrize("posture_id", list(PostureId))
def test_every_expected_leak_is_written_in_the_postures_warnings(
    posture_id: PostureId, as_root: bool
) -> None:
    assert leak_phrase_problems(posture_id, as_root=as_root) == []


def test_a_leak_the_description_does_not_admit_is_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    row = dict(EXPECTED[PostureId.DOCKER])
    row[ProbeId.LOOPBACK] = Expect(Verdict.NOT_CONTAINED, "reaches the host's loopback")
    monkeypatch.setitem(expected_module.EXPECTED, PostureId.DOCKER, row)
    problems = leak_phrase_problems(PostureId.DOCKER, as_root=False)
    assert len(problems) == 1
    assert "docker/loopback" in problems[0]


def test_hardened_as_root_keeps_your_own_files_closed_but_not_as_a_user() -> None:
    as_root = expected(PostureId.HARDENED, ProbeId.READ_HOME, as_root=True)
    as_user = expected(PostureId.HARDENED, ProbeId.READ_HOME, as_root=False)
    assert (as_root.verdict, as_user.verdict) == (Verdict.CONTAINED, Verdict.NOT_CONTAINED)
    assert expected(PostureId.LOCAL, ProbeId.READ_HOME, as_root=True).verdict is (
        Verdict.NOT_CONTAINED
    )


def test_posture_text_holds_the_warnings_and_does_not_lines() -> None:
    text = posture_text(PostureId.LOCAL)
    assert "NO SANDBOX" in text
    assert "Block the network." in text
