"""`workbench skills list|show|validate|new|package|import|preview`: skills on the command line.

Text for people by default, one schema-versioned JSON document with `--json`. Diagnostics print
as `path:line: error|warning: message`. `validate` exits 0 when every skill conforms to the
spec and 1 when any does not; an unknown skill or folder is a usage error (exit 2). `show`
includes the budget meter. `new` writes a skill from the template (a bad name or an existing
folder is a usage error); `package` and `import` write and read `.skill` zips and exit 1 with
the reason when a skill or a package is refused (`package` refuses a skill that breaks the
spec, which `import` would refuse, unless `--force`); `preview` prints the capability preview, a
prediction and never a security control. Every line is printed with control characters
escaped and bidi controls shown as markers (`plain_text`, as `workbench run` prints causes),
so no escape sequence from a skill reaches the terminal.
"""

import argparse
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from workbench.authoring.package import PackageError, export_skill, import_skill
from workbench.authoring.preview import preview
from workbench.authoring.template import FOLDERS, create_skill
from workbench.cli.output import emit_error, emit_json, warn
from workbench.runs.record import plain_text
from workbench.skills import (
    FileKind,
    FileNode,
    Skill,
    default_roots,
    discover,
    load_skill,
)
from workbench.skills import find_skill as find_named_skill
from workbench.skills.budget import budget
from workbench.skills.diagnostics import UNUSABLE


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
    new = actions.add_parser("new", help="create a new skill from the template")
    new.add_argument("name", metavar="NAME", help="the skill's name (lowercase, digits, hyphens)")
    new.add_argument("--description", required=True, help="what the skill does, when to use it")
    new.add_argument("--root", type=Path, default=Path("skills"), help="where (default ./skills)")
    new.add_argument(
        "--folders", default="scripts", help=f"comma-separated, from {','.join(FOLDERS)}"
    )
    new.set_defaults(handler=_new)
    package = actions.add_parser("package", help="write a skill as a .skill zip")
    package.add_argument("skill", metavar="SKILL", help="a skill folder, or a skill's name")
    package.add_argument("--output", type=Path, help="the file to write (default ./NAME.skill)")
    package.add_argument(
        "--force", action="store_true", help="package it even if it breaks the spec"
    )
    package.set_defaults(handler=_package)
    unpack = actions.add_parser("import", help="unpack a .skill zip into a skill root")
    unpack.add_argument("file", type=Path, metavar="FILE", help="the .skill file")
    unpack.add_argument(
        "--root", type=Path, default=Path("skills"), help="where (default ./skills)"
    )
    unpack.set_defaults(handler=_import)
    peek = actions.add_parser("preview", help="predict what each posture will block")
    peek.add_argument("skill", metavar="SKILL", help="a skill folder, or a skill's name")
    peek.set_defaults(handler=_preview)
    for action in (listing, show, validate, new, package, unpack, peek):
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
        _say("No skills found in " + ", ".join(str(root) for root in roots) + ".")
    for skill in skills:
        blocking = (d.message for d in skill.diagnostics if d.code in UNUSABLE)
        summary = skill.description if skill.usable else next(blocking)
        _say(f"{skill.name}  [{_status(skill)}]  {_first_line(summary)}")
        _say(f"    {skill.path}")
    return 0


def _show(args: argparse.Namespace) -> int:
    skill = find_named_skill(args.skill, default_roots())
    meter = budget(skill)
    if args.json:
        emit_json("skill", {"skill": _details(skill), "budget": asdict(meter)})
        return 0
    _say(f"name: {skill.name}  [{_status(skill)}]")
    _say(f"path: {skill.path}")
    _say(f"description: {skill.description}")
    if skill.command:
        _say(f"command: {skill.command}")
    _say(f"body: {skill.body_lines:,} lines, about {skill.body_tokens:,} tokens")
    _say(
        f"budget: metadata about {meter.metadata_tokens:,} tokens (advice about "
        f"{meter.advised_metadata_tokens}), body advice under {meter.advised_body_lines} lines "
        f"and {meter.advised_body_tokens:,} tokens"
    )
    sizes = ", ".join(
        f"{r.name} {_size(r.size)} ({r.files} file{'s' * (r.files != 1)})" for r in meter.resources
    )
    _say(f"resources (read only when needed): {sizes or 'none'}")
    for advice in meter.advice:
        _say(f"  advice: {advice}")
    _say("files:")
    for line in _tree_lines(skill.files, 1):
        _say(line)
    _say("problems:" if skill.diagnostics else "problems: none")
    for problem in skill.diagnostics:
        _say(f"  {problem}")
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
                _say(str(problem))
            _say(f"{skill.path}: {'valid' if skill.valid else 'INVALID'} ({_counts(skill)})")
    return 0 if all_valid else 1


