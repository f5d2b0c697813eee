"""Where the workbench finds its bundled resources and keeps the user's data.

Bundled resources live in `workbench/resources` inside an installed wheel and in the checkout's
top-level `resources/` during development (an editable install maps only the package). User
data follows the platform's conventions (XDG on Linux) through platformdirs; nothing is ever
written next to the program.
"""

from pathlib import Path

import platformdirs

APP_NAME = "skill-workbench"
APP_AUTHOR = "skill-workbench"


def resources_dir() -> Path:
    """The folder holding the bundled icons, example and probe skills and the sandbox image."""
    packaged = Path(__file__).resolve().parents[1] / "resources"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "resources"


def example_skills_dir() -> Path:
    """The embedded default catalog: the bundled example skills."""
    return resources_dir() / "skills"


def data_dir() -> Path:
    """The user's data folder for the run history and spooled logs (created on demand)."""
    return Path(platformdirs.user_data_dir(APP_NAME, APP_AUTHOR))


def config_dir() -> Path:
    """The user's configuration folder (settings, added skill roots)."""
    return Path(platformdirs.user_config_dir(APP_NAME, APP_AUTHOR))


def user_skill_roots() -> list[Path]:
    """The conventional skill roots besides the bundled examples, in search order."""
    return [Path.home() / ".claude" / "skills", Path.cwd() / "skills"]
