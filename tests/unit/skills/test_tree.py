"""A skill's file tree: sizes, kinds, order, and how the cap is spent and counted."""

from pathlib import Path

from workbench.skills import Code, FileKind, FileNode
from workbench.skills.files import MAX_TREE_DEPTH, MAX_TREE_ENTRIES, walk_tree


def names(node: FileNode) -> list[str]:
    return [child.name for child in node.children]


def test_sizes_kinds_and_name_order(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.py").write_text("x" * 10)
    (tmp_path / "SKILL.md").write_text("y" * 5)
    (tmp_path / "link").symlink_to("SKILL.md")
    root, problems = walk_tree(tmp_path)
    assert problems == []
    assert names(root) == ["SKILL.md", "link", "scripts"]
    skill_md, link, scripts = root.children
    assert (skill_md.kind, skill_md.size) == (FileKind.FILE, 5)
    assert (link.kind, link.link_target) == (FileKind.SYMLINK, "SKILL.md")
    assert (scripts.kind, scripts.size, names(scripts)) == (FileKind.DIRECTORY, 10, ["run.py"])
    assert root.size == 15
    assert root.total_omitted == 0


def test_direct_entries_are_listed_before_deeper_ones(tmp_path: Path) -> None:
    deep = tmp_path / "a-deep"
    deep.mkdir()
    for index in range(MAX_TREE_ENTRIES):
        (deep / f"{index:04}").touch()
    (tmp_path / "z-top.md").touch()
    root, [problem] = walk_tree(tmp_path)
    assert names(root) == ["a-deep", "z-top.md"]
    assert len(root.children[0].children) == MAX_TREE_ENTRIES - 2
    assert root.children[0].omitted == 2
    assert root.total_omitted == 2
    assert problem.code is Code.FILE_TREE_TRUNCATED
    assert f"shows {MAX_TREE_ENTRIES} entries and leaves out 2 more" in problem.message


def test_deep_chains_stop_at_the_depth_limit(tmp_path: Path) -> None:
    folder = tmp_path
    for _ in range(MAX_TREE_DEPTH + 10):
        folder = folder / "d"
        folder.mkdir()
    root, [problem] = walk_tree(tmp_path)
    depth, node = 0, root
    while node.children:
        depth, node = depth + 1, node.children[0]
    assert depth == MAX_TREE_DEPTH
    assert node.omitted == 1
    assert "leaves out 1 more" in problem.message
