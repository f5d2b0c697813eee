"""Which container engine the workbench talks to, and a docker-py client for it.

One resolution for every caller (posture probing, the docker executor, `workbench image`):
`DOCKER_HOST`, then the current Docker context (with its TLS material), then the local Docker
socket, then Podman's Docker-compatible socket. `engine_client` connects with a bounded timeout and
raises `EngineUnreachable` with a plain message instead of hanging.
"""

import asyncio
import contextlib
import gc
import json
import os
import socket
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException
from docker.tls import TLSConfig

DOCKER_SOCKET = "/var/run/docker.sock"
DEFAULT_TIMEOUT_S = 5.0
_PING_S = 1.0
_api_versions: dict[str, str] = {}  # by engine address: the API version it agreed to


class EngineUnreachable(DockerException):
    """The resolved engine could not be reached or did not answer in time."""


class _EngineApi(docker.APIClient):
    """docker-py's API client, except that the engine's own CA (a context's or
    DOCKER_CERT_PATH's) wins over REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE, which requests would
    otherwise put first and so fail every TLS connection (docker/docker-py#2433)."""

    def merge_environment_settings(self, *args: Any, **kwargs: Any) -> Any:
        settings = super().merge_environment_settings(*args, **kwargs)
        if isinstance(self.verify, str):
            settings["verify"] = self.verify
        return settings


class _EngineClient(docker.DockerClient):
    """A `DockerClient` on `_EngineApi`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.api = _EngineApi(*args, **kwargs)


@dataclass(frozen=True, slots=True)
class ContextTls:
    """The TLS material a Docker context stores for its endpoint (any file may be absent)."""

    folder: Path  # contexts/tls/<id>/docker
    skip_verify: bool  # the context's SkipTLSVerify: encrypt, but do not check the server

    def config(self) -> TLSConfig:
        """docker-py's TLS settings: the CA checks the server, the client pair proves us."""
        ca, cert, key = (self.folder / name for name in ("ca.pem", "cert.pem", "key.pem"))
        return TLSConfig(
            client_cert=(str(cert), str(key)) if cert.is_file() and key.is_file() else None,
            ca_cert=str(ca) if ca.is_file() else None,
            verify=not self.skip_verify,
        )


@dataclass(frozen=True, slots=True)
class Engine:
    """An engine endpoint and where its choice came from."""

    url: str  # unix:///..., tcp://host:port, ssh://user@host
    source: str  # "DOCKER_HOST", "context NAME", "default socket", "Podman socket"
    tls: ContextTls | None = None  # a context's TLS material (DOCKER_HOST's comes from env)

    @property
    def kind(self) -> str:
        """'podman' when the endpoint is Podman's socket, else 'docker'."""
        return "podman" if "podman" in self.url else "docker"

    def describe(self) -> str:
        """One line for people: which engine, where, and why this one."""
        secured = ""
        if self.tls is not None:
            secured = ", TLS, server not verified" if self.tls.skip_verify else ", TLS"
        return f"{self.kind} at {self.url} ({self.source}{secured})"


def _docker_config_dir() -> Path:
    return Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker")


def _context_name() -> str:
    name = os.environ.get("DOCKER_CONTEXT", "")
    if name:
        return name
    try:
        config = json.loads((_docker_config_dir() / "config.json").read_text())
    except (OSError, ValueError):
        return ""
    current = config.get("currentContext", "") if isinstance(config, dict) else ""
    return current if isinstance(current, str) else ""


