"""The catalog: loading one skill folder (or checking an edited SKILL.md in memory), finding
skill folders under roots, naming a skill.

A root is either a skill folder itself or a folder of skill folders, searched one level deep
and no further. Links among a root's entries are followed (installing a skill by linking it
into ~/.claude/skills is common); the same folder reached twice is listed once.
"""

import os
from collections.abc import Sequence
from pathlib import Path

from workbench.errors import UsageError
from workbench.platform.paths import example_skills_dir, user_skill_roots
from workbench.skills.diagnostics import Diagnostic
from workbench.skills.files import FileNode, walk_tree
from workbench.skills.frontmatter import SkillDocument, parse_skill_md
from workbench.skills.model import Skill
from workbench.skills.reading import find_skill_md, read_skill_md
from workbench.skills.rules import check_body, check_front_matter


def load_skill(path: Path) -> Skill:
    """Load the skill folder `path`. Never raises for bad content: problems become diagnostics."""
    folder = path.absolute()
    text = read_skill_md(folder)
    files, tree_problems = walk_tree(folder)
    return _assemble(folder, text.path, text.text, [*text.diagnostics], files, tree_problems)


def skill_with_text(skill: Skill, text: str) -> Skill:
    """`skill` as it would be with `text` as its SKILL.md, checked in memory (nothing is read
    or written): the diagnostics are SKILL.md's only, the files those `skill` lists."""
    return _assemble(skill.path, skill.skill_md, text, [], skill.files, [])


def _assemble(
    folder: Path,
    skill_md: Path,
    text: str | None,
    diagnostics: list[Diagnostic],
    files: FileNode,
    tree_problems: list[Diagnostic],
) -> Skill:
    document = SkillDocument()
    if text is not None:
        document = parse_skill_md(text, skill_md)
        diagnostics += document.diagnostics
        if document.front_matter is not None:
            diagnostics += check_front_matter(
                document.front_matter, document.key_lines, folder, skill_md
            )
            diagnostics += check_body(document.body, skill_md, document.body_start_line)
    front_matter = document.front_matter or {}
    name = front_matter.get("name")
    description = front_matter.get("description")
    return Skill(
        name=name.strip() if isinstance(name, str) and name.strip() else folder.name,
        path=folder,
        skill_md=skill_md,
        description=description.strip() if isinstance(description, str) else "",
        front_matter=front_matter,
        body=document.body,
        body_start_line=document.body_start_line,
        diagnostics=(*sorted(diagnostics, key=_by_line), *tree_problems),
        files=files,
    )


def default_roots(extra: Sequence[Path] = ()) -> list[Path]:
    """The bundled examples, ~/.claude/skills, ./skills, then the roots the user added."""
    return [example_skills_dir(), *user_skill_roots(), *extra]


def skill_folders(root: Path) -> list[Path]:
    """`root` if it is a skill folder, else its subfolders holding a SKILL.md (none if missing)."""
    if find_skill_md(root) is not None:
        return [root]
    try:
        with os.scandir(root) as entries:
            folders = [Path(entry.path) for entry in entries if _is_dir(entry)]
    except OSError:
        return []
    return sorted(folder for folder in folders if find_skill_md(folder) is not None)


def discover(roots: Sequence[Path]) -> list[Skill]:
    """Every skill under `roots`, sorted by name; missing roots are skipped silently."""
    seen: set[Path] = set()
    skills = []
    for root in roots:
        for folder in skill_folders(root):
            real = folder.resolve()
            if real not in seen:
                seen.add(real)
                skills.append(load_skill(folder))
    return sorted(skills, key=lambda skill: (skill.name, str(skill.path)))


def find_skill(name_or_path: str, roots: Sequence[Path]) -> Skill:
    """The skill at the folder `name_or_path`, or the one so named under `roots`.

    Raises `UsageError` when there is no such folder or skill, or when the name is ambiguous.
    """
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return load_skill(path)
    if os.sep in name_or_path or name_or_path.startswith("."):
        raise UsageError(f"{name_or_path}: no such skill folder")
    matches = [s for s in discover(roots) if name_or_path in (s.name, s.path.name)]
    if not matches:
        searched = ", ".join(str(root) for root in roots)
        raise UsageError(
            f"no skill named '{name_or_path}' in {searched}; give the path of a skill folder"
        )
    if len(matches) > 1:
        places = ", ".join(str(skill.path) for skill in matches)
        raise UsageError(f"'{name_or_path}' names more than one skill ({places}); give a path")
    return matches[0]


def _by_line(problem: Diagnostic) -> int:
    return problem.line or 0


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows a link to a folder
    except OSError:
        return False
