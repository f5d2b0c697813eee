"""The sandbox image of the docker and gvisor postures: its status, and building it.

`image_status` asks the resolved engine (`workbench.executors.docker.engine`) about the image:
whether it exists, its id, size, creation time, recipe label, whether that label matches the
recipe shipped with this version, and the engine's runtimes. The recipe is one folder,
`resources/sandbox-image/`: one package list (`packages.txt`), one `Dockerfile` that installs it,
and `build-offline.sh`, which debootstraps those packages from the host's apt mirror (no
registry) and puts the same Dockerfile on top. `build_offline` runs that script; `build_online`
builds the Dockerfile through the engine from Debian's registry image. Both label the image with
the recipe's hash, report progress one line at a time and raise `ImageError` with a plain
message when they fail. Headless: no Qt here.
"""

import hashlib
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docker.errors import DockerException, ImageNotFound

from workbench.errors import WorkbenchError
from workbench.executors.docker.engine import engine_client, resolve_engine
from workbench.platform.paths import resources_dir
from workbench.postures.model import DEFAULT_IMAGE

RECIPE_LABEL = "org.skill-workbench.recipe"
RECIPE_FILES = ("build-offline.sh", "Dockerfile", "packages.txt")
OFFLINE_HINT = "build it without a registry with `workbench image build --offline`"

Progress = Callable[[str], None]


class ImageError(WorkbenchError):
    """The sandbox image could not be inspected or built."""


@dataclass(frozen=True, slots=True)
class ImageStatus:
    """What the engine says about the sandbox image (see the module docstring)."""

    tag: str
    engine: str
    engine_error: str = ""
    exists: bool = False
    image_id: str = ""
    size_bytes: int = 0
    created: str = ""
    recipe: str = ""
    expected_recipe: str = ""
    runtimes: list[str] = field(default_factory=list)

    @property
    def current(self) -> bool:
        """True when the image was built by this version's offline recipe."""
        return self.exists and self.recipe == self.expected_recipe


def recipe_dir() -> Path:
    """The image's recipe shipped with the workbench: package list, Dockerfile, builder."""
    return resources_dir() / "sandbox-image"


def builder_script() -> Path:
    """The offline builder shipped with the workbench."""
    return recipe_dir() / "build-offline.sh"


def image_packages() -> tuple[str, ...]:
    """The Debian packages the image holds (beyond debootstrap's minimal base), in list order."""
    text = (recipe_dir() / "packages.txt").read_text()
    return tuple(line.strip() for line in text.splitlines() if line.strip() and line[0] != "#")


def recipe_hash() -> str:
    """The recipe label both builds give the image: a hash of the recipe's files, in the order
    the offline builder hashes them."""
    recipe = b"".join((recipe_dir() / name).read_bytes() for name in RECIPE_FILES)
    return hashlib.sha256(recipe).hexdigest()[:16]


def image_status(tag: str = DEFAULT_IMAGE) -> ImageStatus:
    """The image's status; `engine_error` says why when no engine answers."""
    expected = recipe_hash()
    try:
        engine = resolve_engine().describe()
        client = engine_client()
    except DockerException as error:
        return ImageStatus(tag, "", engine_error=str(error), expected_recipe=expected)
    try:
        runtimes = sorted(client.info().get("Runtimes", {}))
        try:
            attrs: dict[str, Any] = client.images.get(tag).attrs
        except ImageNotFound:
            return ImageStatus(tag, engine, expected_recipe=expected, runtimes=runtimes)
    except DockerException as error:
        return ImageStatus(tag, engine, engine_error=str(error), expected_recipe=expected)
    finally:
        client.close()
    labels = (attrs.get("Config") or {}).get("Labels") or {}
    return ImageStatus(
        tag,
        engine,
        exists=True,
        image_id=str(attrs.get("Id", "")),
        size_bytes=int(attrs.get("Size", 0)),
        created=str(attrs.get("Created", "")),
        recipe=str(labels.get(RECIPE_LABEL, "")),
        expected_recipe=expected,
        runtimes=runtimes,
    )


def build_offline(tag: str, progress: Progress, force: bool = False) -> None:
    """Run the offline builder for `tag` against the resolved engine, passing on its lines."""
    try:
        engine = resolve_engine()
    except DockerException as error:
        raise ImageError(str(error)) from error
    argv = ["bash", str(builder_script()), *(["--force"] if force else []), tag]
    env = {**os.environ, "DOCKER_HOST": engine.url}
    try:
        builder = subprocess.Popen(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
    except OSError as error:
        raise ImageError(f"Cannot run the offline builder {argv[1]}: {error}") from error
    last = ""
    assert builder.stderr is not None
    with builder:
        for line in builder.stderr:
            last = line.rstrip("\n")
            progress(last)
    if builder.returncode != 0:
        raise ImageError(
            f"The offline image build failed (exit {builder.returncode}): {last or 'no output'}"
        )


def build_online(tag: str, progress: Progress) -> None:
    """Build the recipe's Dockerfile through the engine, streaming its log."""
    try:
        client = engine_client()
    except DockerException as error:
        raise ImageError(str(error)) from error
    try:
        chunks = client.api.build(
            path=str(recipe_dir()),
            tag=tag,
            rm=True,
            decode=True,
            labels={RECIPE_LABEL: recipe_hash()},
        )
        for chunk in chunks:
            if "error" in chunk:
                raise ImageError(
                    f"The online image build failed: {str(chunk['error']).strip()}. It pulls "
                    f"debian:bookworm-slim from a registry; without one, {OFFLINE_HINT}."
                )
            text = str(chunk.get("stream") or chunk.get("status") or "").rstrip("\n")
            if text.strip():
                progress(text)
    except DockerException as error:
        raise ImageError(
            f"The online image build failed: {error}. Without a registry, {OFFLINE_HINT}."
        ) from error
    finally:
        client.close()