def _context_engine(name: str) -> Engine:
    """The Docker endpoint of context `name`; `EngineUnreachable` when it has none."""
    contexts = _docker_config_dir() / "contexts"
    for meta in sorted((contexts / "meta").glob("*/meta.json")):
        try:
            data = json.loads(meta.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("Name") != name:
            continue
        endpoint = data.get("Endpoints", {}).get("docker", {})
        host = endpoint.get("Host", "") if isinstance(endpoint, dict) else ""
        if isinstance(host, str) and host:
            tls_folder = contexts / "tls" / meta.parent.name / "docker"
            tls = None
            if tls_folder.is_dir():
                tls = ContextTls(tls_folder, endpoint.get("SkipTLSVerify") is True)
            return Engine(host, f"context {name}", tls)
    raise EngineUnreachable(
        f"The Docker context {name!r} (from DOCKER_CONTEXT or ~/.docker/config.json) was not "
        "found or names no Docker endpoint; see `docker context ls`."
    )


def _podman_sockets() -> list[str]:
    runtime_dir = os.environ.get("XDG_RUNTIME_DIR", "")
    paths = [f"{runtime_dir}/podman/podman.sock"] if runtime_dir else []
    return [*paths, "/run/podman/podman.sock"]


def _socket_answers(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(_PING_S)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def resolve_engine() -> Engine:
    """The engine to use (see the module docstring); reads files but connects to no engine,
    except to choose between a Docker and a Podman socket when both exist."""
    host = os.environ.get("DOCKER_HOST", "")
    if host:
        return Engine(host, "DOCKER_HOST")
    context = _context_name()
    if context and context != "default":
        return _context_engine(context)
    podman = next((path for path in _podman_sockets() if Path(path).is_socket()), None)
    if podman is not None and not _socket_answers(DOCKER_SOCKET):
        return Engine(f"unix://{podman}", "Podman socket")
    return Engine(f"unix://{DOCKER_SOCKET}", "default socket")


def engine_client(timeout_s: float = DEFAULT_TIMEOUT_S) -> docker.DockerClient:
    """A client of the resolved engine that has answered once; `EngineUnreachable` otherwise.

    Every call the client makes later is bounded by `timeout_s` too. The API version an engine
    agreed to is kept for its address (`_api_versions`), so a later client starts without
    asking again (asking cost 13-23 ms of every session start); an engine that no longer
    answers at that version is asked again.
    """
    engine = resolve_engine()
    timeout = max(1, round(timeout_s))
    known = _api_versions.get(engine.url)
    try:
        client = _answering_client(engine, timeout, known)
    except EngineUnreachable as error:
        if known is None or not isinstance(error.__cause__, APIError):
            raise
        del _api_versions[engine.url]  # it answered, but not at that version: it changed
        client = _answering_client(engine, timeout, None)
    _api_versions[engine.url] = client.api.api_version
    return client


def _answering_client(engine: Engine, timeout: int, version: str | None) -> docker.DockerClient:
    """A client of `engine` at API `version` (None: the engine's own) that answered a ping."""
    try:
        if engine.source == "DOCKER_HOST":
            client = _EngineClient.from_env(timeout=timeout, version=version)
        else:
            client = _EngineClient(
                base_url=engine.url,
                timeout=timeout,
                version=version,
                tls=engine.tls.config() if engine.tls is not None else False,
                use_ssh_client=engine.url.startswith("ssh"),
            )
    except DockerException as error:
        _collect_leaked_sockets()
        raise EngineUnreachable(_unreachable(engine, error)) from error
    try:
        client.ping()
    except (DockerException, OSError) as error:
        client.close()
        _collect_leaked_sockets()
        raise EngineUnreachable(_unreachable(engine, error)) from error
    return client


def _collect_leaked_sockets() -> None:
    """docker-py leaks its socket when it cannot connect (docker/docker-py#3356): collect it
    here, where its ResourceWarning is expected, rather than at some later, random point."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def _unreachable(engine: Engine, error: BaseException) -> str:
    return (
        f"The container engine {engine.describe()} does not answer ({_why(error)}). Is it "
        "running, and may you use its socket?"
    )


_OS_REASONS = (
    (FileNotFoundError, "no socket at that path"),
    (ConnectionRefusedError, "the connection was refused"),
    (PermissionError, "permission denied"),
    (TimeoutError, "timed out"),
)


def _why(error: BaseException) -> str:
    """Why a connection failed, in words: from the operating system's error somewhere in
    `error`'s causes and arguments (docker-py nests it three deep), else `error` itself."""
    pending, seen = [error], set()
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        for kind, reason in _OS_REASONS:
            if isinstance(current, kind):
                return reason
        if isinstance(current, OSError) and current.strerror:
            return current.strerror.lower()
        nested = [*current.args, current.__cause__, current.__context__]
        pending += [item for item in nested if isinstance(item, BaseException)]
    return str(error).rstrip(".")


def engine_name() -> str:
    """The engine in use, described for people (or why none could be chosen)."""
    try:
        return resolve_engine().describe()
    except EngineUnreachable as error:
        return str(error)


def missing_image(tag: str) -> str:
    """The message for a sandbox image the engine does not have."""
    return (
        f"The sandbox image {tag} is missing from the engine; build it with "
        "`workbench image build --offline` (no registry needed)."
    )


def close_attached(sock: Any) -> None:
    """Close an attached (exec or container) socket and the HTTP response under it.

    docker-py leaves these open after a non-streaming `exec_start`, and its stream `close()`
    skips the socket once the response was read to its end: one leaked socket per exec.
    """
    response = getattr(sock, "_response", None)
    raw = getattr(sock, "_sock", None)
    if response is not None:
        response.close()
    sock.close()
    if raw is not None:
        raw.close()


async def shut_attached(sock: Any, reader: "asyncio.Future[None] | None") -> None:
    """Shut an attached socket down (which unblocks the thread reading it), wait for that
    thread's `reader` future, then close the socket (`close_attached`)."""
    raw = getattr(sock, "_sock", None)
    if raw is not None:
        with contextlib.suppress(OSError):
            raw.shutdown(socket.SHUT_RDWR)
    if reader is not None:
        await reader
    close_attached(sock)
