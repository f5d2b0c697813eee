"""Building one skill environment: Python with uv, Node with npm, Debian packages into an image.

`build(inputs, skill, store, progress)` returns the environment of `inputs`: the stored one when
it exists (a cache hit: no network, well under a second), else a new one, built in a build
folder and published by `store` only when every step succeeded. The network is used here and
only here, for the package registries. uv installs wheels only (`--only-binary :all:`: no
package's build code runs on this computer) for the target's Python version and platform into
`python/`; npm installs the Node packages with `--ignore-scripts` into `node/`; for a container
target the Debian packages go into an image built from the base image by id (apt-get, in the
engine's build container), tagged `skill-workbench-env:<id>`. A process target cannot get
Debian packages: the manifest notes those this computer lacks. Every failure, an interrupt
included, removes the build folder and any image made, then raises `EnvironmentBuildError`
naming the step and what the tool said (which names the package).
"""

import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import distributions
from pathlib import Path

from docker.errors import DockerException, ImageNotFound
from requests.exceptions import RequestException
from uv import find_uv_bin

from workbench.environments.needs import parse_requirement
from workbench.environments.store import PYTHON_DIR, Environment, EnvironmentStore, Inputs
from workbench.environments.targets import TargetKind
from workbench.errors import EnvironmentBuildError
from workbench.executors.docker.engine import engine_client
from workbench.skills.model import Skill

ENV_IMAGE = "skill-workbench-env"
ENV_LABEL = "org.skill-workbench.environment"
DEBIAN_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
NODE_SPEC = re.compile(r"^(@[a-z0-9-~][a-z0-9-._~]*/)?[a-z0-9-~][a-z0-9-._~]*@[\w.*^~<>=| -]*$")
_ESCAPES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # the colours of apt's output in a build log
_KEPT_LINES = 30  # of a tool's output, for the error message
ENGINE_WAIT_S = 600  # an apt step may print nothing for minutes; removing a big image takes long


@dataclass(frozen=True, slots=True)
class BuildStep:
    """Progress of a build: step `done` of `total` started, with a line of what happens."""

    done: int
    total: int
    text: str


Progress = Callable[[BuildStep], None]


@dataclass(frozen=True, slots=True)
class _StepProgress:
    """Reports lines of one step of a build."""

    progress: Progress
    number: int
    total: int

    def __call__(self, text: str) -> None:
        self.progress(BuildStep(self.number, self.total, text))


def build(inputs: Inputs, skill: Skill, store: EnvironmentStore, progress: Progress) -> Environment:
    """The environment of `inputs` for `skill`, built when it is not stored yet (see above)."""
    _check(inputs)
    env_id = inputs.env_id
    steps = _steps(inputs)
    existing = store.get(env_id)
    if existing is not None and existing.image and _image_id(existing.image) == "":
        store.remove(env_id)  # its image was removed from the engine: build both again
    elif existing is not None:
        progress(BuildStep(len(steps), len(steps), f"environment {env_id} is built already"))
        return existing
    folder = store.begin(env_id)
    image = ""
    try:
        installed: tuple[str, ...] = ()
        installed_node: tuple[str, ...] = ()
        notes: tuple[str, ...] = ()
        image_id = ""
        for number, (name, text) in enumerate(steps):
            step = _StepProgress(progress, number, len(steps))
            step(text)
            if name == "python":
                installed = _install_python(inputs, folder / PYTHON_DIR, step)
            elif name == "node":
                installed_node = _install_node(inputs, folder / "node", step)
            elif name == "image":
                image = f"{ENV_IMAGE}:{env_id}"
                image_id = _build_image(inputs, image, env_id, step)
            else:
                notes = _host_notes(inputs.system)
        environment = Environment(
            env_id=env_id,
            path=folder,
            inputs=inputs,
            skill_name=skill.name,
            skill_dir=str(skill.path),
            created=time.time(),
            installed=installed,
            installed_node=installed_node,
            image=image,
            image_id=image_id,
            size_bytes=_size(folder),
            notes=notes,
        )
        published = store.publish(folder, environment)
    except BaseException:
        store.discard(folder)
        if image:
            _remove_image(image)
        raise
    store.update_skill_record(
        skill.path, built={**_built(store, skill), inputs.target.kind: env_id}
    )
    progress(BuildStep(len(steps), len(steps), f"built environment {env_id}"))
    return published


