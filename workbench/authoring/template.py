"""New skills from a template, and the atomic writes the authoring loop shares.

`create_skill` writes a new skill folder (SKILL.md with valid front matter and a teaching body, and
the chosen `scripts/`, `references/`, `assets/`), checking its name and description by the catalog's
own rules and never overwriting a folder; it builds the skill in a staging folder renamed into place
(`staged_folder`). `write_atomic` and `atomic_file` replace single files atomically.
"""

import os
import shutil
import tempfile
from collections.abc import Iterator, Set
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import yaml

from workbench.errors import UsageError
from workbench.skills.model import COMMAND_KEY
from workbench.skills.rules import check_front_matter

FOLDERS = ("scripts", "references", "assets")
DEFAULT_FOLDERS = frozenset({"scripts"})
STARTER_SCRIPT = "scripts/run.py"
STARTER_COMMAND = 'python3 "$SKILL_DIR/scripts/run.py"'
FOLDER_MODE = 0o755

_RUN_PY = '''\
"""Starter script: lists the workspace and writes hello.txt into it. Replace with your own."""

import os
from pathlib import Path
from typing import BinaryIO

workspace = Path(os.environ.get("WORKSPACE", "."))
names = sorted(path.name for path in workspace.iterdir())
print(f"The workspace holds {len(names)} entries: {', '.join(names) or 'none'}")
(workspace / "hello.txt").write_text("Hello from the skill.\\n", encoding="utf-8")
print("Wrote hello.txt")
'''

_README = {
    "references": "Detailed documentation the agent reads only when it needs it.\n",
    "assets": "Templates, images and data files the skill uses in its output.\n",
}


def create_skill(
    root: Path, name: str, description: str, folders: Set[str] = DEFAULT_FOLDERS
) -> Path:
    """Write a new, valid skill `root/name` and return its folder.

    `folders` is any subset of `FOLDERS`. Raises `UsageError` for a name or description the
    spec refuses, an unknown folder, or a folder that already exists (nothing is written then).
    """
    unknown = sorted(set(folders) - set(FOLDERS))
    if unknown:
        raise UsageError(f"unknown folder {', '.join(unknown)}; choose from {', '.join(FOLDERS)}")
    _check(name, description)
    target = root.absolute() / name
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot use {root} as a skill root: {error.strerror}") from None
    with staged_folder(target) as staging:
        with_script = "scripts" in folders
        write_atomic(staging / "SKILL.md", skill_md_text(name, description, with_script).encode())
        for folder in sorted(folders):
            (staging / folder).mkdir(mode=FOLDER_MODE)
            if folder in _README:
                write_atomic(staging / folder / "README.md", _README[folder].encode())
        if with_script:
            write_atomic(staging / STARTER_SCRIPT, _RUN_PY.encode(), mode=0o755)
    return target


def skill_md_text(name: str, description: str, with_script: bool) -> str:
    """The SKILL.md of a new skill: block-style YAML front matter and a teaching body."""
    front: dict[str, object] = {"name": name, "description": description}
    if with_script:
        front["metadata"] = {COMMAND_KEY: STARTER_COMMAND}
    yaml_text = yaml.safe_dump(
        front, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1_000_000
    )
    run = (
        f"The workbench runs the command in `metadata.command` with the workspace as the\n"
        f"working directory, and sets `SKILL_DIR` (this folder) and `WORKSPACE`:\n\n"
        f"```sh\n{STARTER_COMMAND}\n```\n"
        if with_script
        else "Say which command to run, or which steps the agent should follow.\n"
    )
    return f"""---
{yaml_text}---

# {name}

## What it does

Say in a sentence or two what this skill does and when an agent should use it. Keep this
body short (the spec advises under 500 lines); move long detail into `references/`.

## How to run it

{run}
## What each posture does

- **local**: runs as you, with your files, network and environment. Nothing is isolated.
- **hardened**: resource limits, a private HOME and a scrubbed environment; still has the
  network and can read your files.
- **docker**: the skill is mounted read-only, the workspace read-write, and there is no network.
- **gvisor**: as docker, on a user-space kernel.
- **quickjs**: runs JavaScript files only, with access to the workspace and nothing else.
"""


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace `path` with `data` in one step: readers see the old file or the new, never half."""
    with atomic_file(path, mode) as file:
        file.write(data)


@contextmanager
def atomic_file(path: Path, mode: int = 0o644) -> Iterator[BinaryIO]:
    """A file to write that replaces `path` in one step when the block succeeds.

    It is a temporary file in the same folder, flushed to disk, then `os.replace`d onto `path`;
    on any failure it is removed and `path` is left as it was.
    """
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    temporary = Path(name)
    try:
        with os.fdopen(handle, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        temporary.chmod(mode)
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


@contextmanager
def staged_folder(target: Path) -> Iterator[Path]:
    """A staging folder named like `target`, moved to `target` when the block succeeds.

    It lives inside a hidden folder beside `target` (same file system, so the final rename is
    atomic; same name, so a skill loaded from it sees its real folder name). Raises
    `UsageError` when `target` exists, before and again just before the rename; on any failure
    the staging area is removed, so nothing is left behind.
    """
    _refuse_existing(target)
    outer = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    try:
        staging = outer / target.name
        staging.mkdir(mode=FOLDER_MODE)
        yield staging
        _refuse_existing(target)
        staging.rename(target)
    finally:
        shutil.rmtree(outer, ignore_errors=True)


def _refuse_existing(target: Path) -> None:
    if os.path.lexists(target):
        raise UsageError(f"{target} already exists; the workbench never overwrites a folder")


def _check(name: str, description: str) -> None:
    """Refuse what the validator would call a spec problem, with the validator's own words."""
    fields = {"name": name, "description": description}
    problems = check_front_matter(fields, {}, Path(name or "skill"), Path("SKILL.md"))
    refused = [problem.message for problem in problems if problem.is_error]
    if refused:
        raise UsageError(" ".join(refused))
