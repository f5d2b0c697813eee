"""Discovery under roots, finding a skill by name or path, and the bundled example skills."""

import re
from pathlib import Path

import pytest

from workbench.errors import UsageError
from workbench.platform.paths import example_skills_dir
from workbench.postures.model import PostureId
from workbench.skills import default_roots, discover, find_skill, load_skill, skill_with_text

EXAMPLES = sorted(path.name for path in example_skills_dir().iterdir())


def make_skill(folder: Path, name: str | None = None) -> Path:
    folder.mkdir(parents=True)
    text = f"---\nname: {name or folder.name}\ndescription: The {folder.name} skill.\n---\n"
    (folder / "SKILL.md").write_text(text)
    return folder


def test_discover_sorts_by_name_and_looks_one_level_deep(tmp_path: Path) -> None:
    make_skill(tmp_path / "root" / "zeta")
    make_skill(tmp_path / "root" / "alpha")
    make_skill(tmp_path / "root" / "group" / "too-deep")
    (tmp_path / "root" / "notes.txt").write_text("not a skill")
    assert [s.name for s in discover([tmp_path / "root"])] == ["alpha", "zeta"]


def test_a_root_may_be_a_skill_itself(tmp_path: Path) -> None:
    folder = make_skill(tmp_path / "solo")
    make_skill(folder / "nested")
    assert [s.path for s in discover([folder])] == [folder]


def test_missing_roots_are_skipped_and_duplicates_listed_once(tmp_path: Path) -> None:
    real = make_skill(tmp_path / "root" / "report")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "report-link").symlink_to(real)
    skills = discover([tmp_path / "missing", tmp_path / "root", tmp_path / "other", real])
    assert [s.path for s in skills] == [real]


def test_default_roots_start_with_the_examples_and_end_with_extras(tmp_path: Path) -> None:
    roots = default_roots([tmp_path])
    assert roots[0] == example_skills_dir()
    assert Path.home() / ".claude" / "skills" in roots
    assert roots[-1] == tmp_path


def test_find_skill_by_path_or_name(tmp_path: Path) -> None:
    folder = make_skill(tmp_path / "root" / "folder-name", name="front-matter-name")
    roots = [tmp_path / "root"]
    assert find_skill(str(folder), roots).path == folder
    assert find_skill("front-matter-name", roots).path == folder
    assert find_skill("folder-name", roots).path == folder


def test_find_skill_refuses_unknown_and_ambiguous_names(tmp_path: Path) -> None:
    make_skill(tmp_path / "a" / "twin")
    make_skill(tmp_path / "b" / "twin")
    roots = [tmp_path / "a", tmp_path / "b"]
    with pytest.raises(UsageError, match="no skill named 'nope'"):
        find_skill("nope", roots)
    with pytest.raises(UsageError, match="more than one skill"):
        find_skill("twin", roots)
    with pytest.raises(UsageError, match="no such skill folder"):
        find_skill(str(tmp_path / "absent"), roots)


def test_load_skill_on_a_file_or_an_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "empty").mkdir()
    assert [d.code for d in load_skill(tmp_path / "file").diagnostics] == ["not-a-folder"]
    empty = load_skill(tmp_path / "empty")
    assert [d.code for d in empty.diagnostics] == ["missing-skill-md"]
    assert (empty.name, empty.usable, empty.valid) == ("empty", False, False)


def test_there_are_six_examples() -> None:
    assert len(EXAMPLES) == 6
    assert [s.path.name for s in discover([example_skills_dir()])] == EXAMPLES


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_is_valid_and_teaches_every_posture(name: str) -> None:
    skill = load_skill(example_skills_dir() / name)
    assert skill.valid and skill.name == name
    assert [d.code for d in skill.diagnostics] == []
    for posture in PostureId:
        assert re.search(rf"\*\*{posture}\*\*", skill.body), f"{name} says nothing of {posture}"
    assert skill.command is not None
    assert skill.command in skill.body  # the body shows the exact command
    script = re.search(r"scripts/[\w.-]+", skill.command)
    assert script is not None and (skill.path / script.group()).is_file()


def test_an_edited_skill_md_is_checked_in_memory(tmp_path: Path) -> None:
    folder = make_skill(tmp_path / "demo")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "run.py").write_text("print(1)\n")
    skill = load_skill(folder)
    before = sorted((p, p.stat().st_mtime_ns) for p in folder.rglob("*"))
    edited = skill_with_text(skill, "---\ndescription: d\nname: Demo\n---\nBody\n")
    assert edited.diagnostics
    assert {(d.file, d.line) for d in edited.diagnostics} == {(skill.skill_md, 3)}
    assert not edited.valid
    assert edited.files == skill.files
    fixed = skill_with_text(skill, "---\nname: demo\ndescription: Fixed.\n---\n# New body\n")
    assert fixed.valid and fixed.description == "Fixed." and fixed.body == "# New body\n"
    assert sorted((p, p.stat().st_mtime_ns) for p in folder.rglob("*")) == before
