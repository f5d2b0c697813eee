"""A Docker context with TLS material reaches a real engine over mutual TLS.

The engine here listens only on its Unix socket, so the test puts a TLS endpoint in front of
it: a proxy that demands a client certificate signed by the test's CA and then forwards the
bytes to the socket. The context is written the way `docker context create` writes one.
"""

import contextlib
import hashlib
import json
import os
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli_run import workbench
from workbench.executors.docker.engine import DOCKER_SOCKET

pytestmark = pytest.mark.docker

CONTEXT = "tls-box"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _make_certificates(folder: Path) -> None:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by it."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=ca",
             "-keyout", "ca-key.pem", "-out", "ca.pem", cwd=folder)  # fmt: skip
    (folder / "server.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    (folder / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
                 "-keyout", f"{name}-key.pem", "-out", f"{name}.csr", cwd=folder)  # fmt: skip
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
                 "-CAcreateserial", "-days", "1", "-extfile", f"{name}.ext",
                 "-out", f"{name}.pem", cwd=folder)  # fmt: skip


def _pipe(source: socket.socket, target: socket.socket) -> None:
    """Copy `source` to `target` until either end closes, then end `target`'s writing."""
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            target.sendall(data)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)


def _relay(client: socket.socket) -> None:
    """Forward one TLS connection to the engine's socket both ways, then close both."""
    with client, socket.socket(socket.AF_UNIX) as engine:
        engine.connect(DOCKER_SOCKET)
        back = threading.Thread(target=_pipe, args=(engine, client), daemon=True)
        back.start()
        _pipe(client, engine)
        back.join(timeout=30)


def _serve(listener: socket.socket, tls: ssl.SSLContext) -> None:
    while True:
        try:
            raw, _ = listener.accept()
        except OSError:
            return  # the listener was closed
        try:
            client = tls.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()  # no or a wrong client certificate: the handshake fails
            continue
        threading.Thread(target=_relay, args=(client,), daemon=True).start()


@pytest.fixture
def tls_endpoint(tmp_path: Path, docker_runtimes: set[str]) -> Iterator[tuple[str, Path]]:
    """`tcp://127.0.0.1:PORT` of a mutual-TLS proxy to the engine, and the certificates."""
    certs = tmp_path / "certs"
    certs.mkdir()
    _make_certificates(certs)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(certs / "server.pem", certs / "server-key.pem")
    tls.load_verify_locations(certs / "ca.pem")
    tls.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=_serve, args=(listener, tls), daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{listener.getsockname()[1]}", certs
    finally:
        listener.close()


def _write_context(config: Path, host: str, certs: Path, with_client_cert: bool) -> None:
    """The context as `docker context create` stores it: meta and TLS under the name's hash."""
    context_id = hashlib.sha256(CONTEXT.encode()).hexdigest()
    meta = config / "contexts" / "meta" / context_id
    meta.mkdir(parents=True)
    document = {
        "Name": CONTEXT,
        "Metadata": {},
        "Endpoints": {"docker": {"Host": host, "SkipTLSVerify": False}},
    }
    (meta / "meta.json").write_text(json.dumps(document))
    tls = config / "contexts" / "tls" / context_id / "docker"
    tls.mkdir(parents=True)
    (tls / "ca.pem").write_bytes((certs / "ca.pem").read_bytes())
    if with_client_cert:
        (tls / "cert.pem").write_bytes((certs / "client.pem").read_bytes())
        (tls / "key.pem").write_bytes((certs / "client-key.pem").read_bytes())
    (config / "config.json").write_text(json.dumps({"currentContext": CONTEXT}))


def _workbench(config: Path, *args: str) -> dict[str, Any]:
    """The JSON document `workbench ARGS --json` prints with `config` as DOCKER_CONFIG."""
    env = {**os.environ, "DOCKER_CONFIG": str(config)}
    for name in ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):
        env.pop(name, None)
    # A CA bundle for everything else must not replace the context's CA (docker-py#2433).
    env["REQUESTS_CA_BUNDLE"] = "/etc/ssl/certs/ca-certificates.crt"
    document: dict[str, Any] = json.loads(workbench(env, *args, "--json").stdout)
    return document


def test_a_tls_context_reaches_the_engine(tmp_path: Path, tls_endpoint: tuple[str, Path]) -> None:
    host, certs = tls_endpoint
    config = tmp_path / "docker-config"
    _write_context(config, host, certs, with_client_cert=True)
    document = _workbench(config, "postures")
    assert document["engine"] == f"docker at {host} (context {CONTEXT}, TLS)"
    postures = {p["id"]: p for p in document["postures"]}
    assert postures["docker"]["available"] is True, postures["docker"]
    assert _workbench(config, "image", "status")["exists"] is True


def test_a_tls_context_without_its_client_certificate_is_refused_clearly(
    tmp_path: Path, tls_endpoint: tuple[str, Path]
) -> None:
    host, certs = tls_endpoint
    config = tmp_path / "docker-config"
    _write_context(config, host, certs, with_client_cert=False)
    postures = {p["id"]: p for p in _workbench(config, "postures")["postures"]}
    assert postures["docker"]["available"] is False
    status = _workbench(config, "image", "status")
    assert f"{host} (context {CONTEXT}, TLS) does not answer" in status["engine_error"]