def remove_image(environment: Environment) -> None:
    """Remove an environment's derived image, if it has one (gone already is fine)."""
    if environment.image:
        _remove_image(environment.image)


def _built(store: EnvironmentStore, skill: Skill) -> dict[str, str]:
    built = store.skill_record(skill.path).get("built")
    return built if isinstance(built, dict) else {}


def _check(inputs: Inputs) -> None:
    """Refuse inputs a build must not pass on (they would reach a command line or a registry
    other than the configured one)."""
    for requirement in inputs.python:
        if parse_requirement(requirement) != requirement.strip():
            raise EnvironmentBuildError(
                f"Not a requirement the workbench installs: {requirement!r} (name a package of "
                "the registry, with an optional version: no options, URLs or paths)."
            )
    for spec in inputs.node:
        if not NODE_SPEC.match(spec):
            raise EnvironmentBuildError(f"Not a Node package the workbench installs: {spec!r}.")
    for package in inputs.system:
        if not DEBIAN_NAME.match(package):
            raise EnvironmentBuildError(f"Not a Debian package name: {package!r}.")


def _steps(inputs: Inputs) -> list[tuple[str, str]]:
    target = inputs.target.describe()
    steps = []
    if inputs.python:
        steps.append(
            ("python", f"installing {len(inputs.python)} Python requirement(s) for {target}")
        )
    if inputs.node:
        steps.append(("node", f"installing {len(inputs.node)} Node package(s)"))
    if inputs.system and inputs.target.kind is TargetKind.IMAGE:
        steps.append(("image", f"building an image with {' '.join(inputs.system)}"))
    elif inputs.system:
        steps.append(("host", "checking this computer's Debian packages"))
    return steps


def _install_python(inputs: Inputs, folder: Path, step: _StepProgress) -> tuple[str, ...]:
    argv = python_install_argv(inputs, folder, folder.parent / "requirements.txt")
    _run_tool("installing the Python packages (uv)", argv, step)
    found = {
        f"{dist.metadata['Name']} {dist.version}" for dist in distributions(path=[str(folder)])
    }
    return tuple(sorted(found, key=str.lower))


def python_install_argv(inputs: Inputs, folder: Path, requirements: Path) -> list[str]:
    """The uv command that installs `inputs`' Python requirements into `folder` (writes them to
    `requirements` first): wheels only, for the target's Python, none of the user's uv config."""
    requirements.write_text("".join(f"{line}\n" for line in inputs.python))
    target = inputs.target
    where = (
        ["--python-version", target.python, "--python-platform", target.platform]
        if target.kind is TargetKind.IMAGE
        else ["--python", target.interpreter]
    )
    return [
        _uv(), "pip", "install", "--no-config", "--only-binary", ":all:",
        "--target", str(folder), *where, "-r", str(requirements),
    ]  # fmt: skip


def _uv() -> str:
    """The uv binary of the `uv` package (or, failing that, one on PATH)."""
    try:
        return find_uv_bin()
    except FileNotFoundError:  # e.g. a frozen build, whose scripts folder holds no uv
        found = shutil.which("uv")
        if found is None:
            raise EnvironmentBuildError(
                "Building Python packages needs uv, which this installation lacks "
                "(pip install uv, or put uv on PATH)."
            ) from None
        return found


def _install_node(inputs: Inputs, folder: Path, step: _StepProgress) -> tuple[str, ...]:
    npm = shutil.which("npm")
    if npm is None:
        raise EnvironmentBuildError(
            "Installing the Node packages needs npm on this computer (apt-get install npm)."
        )
    folder.mkdir()
    argv = [
        npm, "install", "--prefix", str(folder), "--ignore-scripts", "--omit=dev", "--no-audit",
        "--no-fund", "--no-package-lock", "--no-save", "--loglevel=error", *inputs.node,
    ]  # fmt: skip
    _run_tool("installing the Node packages (npm)", argv, step)
    modules = folder / "node_modules"
    return tuple(sorted(p.name for p in modules.iterdir() if not p.name.startswith(".")))


