"""What this machine offers the postures: the Docker engine's runtimes and their arguments.

`docker_engine_runtimes()` asks the engine once for its runtimes and each one's `runtimeArgs`;
`probe_availability()` turns that answer into whether a posture can run here, and why not where
one cannot, with what the engine's runsc arguments change for gVisor: `--network=none` gives a
container no network whatever it asks for (`network_off`).
"""

import gc
import importlib.util
import itertools
import os
import shutil
import sys
import warnings
from typing import Any

from workbench.platform.perl import helper_problem
from workbench.postures.model import Availability, PostureId


class EngineRuntimes(set[str]):
    """The names of the engine's runtimes, and each one's extra arguments (`runtimeArgs`)."""

    def __init__(self, args: dict[str, tuple[str, ...]]) -> None:
        super().__init__(args)
        self.args = args

    @classmethod
    def from_info(cls, runtimes: dict[str, Any]) -> "EngineRuntimes":
        """From the `Runtimes` entry of the engine's info."""
        args = {
            name: tuple(map(str, entry.get("runtimeArgs") or ()))
            for name, entry in runtimes.items()
        }
        return cls(args)


def network_off(runtime_args: tuple[str, ...]) -> bool:
    """True when a runsc with these arguments gives its containers no network at all.

    Debian's runsc needs `--network=none` on some machines; with it, a container has only its
    loopback whatever network mode the engine sets up.
    """
    args = [a.lstrip("-") for a in runtime_args]
    pairs = itertools.pairwise([*args, ""])  # "--network=none" or "--network none"
    return any(a == "network=none" or (a, b) == ("network", "none") for a, b in pairs)


def docker_engine_runtimes(timeout_s: float = 3.0) -> EngineRuntimes | None:
    """The runtimes of the local Docker engine, or None when no engine answers in time."""
    try:
        from docker.errors import DockerException

        from workbench.executors.docker.engine import engine_client
    except ImportError:
        return None
    # docker-py leaks its socket when it cannot connect (docker/docker-py#3356): collect it
    # here, where its ResourceWarning is expected, rather than at some later, random point;
    # once the error is let go of, since its traceback still holds the socket.
    info = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            client = engine_client(timeout_s)
            try:
                info = client.info()
            finally:
                client.close()
        except (DockerException, OSError):
            pass
        gc.collect()
    return None if info is None else EngineRuntimes.from_info(info.get("Runtimes") or {})


def _no_engine_reason() -> str:
    """Why no Docker engine answered: which engine was tried, and how it was chosen."""
    if importlib.util.find_spec("docker") is None:
        if shutil.which("docker"):
            return "The docker Python package is not installed, so no engine can be asked."
        return "Docker is not installed."
    from workbench.executors.docker.engine import EngineUnreachable, resolve_engine

    try:
        engine = resolve_engine()
    except EngineUnreachable as error:  # e.g. a Docker context that names no endpoint
        return str(error)
    return (
        f"The container engine {engine.describe()} does not answer. Is it running, and may "
        "you use its socket?"
    )


def probe_availability(posture_id: PostureId, docker_runtimes: set[str] | None) -> Availability:
    """Whether `posture_id` can run here.

    `docker_runtimes` is the set of runtimes the Docker engine reports, or None when no engine
    answered (see `docker_engine_runtimes`).
    """
    if posture_id is PostureId.LOCAL:
        return Availability(True, "Always available.")
    if posture_id is PostureId.HARDENED:
        if os.name != "posix" or not sys.platform.startswith("linux"):
            return Availability(False, "Needs Linux (rlimits, process groups, /proc).")
        if problem := helper_problem("its exec wrapper, which sets the limits, is a perl program"):
            return Availability(False, problem)
        return Availability(True, "Available on this Linux machine.")
    if posture_id is PostureId.BUBBLEWRAP:
        from workbench.executors.bubblewrap.availability import check
        from workbench.executors.hardened.executor import RUN_UID_BASE

        if not sys.platform.startswith("linux"):
            return Availability(False, "Needs Linux (namespaces, seccomp, /proc).")
        return check(RUN_UID_BASE if os.geteuid() == 0 else None)
    if posture_id is PostureId.QUICKJS:
        if importlib.util.find_spec("quickjs") is None:
            return Availability(False, "The quickjs Python package is not installed.")
        return Availability(True, "The quickjs package is installed.")
    if docker_runtimes is None:
        return Availability(False, _no_engine_reason())
    if posture_id is not PostureId.GVISOR:
        return Availability(True, "The Docker engine answers.")
    if "runsc" not in docker_runtimes:
        return Availability(
            False,
            "The Docker engine has no 'runsc' runtime (gVisor); install runsc and add it to "
            "the engine's daemon.json.",
        )
    engine_args = docker_runtimes.args if isinstance(docker_runtimes, EngineRuntimes) else {}
    if network_off(engine_args.get("runsc", ())):
        return Availability(
            True,
            "The Docker engine answers. Its runsc runs with --network=none: gVisor runs "
            "never get a network, and --network bridge is refused.",
        )
    return Availability(True, "The Docker engine answers.")
