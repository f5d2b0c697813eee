"""One skill that needs real packages (PyYAML and six from PyPI, left-pad from npm), and its
environments built once per session: for this computer's python3 and for the sandbox image.

Builds reach the package registries; runs reach nothing. Every folder and image made here is
removed at the end of the session.
"""

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from workbench.environments.build import build, remove_image
from workbench.environments.needs import read_needs
from workbench.environments.resolve import inputs_for
from workbench.environments.store import Environment, EnvironmentStore
from workbench.environments.targets import Target, host_target, image_target, target_for
from workbench.postures.model import DEFAULT_IMAGE, Posture
from workbench.runs.layout import DataLayout
from workbench.skills.catalog import load_skill
from workbench.skills.model import Skill
from workbench.workspace.safe_walk import remove_tree

PROBE = """import os, sys
import six
import yaml
print(yaml.safe_dump({"six": six.__version__}).strip())
print("yaml from", yaml.__file__)
try:
    open(os.path.join(os.path.dirname(yaml.__file__), "planted.py"), "w")
    print("environment writable")
except OSError:
    print("environment read-only")
"""


def write_skill(folder: Path) -> Path:
    """The `env-probe` skill: Python and Node scripts that need packages the image lacks."""
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: env-probe\ndescription: Imports PyYAML and six, requires left-pad.\n---\n\n"
        "Run `python3 $SKILL_DIR/scripts/probe.py`.\n"
    )
    (folder / "scripts" / "probe.py").write_text(PROBE)
    (folder / "scripts" / "requirements.txt").write_text("PyYAML\nsix\n")
    (folder / "package.json").write_text('{"dependencies": {"left-pad": "1.3.0"}}\n')
    (folder / "scripts" / "pad.js").write_text("console.log(require('left-pad')('42', 5, '0'));\n")
    for path in (folder, *folder.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


@dataclass(frozen=True)
class Built:
    """The session's skill, its store, and what was built for it."""

    skill: Skill
    store: EnvironmentStore
    layout: DataLayout

    def host(self) -> Environment:
        return self._build_for(host_target())

    def image(self) -> Environment:
        return self._build_for(image_target(DEFAULT_IMAGE, self.store.targets_cache))

    def for_posture(self, posture: Posture) -> Environment:
        return self._build_for(target_for(posture, self.store.targets_cache))

    def _build_for(self, target: Target) -> Environment:
        inputs = inputs_for(self.skill, target, self.store, read_needs(self.skill))
        return build(inputs, self.skill, self.store, lambda _step: None)


@pytest.fixture(scope="session")
def built() -> Iterator[Built]:
    """The session's one store: each environment is built by its first test, then reused.

    Under /tmp, open to other users: the hardened posture's throwaway uid (as root) and the
    containers' uid read the skill and the environment."""
    base = Path(tempfile.mkdtemp(prefix="workbench-env-test-"))
    base.chmod(0o755)
    skill = load_skill(write_skill(base / "env-probe"))
    layout = DataLayout(base / "data")
    store = layout.environment_store()
    try:
        yield Built(skill, store, layout)
    finally:
        for environment in store.list():
            remove_image(environment)
        remove_tree(store.root)
        remove_tree(base)
