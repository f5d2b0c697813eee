"""Hostile skills never hang or crash the catalog: each gets a clear diagnostic within 5 s."""

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench.skills import Code, FileKind, Skill, discover, load_skill
from workbench.skills.files import MAX_TREE_ENTRIES
from workbench.skills.reading import MAX_SKILL_MD_BYTES

LIMIT_S = 5.0
VALID_HEAD = "---\nname: {name}\ndescription: A skill.\n---\n"


def timed_load(folder: Path) -> Skill:
    start = time.monotonic()
    skill = load_skill(folder)
    assert time.monotonic() - start < LIMIT_S
    return skill


def make_skill(root: Path, name: str, text: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    return folder


def codes(skill: Skill) -> set[Code]:
    return {d.code for d in skill.diagnostics}


def only(skill: Skill, code: Code) -> str:
    """The message of the one diagnostic with `code`."""
    [message] = [d.message for d in skill.diagnostics if d.code is code]
    return message


def test_billion_laughs_is_refused(tmp_path: Path) -> None:
    levels = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    levels += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    text = "---\nname: bomb\ndescription: x\n" + "\n".join(levels) + "\n---\n"
    skill = timed_load(make_skill(tmp_path, "bomb", text))
    assert Code.YAML_TOO_COMPLEX in codes(skill)
    assert "alias bomb" in only(skill, Code.YAML_TOO_COMPLEX)
    assert not skill.usable


@pytest.mark.parametrize(
    "nesting",
    [
        "a: " + "[" * 20_000 + "]" * 20_000,
        "a:\n"
        + "".join("  " * depth + f"k{depth}:\n" for depth in range(1, 200))
        + "  " * 200
        + "x",
    ],
    ids=["flow", "block"],
)
def test_deep_nesting_is_refused(tmp_path: Path, nesting: str) -> None:
    text = "---\nname: deep\ndescription: x\n" + nesting + "\n---\n"
    skill = timed_load(make_skill(tmp_path, "deep", text))
    assert "nests deeper than" in only(skill, Code.YAML_TOO_COMPLEX)


def test_unsafe_yaml_tag_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = (
        "---\nname: tag\ndescription: x\n"
        f"run: !!python/object/apply:os.system\n  - touch {marker}\n---\n"
    )
    skill = timed_load(make_skill(tmp_path, "tag", text))
    problem = next(d for d in skill.diagnostics if d.code is Code.YAML_TAG)
    assert problem.line == 4
    assert "!python/object/apply:os.system" in problem.message
    assert not marker.exists()
    assert not skill.usable


def test_gigabyte_sparse_skill_md_is_read_only_up_to_the_cap(tmp_path: Path) -> None:
    folder = tmp_path / "huge"
    folder.mkdir()
    with (folder / "SKILL.md").open("wb") as file:
        file.truncate(1024**3)
    skill = timed_load(folder)
    assert "1,024.0 MiB" in only(skill, Code.SKILL_MD_TOO_LARGE)
    assert codes(skill) == {Code.SKILL_MD_TOO_LARGE, Code.NO_FRONT_MATTER}
    assert len(skill.body) <= MAX_SKILL_MD_BYTES


def test_oversized_skill_md_keeps_its_front_matter_usable(tmp_path: Path) -> None:
    text = VALID_HEAD.format(name="big") + "words and more words\n" * 100_000
    skill = timed_load(make_skill(tmp_path, "big", text))
    assert skill.usable and skill.valid
    assert {Code.SKILL_MD_TOO_LARGE, Code.BODY_TOO_LONG} <= codes(skill)
    assert skill.body.endswith("words\n")  # cut at a line end, within the cap
    assert len(skill.body.encode()) <= MAX_SKILL_MD_BYTES


def test_fifo_is_never_opened(tmp_path: Path) -> None:
    folder = tmp_path / "fifo"
    folder.mkdir()
    os.mkfifo(folder / "SKILL.md")
    skill = timed_load(folder)
    assert "FIFO" in only(skill, Code.NOT_A_REGULAR_FILE)
    assert skill.files.children[0].kind is FileKind.OTHER


def test_folder_named_skill_md_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "dir" / "SKILL.md").mkdir(parents=True)
    assert "a folder" in only(timed_load(tmp_path / "dir"), Code.NOT_A_REGULAR_FILE)


