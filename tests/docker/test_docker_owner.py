"""Reaping session containers against the real engine: a live workbench's in another PID
namespace stays, a killed one's in this namespace goes; and the longest name an owner makes
is one the engine takes."""

import contextlib
import secrets
from collections.abc import Iterator

import docker
import pytest

from tests.docker.test_pool import client, exists
from tests.unit.executors.test_docker_owner import ended_owner, namespaced_owner, needs_root
from workbench.executors.docker.owner import SESSION_NAME_PREFIX, name_owner, reap_sessions
from workbench.executors.docker.spec import LABEL_APP
from workbench.postures.model import DEFAULT_IMAGE

__all__ = ["client"]  # a fixture
pytestmark = pytest.mark.docker


@contextlib.contextmanager
def session_container(client: docker.DockerClient, owner: str) -> Iterator[str]:
    """A running session container of `owner` (named as `owner.session_name` names
    one), removed at the end if still there; its id."""
    name = f"{SESSION_NAME_PREFIX}{secrets.token_hex(6)}_{owner.replace(' ', '_')}"
    labels = {LABEL_APP: "1"}
    container = client.containers.run(
        DEFAULT_IMAGE, ["sleep", "120"], name=name, labels=labels, detach=True
    )
    container_id = str(container.id)
    try:
        yield container_id
    finally:
        if exists(client, container_id):
            client.api.remove_container(container_id, force=True)


@needs_root
def test_reaping_keeps_a_live_namespaced_owners_container_and_removes_a_killed_ones(
    client: docker.DockerClient,
) -> None:
    with (
        namespaced_owner() as alive,
        session_container(client, alive) as kept,
        session_container(client, ended_owner()) as killed,
    ):
        reap_sessions(client)
        assert exists(client, kept)
        assert not exists(client, killed)


def test_the_longest_owner_makes_a_name_the_engine_takes(client: docker.DockerClient) -> None:
    host = "h" * 64  # the longest host name, where there is no machine id
    longest = f"{host} {'b' * 36} {2**64 - 1} {2**22} {2**64 - 1}"  # boot id, ns, pid, start
    with session_container(client, longest) as container:
        (listed,) = client.api.containers(filters={"id": container})
        (name,) = listed["Names"]
        assert len(name) > 180 and name_owner(name) == longest
