"""The containment table: complete, its loosened settings open what they say, and the posture's
card, warnings and preview are read from it."""

import pytest

from workbench.postures.containment import (
    CONTAINMENT,
    Aspect,
    Claim,
    Setting,
    claim,
    claims,
    network_reach,
)
from workbench.postures.description import POSTURE_INFO, assess
from workbench.postures.model import Network, Posture, PostureId


def test_every_posture_claims_every_aspect_as_a_user_and_as_root() -> None:
    assert set(CONTAINMENT) == set(PostureId)
    for posture_id, row in CONTAINMENT.items():
        assert set(row) == set(Aspect), posture_id
        for as_root in (False, True):
            assert all(isinstance(c, Claim) for c in claims(posture_id, as_root=as_root))


def test_only_a_contained_claim_names_the_setting_that_opens_it() -> None:
    for posture_id in PostureId:
        for found in claims(posture_id, as_root=False) + claims(posture_id, as_root=True):
            assert (found.unless is None) == (not found.opened), (posture_id, found)
            assert found.unless is None or found.contained, (posture_id, found)


@pytest.mark.parametrize("posture_id", list(PostureId))
def test_the_card_is_the_claims_lines(posture_id: PostureId) -> None:
    info = POSTURE_INFO[posture_id]
    contained = {c.card for c in claims(posture_id) if c.card and c.contained}
    leaked = {c.card for c in claims(posture_id) if c.card and not c.contained}
    assert contained <= set(info.guarantees) and leaked <= set(info.does_not)
    assert not set(info.guarantees) & set(info.does_not)


@pytest.mark.parametrize("posture_id", list(PostureId))
def test_every_claims_warning_is_shown_before_a_run(posture_id: PostureId) -> None:
    shown = assess(Posture(posture_id))
    assert all(c.warning in shown for c in claims(posture_id) if c.warning is not None)
    assert len(shown) == len(set(shown))  # one sentence said by several claims shows once


def test_an_extra_mount_opens_the_files_of_a_container_and_says_so() -> None:
    posture = Posture(PostureId.DOCKER, extra_mounts=("/home/me",))
    [mounted] = [w.text for w in assess(posture) if w.loosened]
    assert mounted == "Extra host folder mounted: /home/me."
    assert claim(PostureId.DOCKER, Aspect.HOST_FILES).unless is Setting.EXTRA_MOUNTS


def test_the_hardened_claims_on_your_files_depend_on_who_runs_the_workbench() -> None:
    as_user = claim(PostureId.HARDENED, Aspect.PRIVATE_FILES, as_root=False)
    as_root = claim(PostureId.HARDENED, Aspect.PRIVATE_FILES, as_root=True)
    assert (as_user.contained, as_root.contained) == (False, True)
    assert not claim(PostureId.HARDENED, Aspect.HOST_FILES, as_root=True).contained


@pytest.mark.parametrize(
    ("posture_id", "network", "hosts", "reach"),
    [
        (PostureId.DOCKER, Network.NONE, (), "off"),
        (PostureId.GVISOR, Network.BRIDGE, (), "ON (bridge)"),
        (PostureId.QUICKJS, Network.NONE, (), "off"),
        (PostureId.QUICKJS, Network.NONE, ("a.org", "b.org"), "fetch only, to a.org, b.org"),
        (PostureId.LOCAL, Network.BRIDGE, (), "not blocked: the host's network"),
        (PostureId.HARDENED, Network.NONE, (), "not blocked: the host's network"),
    ],
)
def test_the_network_a_run_had_follows_the_claim_and_its_setting(
    posture_id: PostureId, network: Network, hosts: tuple[str, ...], reach: str
) -> None:
    assert network_reach(posture_id, network, hosts) == reach
