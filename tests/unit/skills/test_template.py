"""New skills from the template: valid from the start, refused names, never overwriting."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import skills_ref

from workbench.authoring.template import FOLDERS, atomic_file, create_skill, write_atomic
from workbench.errors import UsageError
from workbench.skills import load_skill


@pytest.mark.parametrize("folders", [set(), {"scripts"}, set(FOLDERS)])
def test_a_new_skill_is_valid_for_the_catalog_and_skills_ref(
    tmp_path: Path, folders: set[str]
) -> None:
    description = 'Checks things: "quoted", # not a comment,\nand a second line. Use it to learn.'
    folder = create_skill(tmp_path, "my-skill", description, folders)
    assert folder == tmp_path / "my-skill"
    skill = load_skill(folder)
    assert skill.valid, skill.diagnostics
    assert skill.diagnostics == ()
    assert skills_ref.validate(folder) == []
    assert skill.name == "my-skill"
    assert skill.description == description.strip()
    assert {p.name for p in folder.iterdir() if p.is_dir()} == folders
    for heading in ("## What it does", "## How to run it", "## What each posture does"):
        assert heading in skill.body


def test_the_starter_script_runs_as_its_command_says(tmp_path: Path) -> None:
    folder = create_skill(tmp_path / "root", "starter", "A starter skill.")
    skill = load_skill(folder)
    assert skill.command == 'python3 "$SKILL_DIR/scripts/run.py"'
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = {**os.environ, "SKILL_DIR": str(folder), "WORKSPACE": str(workspace)}
    command = skill.command.replace("python3", sys.executable, 1)
    result = subprocess.run(
        command, shell=True, cwd=workspace, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert (workspace / "hello.txt").read_text() == "Hello from the skill.\n"
    assert os.access(folder / "scripts" / "run.py", os.X_OK)


def test_without_scripts_there_is_no_command(tmp_path: Path) -> None:
    skill = load_skill(create_skill(tmp_path, "notes", "Notes only.", {"references"}))
    assert skill.command is None
    assert (skill.path / "references" / "README.md").is_file()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("My_Skill", "The name 'My_Skill' has capital letters"),
        ("-edge", "starts or ends with a hyphen"),
        ("../escape", "contains '.' '/'"),
        ("", "The skill has no name"),
        ("x" * 65, "The name is 65 characters; the limit is 64."),
    ],
)
def test_bad_names_are_refused_with_the_validators_message(
    tmp_path: Path, name: str, message: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        create_skill(tmp_path / "root", name, "A description.")
    assert list(tmp_path.iterdir()) == []


def test_an_empty_description_and_an_unknown_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="has no description"):
        create_skill(tmp_path, "ok-name", "  ")
    with pytest.raises(UsageError, match="unknown folder bin"):
        create_skill(tmp_path, "ok-name", "Fine.", {"bin"})
    assert list(tmp_path.iterdir()) == []


def test_a_root_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "root").write_text("a file")
    with pytest.raises(UsageError, match=r"cannot use .* as a skill root"):
        create_skill(tmp_path / "root", "fine", "A description.")


def test_an_existing_folder_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "mine.txt").write_text("keep me")
    with pytest.raises(UsageError, match="already exists"):
        create_skill(tmp_path, "taken", "A description.")
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["mine.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_write_atomic_replaces_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "SKILL.md"
    target.write_text("old")
    write_atomic(target, b"new", mode=0o600)
    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["SKILL.md"]


def test_atomic_file_keeps_the_old_file_when_writing_fails(tmp_path: Path) -> None:
    target = tmp_path / "package.skill"
    target.write_bytes(b"old")
    with pytest.raises(OSError, match="disk full"), atomic_file(target) as file:
        file.write(b"half")
        raise OSError("disk full")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["package.skill"]
