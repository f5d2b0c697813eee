"""Whether the engine sees this machine's files: a marker only a local engine can read.

`sees_files` writes a marker with random content into the workspace and reads it back through a
throwaway container (created, never started) that bind-mounts the workspace; only the very content
proves a local engine. The answer is kept per endpoint in memory and in `engines.json` in the data
folder; `confirm` checks it again in a cold session container, where a file of the fresh marker's
random name and size is proof enough (its stat alone, nothing copied), and `remember(url, None)`
forgets it when that check fails. The endpoint's kind is only a hint, used when no marker can be
written. Design notes: docs/notes.md, "Remote engines".
"""

import contextlib
import io
import json
import os
import secrets
import tarfile
from pathlib import Path

import docker
from docker.errors import APIError, DockerException, ImageNotFound
from docker.types import Mount
from requests.exceptions import RequestException

from workbench.errors import ExecutorError
from workbench.executors.docker.archive import fetched, path_stat
from workbench.executors.docker.engine import EngineUnreachable, missing_image, resolve_engine
from workbench.executors.docker.spec import COPIED, LABEL_APP, LOCAL, WORKSPACE_MOUNT
from workbench.platform.paths import data_dir

CACHE_NAME = "engines.json"
MARKER_PREFIX = ".skill-workbench-marker-"
_PROBE_MOUNT = "/probe"
_known: dict[str, bool] = {}


def _cache_path() -> Path:
    return data_dir() / CACHE_NAME


def _read_cache() -> dict[str, bool]:
    try:
        stored = json.loads(_cache_path().read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(stored, dict):
        return {}
    return {str(url): value for url, value in stored.items() if isinstance(value, bool)}


def remember(url: str, sees: bool | None) -> None:
    """Keep the answer for the engine at `url`, or forget it (None), in memory and in the
    data folder if it can."""
    stored = _read_cache()
    if sees is None:
        _known.pop(url, None)
        stored.pop(url, None)
    else:
        _known[url] = sees
        stored[url] = sees
    path = _cache_path()
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(stored, indent=1) + "\n")
        temporary.replace(path)


def known(url: str) -> bool | None:
    """The kept answer for the engine at `url`, or None."""
    if url not in _known:
        cached = _read_cache().get(url)
        if cached is None:
            return None
        _known[url] = cached
    return _known[url]


class Marker:
    """A file with random content in a folder, removed on exit; `name` is "" when it could
    not be written."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.name = MARKER_PREFIX + secrets.token_hex(8)
        self.content = secrets.token_hex(16).encode()

    def __enter__(self) -> "Marker":
        try:
            fd = os.open(self.folder / self.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError:
            self.name = ""
            return self
        with open(fd, "wb") as out:  # noqa: PTH123 - a descriptor, not a path
            out.write(self.content)
        return self

    def __exit__(self, *_: object) -> None:
        if self.name:
            (self.folder / self.name).unlink(missing_ok=True)

    def seen_by(self, api: docker.APIClient, container_id: str, folder: str) -> bool:
        """True when the container's `folder` holds this marker, content and all."""
        try:
            with fetched(api, container_id, f"{folder}/{self.name}") as chunks:
                data = b"".join(chunks)
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                member = tar.extractfile(tar.getmembers()[0])
                return member is not None and member.read() == self.content
        except (APIError, tarfile.TarError, IndexError):  # the engine said no, or sent no file
            return False

    def listed_by(self, api: docker.APIClient, container_id: str, folder: str) -> bool:
        """True when the container's `folder` holds a file of this marker's name and size."""
        found = path_stat(api, container_id, f"{folder}/{self.name}")
        return found is not None and (found.get("name"), found.get("size")) == (
            self.name,
            len(self.content),
        )


def files_note() -> str:
    """What is known of the engine in use and this machine's files, for people."""
    try:
        answer = known(resolve_engine().url)
    except EngineUnreachable:
        return ""
    if answer is None:
        return "whether it sees this machine's files is found out at the first run"
    return LOCAL if answer else COPIED


def hint(url: str) -> bool:
    """The guess from the endpoint alone: a Unix socket is on this machine."""
    return url.startswith("unix://")


def sees_files(client: docker.DockerClient, url: str, workspace: Path, image: str) -> bool:
    """Whether the engine at `url` sees `workspace` (see the module doc). Blocking.

    `ExecutorError` when the image is missing; an engine that refuses the probe does not see
    the files; an engine that does not answer raises (`DockerException`, `RequestException`).
    """
    answer = known(url)
    if answer is not None:
        return answer
    with Marker(workspace) as marker:
        if not marker.name:
            return hint(url)
        answer = _probe(client.api, marker, workspace, image)
    remember(url, answer)
    return answer


def _probe(api: docker.APIClient, marker: Marker, workspace: Path, image: str) -> bool:
    mount = Mount(_PROBE_MOUNT, str(workspace.resolve()), type="bind", read_only=True)
    try:
        created = api.create_container(
            image,
            ["true"],
            labels={LABEL_APP: "1"},
            host_config=api.create_host_config(mounts=[mount], network_mode="none"),
        )
    except ImageNotFound as error:
        raise ExecutorError(missing_image(image)) from error
    except APIError:  # e.g. no such folder on the engine's machine
        return False
    try:
        return marker.seen_by(api, str(created["Id"]), _PROBE_MOUNT)
    finally:
        with contextlib.suppress(DockerException, RequestException):
            api.remove_container(created["Id"], force=True)


def confirm(api: docker.APIClient, container_id: str, workspace: Path) -> bool:
    """True when the session container sees `workspace` as its /workspace (or no marker can
    be written there to tell). Blocking."""
    with Marker(workspace) as marker:
        return not marker.name or marker.listed_by(api, container_id, WORKSPACE_MOUNT)