@pytest.mark.parametrize("target", ["/dev/zero", "outside"])
def test_skill_md_link_out_of_the_skill_is_not_followed(tmp_path: Path, target: str) -> None:
    secret = tmp_path / "outside"
    secret.write_text(VALID_HEAD.format(name="linked") + "SECRET CONTENT\n")
    folder = tmp_path / "linked"
    folder.mkdir()
    (folder / "SKILL.md").symlink_to(secret if target == "outside" else target)
    skill = timed_load(folder)
    assert "outside the skill folder" in only(skill, Code.SKILL_MD_LINK)
    assert "SECRET" not in skill.body
    assert skill.front_matter == {}


def test_skill_md_link_loop_is_reported(tmp_path: Path) -> None:
    folder = tmp_path / "loop"
    folder.mkdir()
    (folder / "SKILL.md").symlink_to("SKILL.md")
    assert "looping" in only(timed_load(folder), Code.SKILL_MD_LINK)


def test_skill_md_link_inside_the_skill_is_followed(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, "inside", "")
    (folder / "SKILL.md").unlink()
    (folder / "docs").mkdir()
    (folder / "docs" / "manifest.md").write_text(VALID_HEAD.format(name="inside"))
    (folder / "SKILL.md").symlink_to("docs/manifest.md")
    skill = timed_load(folder)
    assert skill.valid and skill.description == "A skill."


def test_invalid_utf8_is_decoded_with_replacement(tmp_path: Path) -> None:
    folder = tmp_path / "latin1"
    folder.mkdir()
    head = VALID_HEAD.format(name="latin1").encode()
    (folder / "SKILL.md").write_bytes(head + b"# Caf\xe9 cr\xe8me\n")
    skill = timed_load(folder)
    problem = next(d for d in skill.diagnostics if d.code is Code.INVALID_UTF8)
    assert f"offset {len(head) + 5}" in problem.message
    assert problem.line == 5
    assert "Caf\N{REPLACEMENT CHARACTER}" in skill.body
    assert skill.usable and not skill.valid


def test_skill_folder_that_is_a_link_loop(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    skill = timed_load(tmp_path / "loop")
    assert [d.code for d in skill.diagnostics] == [Code.NOT_A_FOLDER]
    assert skill.files.kind is FileKind.OTHER


def test_symlink_loops_in_the_tree_are_listed_not_followed(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, "loops", VALID_HEAD.format(name="loops"))
    (folder / "a").symlink_to("b")
    (folder / "b").symlink_to("a")
    (folder / "self").symlink_to(".")
    skill = timed_load(folder)
    kinds = {node.name: node.kind for node in skill.files.children}
    assert kinds == {
        "SKILL.md": FileKind.FILE,
        "a": FileKind.SYMLINK,
        "b": FileKind.SYMLINK,
        "self": FileKind.SYMLINK,
    }
    assert sum(d.code is Code.SYMLINK_LOOP for d in skill.diagnostics) == 2
    assert skill.valid  # tree problems are advice, not spec violations


def test_links_out_of_the_skill_are_listed_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "home"
    (outside / ".ssh").mkdir(parents=True)
    (outside / ".ssh" / "id_rsa").write_text("PRIVATE")
    folder = make_skill(tmp_path, "escape", VALID_HEAD.format(name="escape"))
    (folder / "ssh").symlink_to(outside / ".ssh")
    skill = timed_load(folder)
    node = next(n for n in skill.files.children if n.name == "ssh")
    assert node.kind is FileKind.SYMLINK
    assert node.children == ()
    assert node.link_target == str(outside / ".ssh")
    assert "outside the skill" in only(skill, Code.SYMLINK_OUTSIDE)


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = make_skill(
        tmp_path_factory.mktemp("crowd"), "crowded", VALID_HEAD.format(name="crowded")
    )
    for index in range(20_000):
        (folder / f"f{index:05}.txt").touch()
    yield folder


def test_twenty_thousand_files_are_capped_and_counted(crowded: Path) -> None:
    skill = timed_load(crowded)
    assert len(skill.files.children) == MAX_TREE_ENTRIES
    assert skill.files.omitted == 20_001 - MAX_TREE_ENTRIES
    assert "leaves out 19,501 more" in only(skill, Code.FILE_TREE_TRUNCATED)
    assert skill.valid


def test_discovery_survives_a_hostile_root(tmp_path: Path, crowded: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    os.mkfifo(root / "fifo")
    (root / "loop").symlink_to("loop")
    (root / "crowded").symlink_to(crowded)
    fifo_skill = root / "fifo-skill"
    fifo_skill.mkdir()
    os.mkfifo(fifo_skill / "SKILL.md")
    start = time.monotonic()
    skills = discover([root])
    assert time.monotonic() - start < LIMIT_S
    assert [(s.name, s.usable) for s in skills] == [("crowded", True), ("fifo-skill", False)]
