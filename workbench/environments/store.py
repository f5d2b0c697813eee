"""Built skill environments on disk: each one complete in its own folder, or absent.

Under the environments folder (`DataLayout.environments`), `<id>/` is one environment: its
`manifest.json` (what it was built from and for, what it holds), `python/` (the installed
distributions, for PYTHONPATH) and `node/node_modules` (for NODE_PATH). A build works in
`.build-<id>-<pid>-<random>/` and is renamed to `<id>/` only once it succeeded, so an
interrupted or failed build never leaves an environment, half or whole, and never touches
another; the next build removes the folders of builders that are gone. `skills/<key>.json`
keeps, per skill folder, the requirements the user edited (when they did) and the last
environment built for each target kind, which is how an environment that no longer matches its
skill is found out of date. A `targets.json` remembers each image's Python (`targets`).
"""

import contextlib
import hashlib
import json
import os
import secrets
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import psutil

from workbench.environments.targets import Target, TargetKind
from workbench.errors import EnvironmentBuildError
from workbench.executors.types import SkillEnvironment
from workbench.workspace.safe_walk import remove_tree

MANIFEST = "manifest.json"
PYTHON_DIR = "python"
NODE_DIR = "node/node_modules"
BUILD_PREFIX = ".build-"


@dataclass(frozen=True, slots=True)
class Inputs:
    """What an environment is built from: requirements, Node packages and Debian packages, for
    one target. Its hash is the environment's id: equal inputs, one environment."""

    python: tuple[str, ...]
    node: tuple[str, ...]
    system: tuple[str, ...]
    target: Target

    @property
    def env_id(self) -> str:
        """The content hash that names the environment (16 hex digits)."""
        key = {
            "python": sorted(self.python),
            "node": sorted(self.node),
            "system": sorted(self.system) if self.target.kind is TargetKind.IMAGE else [],
            "target": [self.target.kind, self.target.python, self.target.platform],
            "base": self.target.base_id,
        }
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Environment:
    """One built environment, as its manifest describes it."""

    env_id: str
    path: Path
    inputs: Inputs
    skill_name: str
    skill_dir: str
    created: float
    installed: tuple[str, ...] = ()  # `name version` of each Python distribution installed
    installed_node: tuple[str, ...] = ()
    image: str = ""  # the derived image with the system packages ("" when none was needed)
    image_id: str = ""
    size_bytes: int = 0
    notes: tuple[str, ...] = ()

    def for_run(self) -> SkillEnvironment:
        """The environment as executors take it."""
        return SkillEnvironment(
            env_id=self.env_id,
            root=self.path,
            python=(PYTHON_DIR,) if self.inputs.python else (),
            node=(NODE_DIR,) if self.inputs.node else (),
            image=self.image,
        )

    def to_json(self) -> dict[str, Any]:
        """The manifest's document (also what `workbench env list --json` prints)."""
        document = asdict(self)
        document["path"] = str(self.path)
        return document