def _run_tool(what: str, argv: list[str], step: _StepProgress) -> None:
    """Run a build tool, passing its output on as progress; `EnvironmentBuildError` naming
    `what` it did and the tool's error when it fails. Killed if the build is interrupted."""
    env = {**os.environ, "NO_COLOR": "1", "UV_NO_PROGRESS": "1"}
    kept: deque[str] = deque(maxlen=_KEPT_LINES)
    try:
        tool = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
            env=env, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except OSError as error:
        raise EnvironmentBuildError(f"{what} failed: cannot run {argv[0]}: {error}") from error
    with tool:
        try:
            assert tool.stdout is not None
            for line in tool.stdout:
                if text := line.strip():
                    kept.append(text)
                    step(text)
        except BaseException:
            tool.kill()
            raise
    if tool.returncode < 0:  # e.g. SIGXFSZ: a file size limit
        name = signal.Signals(-tool.returncode).name
        raise EnvironmentBuildError(f"{what} failed: {argv[0]} was killed by {name}")
    if tool.returncode != 0:
        raise EnvironmentBuildError(f"{what} failed: {_said(kept, tool.returncode)}")


def _said(lines: deque[str], code: int) -> str:
    """A tool's error in one line: its `error:` and `cause:` lines (uv's, apt's `E:`), else its
    last lines."""
    marks = re.compile(r"^(?:error|cause|E|npm (?:ERR!|error)|×|╰─▶|│)[:\s]+", re.IGNORECASE)
    said = [marks.sub("", line) for line in lines if marks.match(line)]
    text = ": ".join(said or list(lines)[-3:]) or f"it exited with code {code}"
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= 500 else text[:497] + "..."


def _build_image(inputs: Inputs, tag: str, env_id: str, step: _StepProgress) -> str:
    """Build `tag` from the target's base image with the Debian packages; its id."""
    base = inputs.target.base_id
    try:
        client = engine_client(ENGINE_WAIT_S)
    except DockerException as error:
        raise EnvironmentBuildError(f"Building the image failed: no engine: {error}") from error
    try:
        user = str((client.images.get(base).attrs.get("Config") or {}).get("User") or "0:0")
        packages = " ".join(sorted(inputs.system))
        dockerfile = (
            f"FROM {base}\nUSER 0:0\n"
            "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install --yes "
            f"--no-install-recommends -qq {packages} && rm -rf /var/lib/apt/lists/*\n"
            f"USER {user}\n"
        )
        kept: deque[str] = deque(maxlen=_KEPT_LINES)
        chunks = client.api.build(
            fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, forcerm=True,
            decode=True, labels={ENV_LABEL: env_id}, pull=False,
        )  # fmt: skip
        for chunk in chunks:
            if "error" in chunk:
                kept.append(str(chunk["error"]))
                raise EnvironmentBuildError(
                    f"Building the image with {packages} failed (apt-get): {_said(kept, 1)}"
                )
            for line in _ESCAPES.sub("", str(chunk.get("stream") or "")).splitlines():
                if (text := line.strip()) and not text.startswith("(Reading database"):
                    kept.append(text)
                    step(text)
        return str(client.images.get(tag).id)
    except (DockerException, RequestException) as error:
        raise EnvironmentBuildError(f"Building the image failed: {error}") from error
    finally:
        client.close()


def _image_id(image: str) -> str | None:
    """The id of `image`, "" when the engine says it lacks it, None when the engine does not
    answer (which says nothing about the image: an environment is never dropped for it)."""
    try:
        client = engine_client()
    except DockerException:
        return None
    try:
        return str(client.images.get(image).id)
    except ImageNotFound:
        return ""
    except (DockerException, RequestException):
        return None
    finally:
        client.close()


def _remove_image(image: str) -> None:
    with contextlib.suppress(DockerException, RequestException):
        client = engine_client(ENGINE_WAIT_S)
        try:
            client.images.remove(image, force=True)
        except ImageNotFound:
            pass
        finally:
            client.close()


def _host_notes(packages: tuple[str, ...]) -> tuple[str, ...]:
    """What this computer lacks of the Debian packages a process posture cannot be given."""
    query = shutil.which("dpkg-query")
    missing = [
        package
        for package in packages
        if query is None
        or "ok installed"
        not in subprocess.run(
            [query, "-W", "-f", "${Status}", package], capture_output=True, text=True, check=False
        ).stdout
    ]
    if not missing:
        return ()
    names = " ".join(missing)
    return (
        f"This computer lacks the Debian package(s) {names}, which its scripts run: install "
        f"them (sudo apt-get install {names}) or use the docker or gvisor posture.",
    )


def _size(folder: Path) -> int:
    total = 0
    for parent, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(parent) / name).lstat().st_size
    return total
