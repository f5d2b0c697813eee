"""`workbench skills list|show|validate`: the skill catalog on the command line.

Text for people by default, one schema-versioned JSON document with `--json`. Diagnostics print
as `path:line: error|warning: message`. `validate` exits 0 when every skill conforms to the
spec and 1 when any does not; an unknown skill or folder is a usage error (exit 2).
"""

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import Any

from workbench.cli.output import emit_json
from workbench.skills import (
    DiagnosticSeverity,
    FileKind,
    FileNode,
    Skill,
    default_roots,
    discover,
)
from workbench.skills import find_skill as find_named_skill


def register(commands: "argparse._SubParsersAction[Any]") -> None:
    """Add the `skills` subcommand group."""
    parser = commands.add_parser("skills", help="list, show and validate skills")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    listing = actions.add_parser("list", help="list the skills under the default roots or DIRs")
    listing.add_argument("dirs", nargs="*", type=Path, metavar="DIR", help="skill roots to list")
    listing.set_defaults(handler=_list)
    show = actions.add_parser("show", help="show one skill: fields, files, diagnostics")
    show.add_argument("skill", metavar="SKILL", help="a skill folder, or a skill's name")
    show.set_defaults(handler=_show)
    validate = actions.add_parser("validate", help="check skills against the Agent Skills spec")
    validate.add_argument("skills", nargs="+", metavar="SKILL", help="skill folders or names")
    validate.set_defaults(handler=_validate)
    for action in (listing, show, validate):
        action.add_argument("--json", action="store_true", help="print one JSON document")


def _list(args: argparse.Namespace) -> int:
    roots = list(args.dirs) or default_roots()
    skills = discover(roots)
    if args.json:
        emit_json(
            "skills-list",
            {"roots": [str(root) for root in roots], "skills": [_summary(s) for s in skills]},
        )
        return 0
    if not skills:
        print("No skills found in " + ", ".join(str(root) for root in roots) + ".")
    for skill in skills:
        errors = (d.message for d in skill.diagnostics if d.severity is DiagnosticSeverity.ERROR)
        summary = skill.description if skill.usable else next(errors)
        print(f"{skill.name}  [{_status(skill)}]  {_first_line(summary)}")
        print(f"    {skill.path}")
    return 0


def _show(args: argparse.Namespace) -> int:
    skill = find_named_skill(args.skill, default_roots())
    if args.json:
        emit_json("skill", {"skill": _details(skill)})
        return 0
    print(f"name: {skill.name}  [{_status(skill)}]")
    print(f"path: {skill.path}")
    print(f"description: {skill.description}")
    if skill.command:
        print(f"command: {skill.command}")
    print(f"body: {skill.body_lines:,} lines, about {skill.body_tokens:,} tokens")
    print("files:")
    for line in _tree_lines(skill.files, 1):
        print(line)
    print("problems:" if skill.diagnostics else "problems: none")
    for problem in skill.diagnostics:
        print(f"  {problem}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    roots = default_roots()
    skills = [find_named_skill(name, roots) for name in args.skills]
    all_valid = all(skill.valid for skill in skills)
    if args.json:
        emit_json(
            "skills-validate",
            {"valid": all_valid, "skills": [_summary(s, diagnostics=True) for s in skills]},
        )
    else:
        for skill in skills:
            for problem in skill.diagnostics:
                print(problem)
            verdict = "valid" if skill.valid else f"INVALID ({_spec_count(skill)})"
            print(f"{skill.path}: {verdict}")
    return 0 if all_valid else 1


def _status(skill: Skill) -> str:
    if not skill.usable:
        return "unusable"
    if not skill.valid:
        return f"invalid: {_spec_count(skill)}"
    warnings = len(skill.diagnostics)
    return f"valid, {warnings} warning{'s' * (warnings != 1)}" if warnings else "valid"


def _spec_count(skill: Skill) -> str:
    count = sum(d.spec_violation for d in skill.diagnostics)
    return f"{count} spec problem{'s' * (count != 1)}"


def _first_line(text: str, width: int = 80) -> str:
    line = text.partition("\n")[0]
    return line if len(line) <= width else line[: width - 1] + "…"


def _tree_lines(node: FileNode, depth: int) -> list[str]:
    lines = []
    for child in node.children:
        indent = "  " * depth
        if child.kind is FileKind.DIRECTORY:
            lines.append(f"{indent}{child.name}/")
            lines += _tree_lines(child, depth + 1)
        elif child.kind is FileKind.SYMLINK:
            lines.append(f"{indent}{child.name} -> {child.link_target} (link, not followed)")
        else:
            lines.append(f"{indent}{child.name}  {_size(child.size)}")
    if node.omitted:
        lines.append(f"{'  ' * depth}... {node.omitted:,} more not shown")
    return lines


def _size(size: int) -> str:
    if size < 1024:
        return f"{size:,} B"
    if size < 1024 * 1024:
        return f"{size / 1024:,.1f} KiB"
    return f"{size / (1024 * 1024):,.1f} MiB"


def _summary(skill: Skill, diagnostics: bool = False) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "name": skill.name,
        "path": str(skill.path),
        "description": skill.description,
        "usable": skill.usable,
        "valid": skill.valid,
        "command": skill.command,
        "errors": sum(d.severity is DiagnosticSeverity.ERROR for d in skill.diagnostics),
        "warnings": sum(d.severity is DiagnosticSeverity.WARNING for d in skill.diagnostics),
    }
    if diagnostics:
        summary["diagnostics"] = [asdict(problem) for problem in skill.diagnostics]
    return summary


def _details(skill: Skill) -> dict[str, Any]:
    return {
        **_summary(skill, diagnostics=True),
        "skill_md": str(skill.skill_md),
        "front_matter": skill.front_matter,
        "body": skill.body,
        "body_start_line": skill.body_start_line,
        "body_lines": skill.body_lines,
        "body_tokens": skill.body_tokens,
        "files": asdict(skill.files),
    }