class EnvironmentStore:
    """The environments folder at `root` (see the module docstring); `targets_cache` is where
    the images' Python versions are remembered (by default in `root`)."""

    def __init__(self, root: Path, targets_cache: Path | None = None) -> None:
        self.root = root
        self.targets_cache = targets_cache or root / "targets.json"

    def get(self, env_id: str) -> Environment | None:
        """The complete environment `env_id`, or None."""
        if not env_id or env_id.startswith(".") or "/" in env_id:
            return None
        return _load(self.root / env_id)

    def list(self) -> list[Environment]:
        """Every complete environment, newest first."""
        try:
            folders = [p for p in self.root.iterdir() if not p.name.startswith(".")]
        except OSError:
            return []
        found = [env for folder in folders if (env := _load(folder)) is not None]
        return sorted(found, key=lambda env: env.created, reverse=True)

    def begin(self, env_id: str) -> Path:
        """A new, empty build folder for `env_id` (builders that are gone are cleared first)."""
        self.clear_abandoned()
        folder = self.root / f"{BUILD_PREFIX}{env_id}-{os.getpid()}-{secrets.token_hex(3)}"
        try:
            folder.mkdir(parents=True)
        except OSError as error:
            raise EnvironmentBuildError(
                f"Cannot create the build folder {folder}: {error}"
            ) from None
        return folder

    def publish(self, folder: Path, environment: Environment) -> Environment:
        """Write the manifest into the build `folder` and rename it into place, readable by every
        user (the command may run as another uid); an environment already there wins."""
        final = self.root / environment.env_id
        placed = replace(environment, path=final)
        try:
            (folder / MANIFEST).write_text(json.dumps(placed.to_json(), indent=1))
            _open_to_all(folder)
            folder.rename(final)
        except OSError as error:
            remove_tree(folder)
            if (existing := _load(final)) is not None:  # another build of the same inputs won
                return existing
            raise EnvironmentBuildError(f"Cannot store the environment {final}: {error}") from None
        return placed

    def discard(self, folder: Path) -> None:
        """Remove a build folder that will not be published."""
        remove_tree(folder)

    def remove(self, env_id: str) -> Environment:
        """Remove environment `env_id` (the caller removes its image); returns what it was."""
        environment = self.get(env_id)
        if environment is None:
            raise EnvironmentBuildError(f"No environment {env_id!r}; see `workbench env list`.")
        trash = self.root / f"{BUILD_PREFIX}{env_id}-removed-{secrets.token_hex(3)}"
        try:
            environment.path.rename(trash)  # gone at once for every reader, then deleted
        except OSError as error:
            raise EnvironmentBuildError(f"Cannot remove {environment.path}: {error}") from None
        remove_tree(trash)
        return environment

    def clear_abandoned(self) -> None:
        """Remove the build folders of builders that are no longer running."""
        with contextlib.suppress(OSError):
            for folder in self.root.iterdir():
                if folder.name.startswith(BUILD_PREFIX) and not _builder_alive(folder.name):
                    remove_tree(folder)

    def skill_record(self, skill_dir: Path) -> dict[str, Any]:
        """What is kept for one skill folder: `python` (the user's edited requirements, absent
        when not edited) and `built` (target kind -> the last environment id built)."""
        try:
            record = json.loads(self._skill_file(skill_dir).read_text())
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}

    def update_skill_record(self, skill_dir: Path, **changes: Any) -> None:
        """Change keys of the skill's record (a value of None removes the key)."""
        record = {**self.skill_record(skill_dir), "skill_dir": str(skill_dir), **changes}
        record = {key: value for key, value in record.items() if value is not None}
        path = self._skill_file(skill_dir)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(f"{path.name}.{os.getpid()}.part")
            part.write_text(json.dumps(record, indent=1))
            part.replace(path)
        except OSError as error:
            raise EnvironmentBuildError(
                f"Cannot save the skill's environment record: {error}"
            ) from None

    def _skill_file(self, skill_dir: Path) -> Path:
        key = hashlib.sha256(os.fsencode(skill_dir.resolve())).hexdigest()[:16]
        return self.root / "skills" / f"{key}.json"


def _load(folder: Path) -> Environment | None:
    """The environment in `folder` from its manifest; None when there is no valid one."""
    try:
        document = json.loads((folder / MANIFEST).read_text())
        asked = document["inputs"]
        target = Target(**{**asked["target"], "kind": TargetKind(asked["target"]["kind"])})
        inputs = Inputs(
            python=tuple(asked["python"]),
            node=tuple(asked["node"]),
            system=tuple(asked["system"]),
            target=target,
        )
        return Environment(
            env_id=str(document["env_id"]),
            path=folder,
            inputs=inputs,
            skill_name=str(document["skill_name"]),
            skill_dir=str(document["skill_dir"]),
            created=float(document["created"]),
            installed=tuple(document.get("installed", ())),
            installed_node=tuple(document.get("installed_node", ())),
            image=str(document.get("image", "")),
            image_id=str(document.get("image_id", "")),
            size_bytes=int(document.get("size_bytes", 0)),
            notes=tuple(document.get("notes", ())),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _builder_alive(name: str) -> bool:
    """Whether the process named in a build folder's name (`.build-<id>-<pid>-<rand>`) runs."""
    parts = name.split("-")
    try:
        return len(parts) == 4 and psutil.pid_exists(int(parts[2])) and int(parts[2]) != 0
    except ValueError:
        return False


def _open_to_all(folder: Path) -> None:
    """Make everything under `folder` readable (and folders enterable) by every user, never
    writable by others: the command may run as another uid (hardened as root, a container)."""
    for path in [folder, *folder.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode & 0o7777
        path.chmod((mode | 0o444 | (0o111 if path.is_dir() or mode & 0o100 else 0)) & ~0o022)