def _new(args: argparse.Namespace) -> int:
    folders = {part.strip() for part in args.folders.split(",") if part.strip()}
    folder = create_skill(args.root, args.name, args.description, folders)
    if args.json:
        emit_json("skill-new", {"path": str(folder), "skill": _summary(load_skill(folder))})
    else:
        _say(f"Created {folder}")
        _say(f"Edit {folder / 'SKILL.md'}, then: workbench skills validate {folder}")
    return 0


def _package(args: argparse.Namespace) -> int:
    skill = find_named_skill(args.skill, default_roots())
    output = args.output or Path(f"{skill.path.name}.skill")
    try:
        written = export_skill(skill.path, output, force=args.force)
    except PackageError as error:
        forcible = not (skill.valid or args.force)
        hint = " (--force writes it anyway)" if forcible else ""
        return _refused("package", error, args.json, hint)
    if not skill.valid:
        warn(
            f"warning: {skill.name} breaks the spec ({_counts(skill)}); `skills import` refuses it"
        )
    if args.json:
        size = written.stat().st_size
        emit_json("skill-package", {"path": str(written), "size": size, "skill": skill.name})
    else:
        _say(f"Wrote {written} ({_size(written.stat().st_size)})")
    return 0


def _import(args: argparse.Namespace) -> int:
    try:
        folder = import_skill(args.file, args.root)
    except PackageError as error:
        return _refused("import", error, args.json)
    if args.json:
        emit_json("skill-import", {"path": str(folder), "skill": _summary(load_skill(folder))})
    else:
        _say(f"Imported {folder}")
    return 0


def _refused(action: str, error: PackageError, as_json: bool, hint: str = "") -> int:
    print(f"error: workbench skills {action}: {plain_text(str(error))}{hint}", file=sys.stderr)
    if as_json:
        emit_error(str(error))
    return 1


def _preview(args: argparse.Namespace) -> int:
    result = preview(find_named_skill(args.skill, default_roots()))
    if args.json:
        emit_json("skill-preview", asdict(result))
        return 0
    _say(f"Capability preview of {result.skill}")
    _say(result.notice)
    _say("findings:" if result.findings else "findings: none")
    for finding in result.findings:
        _say(f"  [{finding.capability}] {finding.summary}")
    _say(f"commands invoked: {', '.join(result.tools) or 'none'}")
    missing = ", ".join(result.missing_tools) or "none"
    _say(f"not in the sandbox image: {missing}")
    _say("per posture, with its default settings:")
    for prediction in result.predictions:
        _say(f"  {prediction.posture}: {prediction.verdict}")
        for line in prediction.blocked:
            _say(f"    blocked: {line}")
        for line in prediction.allowed:
            _say(f"    allowed: {line}")
    for line in result.skipped:
        _say(f"  not read: {line}")
    return 0


def _say(line: str) -> None:
    """Print `line` for people, with nothing in it that could drive the terminal."""
    print(plain_text(line))


def _status(skill: Skill) -> str:
    verdict = "unusable" if not skill.usable else "valid" if skill.valid else "invalid"
    return f"{verdict}, {_counts(skill)}" if skill.diagnostics else verdict


def _counts(skill: Skill) -> str:
    """`2 errors, 1 warning`, `no problems`."""
    errors = sum(d.is_error for d in skill.diagnostics)
    counts = [(errors, "error"), (len(skill.diagnostics) - errors, "warning")]
    said = [f"{n} {noun}{'s' * (n != 1)}" for n, noun in counts if n]
    return ", ".join(said) or "no problems"


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
        "errors": sum(d.is_error for d in skill.diagnostics),
        "warnings": sum(not d.is_error for d in skill.diagnostics),
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
