"""Network against the real engine: a listener on the host, reached only with --network bridge.

A listener on the host (0.0.0.0, a free port) records what arrives. A script of the skill tries
the host's loopback (127.0.0.1 in a container is the container's own) and the engine's bridge
gateway, the host's address on the container network. Under the default posture both fail and
nothing arrives; with `--network bridge` the gateway is reached, and the posture result warns.
gVisor on an engine whose runsc runs with --network=none cannot give a network: asking for one
is refused with the reason.
"""

import contextlib
import ipaddress
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.docker.test_docker_executor import Session, refused_at_start
from workbench.executors.availability import EngineRuntimes, network_off
from workbench.executors.docker.engine import engine_client
from workbench.executors.docker.executor import DockerExecutor
from workbench.executors.types import RunResult, RunStatus, SessionSpec
from workbench.postures.model import Network, Posture, PostureId

pytestmark = [pytest.mark.docker, pytest.mark.timeout(90)]

CONNECT = """
import socket, sys
token, port = sys.argv[1], int(sys.argv[2])
for host in sys.argv[3:]:
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            s.sendall(token.encode())
        print(host, "connected")
    except OSError as error:
        print(host, "failed", type(error).__name__)
"""


class Listener:
    """A TCP listener on every host address that keeps what each connection sends."""

    def __init__(self) -> None:
        self.server = socket.create_server(("0.0.0.0", 0))  # every address: the bridge's too
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                self.received.append(conn.recv(100))

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.server.close()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


@pytest.fixture(scope="module")
def gateway(docker_runtimes: set[str]) -> str:
    """The engine's bridge gateway: the host as containers on the bridge see it.

    Engines that list only the bridge's subnet leave the gateway out: it is then the host's own
    address in that subnet.
    """
    client = engine_client()
    try:
        config = client.networks.get("bridge").attrs["IPAM"]["Config"][0]
    finally:
        client.close()
    if "Gateway" in config:
        return str(config["Gateway"])
    subnet = ipaddress.ip_network(config["Subnet"])
    (address,) = {
        address.address
        for addresses in psutil.net_if_addrs().values()
        for address in addresses
        if address.family == socket.AF_INET and ipaddress.ip_address(address.address) in subnet
    }
    return address


def connect(session: Session, listener: Listener, token: str, *hosts: str) -> RunResult:
    script = session.skill_dir / "connect.py"
    script.write_text(CONNECT)
    script.chmod(0o644)
    ran = session.run("python3", "/mnt/skills/demo/connect.py", token, str(listener.port), *hosts)
    assert ran.result.status is RunStatus.OK, ran.result.stderr.text
    return ran.result


@contextlib.contextmanager
def with_session(posture: Posture) -> Iterator[Session]:
    session = Session(posture)
    try:
        yield session
    finally:
        session.close()


@pytest.fixture(params=["docker", pytest.param("gvisor", marks=pytest.mark.gvisor)])
def default_posture(request: pytest.FixtureRequest, docker_runtimes: set[str]) -> Iterator[Session]:
    if request.param == "gvisor" and "runsc" not in docker_runtimes:
        pytest.skip("the engine has no runsc runtime")
    with with_session(Posture(PostureId(request.param))) as session:
        yield session


def test_the_default_posture_reaches_neither_the_host_loopback_nor_the_bridge(
    default_posture: Session, listener: Listener, gateway: str
) -> None:
    result = connect(default_posture, listener, "default-token", "127.0.0.1", gateway)
    lines = result.stdout.text.splitlines()
    assert lines[0].startswith("127.0.0.1 failed ")
    assert lines[1].startswith(f"{gateway} failed ")
    assert b"default-token" not in listener.received
    assert not any(w.loosened for w in result.warnings)


def test_network_bridge_reaches_the_host_and_the_posture_warns(
    docker_runtimes: set[str], listener: Listener, gateway: str
) -> None:
    with with_session(Posture(PostureId.DOCKER, network=Network.BRIDGE)) as session:
        result = connect(session, listener, "bridge-token", "127.0.0.1", gateway)
        lines = result.stdout.text.splitlines()
        assert lines[0].startswith("127.0.0.1 failed ")  # the container's own loopback
        assert lines[1] == f"{gateway} connected", (
            "the host's firewall may drop connections from the docker0 bridge"
        )
        assert b"bridge-token" in listener.received
        loosened = [w.text for w in result.warnings if w.loosened]
        assert loosened == ["Network is ON: the skill can reach the network."]
        assert ("Network off (is bridge)", False) in result.card.checks


@pytest.mark.gvisor
def test_gvisor_asked_for_a_network_says_whether_its_runtime_can_give_one(
    docker_runtimes: set[str], listener: Listener, gateway: str
) -> None:
    if "runsc" not in docker_runtimes:
        pytest.skip("the engine has no runsc runtime")
    assert isinstance(docker_runtimes, EngineRuntimes)
    posture = Posture(PostureId.GVISOR, network=Network.BRIDGE)
    if not network_off(docker_runtimes.args["runsc"]):  # an engine whose runsc has networking
        with with_session(posture) as session:
            result = connect(session, listener, "gvisor-token", gateway)
            assert result.stdout.text == f"{gateway} connected\n"
        return
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "skill").mkdir()
        (base / "ws").mkdir()
        executor = DockerExecutor(posture)
        spec = SessionSpec(base / "skill", "demo", base / "ws", base / "runs")
        refused = refused_at_start(executor, spec)
    assert str(refused).startswith(
        "Network cannot be turned on under this engine's gVisor runtime: its runsc runs with "
        "--network=none"
    )
    assert executor.container_id == ""
