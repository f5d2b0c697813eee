"""The Python a skill environment is built for: the one its posture will run.

A container posture runs the image's `python3`: the image is asked once per image id, in a
throwaway container without network, and the answer is remembered in the environments folder's
`targets.json`. A process posture runs the `python3` on the host's PATH (bubblewrap the system's
/usr/bin/python3, the only one its sandbox holds), asked each time (a few milliseconds). QuickJS
runs no Python and has no environment. The answer is a `Target`: Python version, machine and
glibc (which wheels fit), and what the environment is built on (the image and its id, or the
host interpreter and its exact version), which is part of the cache key. docker-py is imported
only when an image is asked, so the app's start never loads it here.
"""

import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path

from workbench.errors import EnvironmentBuildError
from workbench.postures.model import CONTAINER_POSTURES, Posture, PostureId

PROBE = (
    "import platform, sys; print('%d.%d' % sys.version_info[:2], platform.machine(), "
    "platform.libc_ver()[1] or '-', sys.executable, sys.version.split()[0])"
)
PROBE_S = 60
SYSTEM_PYTHON = "/usr/bin/python3"


class TargetKind(StrEnum):
    """Where the environment's Python runs."""

    IMAGE = "image"  # the container postures' image
    HOST = "host"  # this computer's python3 (local, hardened and other process postures)


@dataclass(frozen=True, slots=True)
class Target:
    """One interpreter to build for (see the module docstring). `base` is the image tag or
    the host interpreter's path; `base_id` the image id or that interpreter's exact version."""

    kind: TargetKind
    python: str  # "3.11"
    machine: str  # "x86_64"
    libc: str  # glibc version, "2.36"; "" when not glibc
    interpreter: str  # the interpreter's path as the command sees it
    base: str
    base_id: str

    @property
    def platform(self) -> str:
        """The platform wheels must fit, as uv names it (`x86_64-manylinux_2_36`)."""
        if self.libc:
            major, _, minor = self.libc.partition(".")
            return f"{self.machine}-manylinux_{major}_{minor}"
        return f"{self.machine}-unknown-linux-gnu"

    def describe(self) -> str:
        """`Python 3.11 of image skill-workbench-sandbox:latest (fc4f910a4a73)` and the like."""
        if self.kind is TargetKind.IMAGE:
            short = self.base_id.removeprefix("sha256:")[:12]
            return f"Python {self.python} of image {self.base} ({short})"
        return f"Python {self.base_id} at {self.base} (this computer)"


def target_kind(posture_id: PostureId) -> TargetKind | None:
    """Which Python a posture runs; None for QuickJS, which runs none."""
    if posture_id in CONTAINER_POSTURES:
        return TargetKind.IMAGE
    return None if posture_id is PostureId.QUICKJS else TargetKind.HOST


def target_for(posture: Posture, cache: Path) -> Target:
    """The target of `posture` (`EnvironmentBuildError` for QuickJS or when it cannot be asked)."""
    kind = target_kind(posture.id)
    if kind is None:
        raise EnvironmentBuildError(
            "The quickjs posture runs JavaScript in its own engine: it has no environment to build."
        )
    if kind is TargetKind.IMAGE:
        return image_target(posture.image, cache)
    if posture.id is PostureId.BUBBLEWRAP and Path(SYSTEM_PYTHON).exists():
        return host_target(SYSTEM_PYTHON)  # its sandbox binds the system's /usr, nothing else
    return host_target()


def host_target(python: str = "python3") -> Target:
    """`python` (by default the `python3` on this computer's PATH), as a process posture runs
    it."""
    found = shutil.which(python)
    if found is None:
        raise EnvironmentBuildError(
            "No python3 on this computer's PATH to build an environment for."
        )
    try:
        answer = subprocess.run(
            [found, "-c", PROBE],
            capture_output=True,
            text=True,
            timeout=PROBE_S,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as error:
        raise EnvironmentBuildError(f"Could not ask {found} its version: {error}") from error
    python, machine, libc, _, version = answer.split()
    return Target(TargetKind.HOST, python, machine, libc.strip("-"), found, found, version)


def image_target(image: str, cache: Path) -> Target:
    """The image's `python3`, asked once per image id (see the module docstring)."""
    from docker.errors import DockerException, ImageNotFound
    from requests.exceptions import RequestException

    from workbench.executors.docker.engine import engine_client

    try:
        client = engine_client(PROBE_S)
    except DockerException as error:
        raise EnvironmentBuildError(f"The Docker engine does not answer: {error}") from error
    try:
        image_id = str(client.images.get(image).id)
        known = _remembered(cache).get(image_id)
        if known is not None:
            return Target(TargetKind.IMAGE, base=image, **known)
        output = client.containers.run(
            image_id, ["python3", "-c", PROBE], network_mode="none", remove=True, read_only=True
        )
    except ImageNotFound as error:
        raise EnvironmentBuildError(
            f"The image {image} is missing: build it first with `workbench image build --offline`."
        ) from error
    except (DockerException, RequestException) as error:
        raise EnvironmentBuildError(
            f"Could not ask the image {image} its Python: {error}"
        ) from error
    finally:
        client.close()
    python, machine, libc, interpreter, _ = output.decode().split()
    target = Target(
        TargetKind.IMAGE, python, machine, libc.strip("-"), interpreter, image, image_id
    )
    _remember(cache, target)
    return target


def _remembered(cache: Path) -> dict[str, dict[str, str]]:
    try:
        known = json.loads(cache.read_text())
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def _remember(cache: Path, target: Target) -> None:
    """Add `target` to the cache file (written whole to a temporary file, then renamed)."""
    known = _remembered(cache)
    known[target.base_id] = {k: v for k, v in asdict(target).items() if k not in ("kind", "base")}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        part = cache.with_name(f"{cache.name}.{os.getpid()}.part")
        part.write_text(json.dumps(known, indent=1, sort_keys=True))
        part.replace(cache)
    except OSError:
        pass  # only a cache: the image is asked again next time
