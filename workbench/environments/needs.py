"""What a skill needs beyond the sandbox image, declared or inferred, read without running it.

`read_needs(skill)` reads what the skill declares: `requirements.txt` in its root or `scripts/`
(requirement lines that name a distribution; options, URLs and paths are refused and listed, so
a build installs from the package registry and nothing else), the `dependencies` of a
`package.json` in the same places, and the front matter's `compatibility` text, a hint for the
person. It infers the rest statically, through the capability preview's bounded read: the
third-party imports of the skill's Python scripts (the standard library and the skill's own
modules left out; an import guarded by `except ImportError` is optional), each mapped to its
distribution (`names.distribution_of`), and the commands its scripts run that the sandbox image
lacks, each with the Debian package that provides it. `Needs.python` is the proposal to build:
the declared requirements when the skill declares any, else the inferred distributions.
"""

import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from workbench.authoring.preview import preview
from workbench.authoring.scriptfiles import read_bounded, read_scripts
from workbench.environments.names import (
    DEBIAN_PACKAGES,
    LIBRARY_PACKAGES,
    canonical,
    distribution_of,
)
from workbench.skills.model import Skill
from workbench.skills.scripts import python_imports

DECLARATION_FOLDERS = ("", "scripts")
_REQUIREMENT = re.compile(
    r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)[ \t]*(?:\[[A-Za-z0-9._, \t-]*\])?"
    r"[ \t]*(?:(?:===?|~=|!=|<=?|>=?)[ \t]*[A-Za-z0-9.*+!_-]+[ \t]*,?[ \t]*)*(?:;[^@\n\r]*)?\Z"
)
_HASH_OPTION = re.compile(r"\s--hash[=\s]\S+")
_NODE_NAME = re.compile(r"^(@[a-z0-9~][a-z0-9-._~]*/)?[a-z0-9~][a-z0-9-._~]*\Z")  # no "-x"
_NODE_RANGE = re.compile(r"^[\w.*^~<>=| -]*$")
_STDLIB = frozenset(sys.stdlib_module_names)


@dataclass(frozen=True, slots=True)
class Inferred:
    """One distribution the skill's scripts import: which modules, where (`file:line`), and
    whether every import of it is optional."""

    distribution: str
    modules: tuple[str, ...]
    places: tuple[str, ...]
    optional: bool


@dataclass(frozen=True, slots=True)
class Tool:
    """A command the skill's scripts run that the sandbox image lacks, with the Debian package
    that provides it (commands no package is known for are left out: a static read of shell
    text also finds words that are no commands)."""

    name: str
    package: str
    places: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Needs:
    """Everything `read_needs` found (see the module docstring)."""

    declared: tuple[str, ...] = ()
    declared_in: tuple[str, ...] = ()
    node: tuple[str, ...] = ()  # `name@range` of package.json's dependencies
    node_in: tuple[str, ...] = ()
    compatibility: str = ""
    inferred: tuple[Inferred, ...] = ()
    tools: tuple[Tool, ...] = ()
    refused: tuple[str, ...] = ()  # declaration lines not installed, each with why
    skipped: tuple[str, ...] = ()  # what the bounded read left out

    @property
    def python(self) -> tuple[str, ...]:
        """The Python requirements to build: declared ones, else the required inferred ones."""
        if self.declared_in:
            return self.declared
        return tuple(item.distribution for item in self.inferred if not item.optional)

    @property
    def library_packages(self) -> tuple[tuple[str, str], ...]:
        """(distribution, Debian package) for each library to build that runs a program of a
        Debian package (pdf2image runs poppler-utils' pdftoppm)."""
        return tuple(
            (requirement_name(requirement), package)
            for requirement in self.python
            for package in LIBRARY_PACKAGES.get(canonical(requirement_name(requirement)), ())
        )

    @property
    def system(self) -> tuple[str, ...]:
        """The Debian packages the image needs added: for the tools, and for the libraries."""
        packages = {tool.package for tool in self.tools}
        packages.update(package for _, package in self.library_packages)
        return tuple(sorted(packages))


def read_needs(skill: Skill) -> Needs:
    """What `skill` needs (see the module docstring); reads, never runs."""
    refused: list[str] = []
    skipped: list[str] = []
    declared, declared_in = _declared_python(skill.path, refused, skipped)
    node, node_in = _declared_node(skill.path, refused, skipped)
    compatibility = skill.front_matter.get("compatibility")
    return Needs(
        declared=declared,
        declared_in=declared_in,
        node=node,
        node_in=node_in,
        compatibility=compatibility.strip() if isinstance(compatibility, str) else "",
        inferred=_inferred(skill.path, skipped),
        tools=_tools(skill),
        refused=tuple(refused),
        skipped=tuple(dict.fromkeys(skipped)),
    )


def requirement_name(requirement: str) -> str:
    """The distribution a requirement line names (`PyYAML` of `PyYAML>=6; python_version>'3'`)."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    return match.group(0) if match else requirement.strip()


def parse_requirement(line: str) -> str | None:
    """`line` as a requirement to install (extras, versions and markers kept, hashes dropped);
    None when it names no distribution of the registry (an option, a URL, a path) or holds a
    line break (which would smuggle an installer option into the requirements file)."""
    text = _HASH_OPTION.sub("", " " + line).strip()
    return text if _REQUIREMENT.match(text) and "://" not in text else None


def _declared_python(
    folder: Path, refused: list[str], skipped: list[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    found: list[str] = []
    files: list[str] = []
    for relative in _declarations(folder, "requirements.txt"):
        data = read_bounded(folder / relative, skipped, relative)
        if data is None:
            continue
        files.append(relative)
        text = data.decode("utf-8", errors="replace").replace("\\\n", " ")
        for number, raw in enumerate(text.splitlines(), 1):
            line = re.sub(r"(^|\s)#.*$", "", raw).strip()
            if not line:
                continue
            requirement = parse_requirement(line)
            if requirement is None:
                refused.append(
                    f"{relative}:{number}: {line[:80]} (only requirements naming a package of "
                    "the registry are installed: no options, URLs or paths)"
                )
            elif requirement not in found:
                found.append(requirement)
    return tuple(found), tuple(files)


def _declared_node(
    folder: Path, refused: list[str], skipped: list[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    found: list[str] = []
    files: list[str] = []
    for relative in _declarations(folder, "package.json"):
        data = read_bounded(folder / relative, skipped, relative)
        try:
            document = json.loads(data or b"")
        except ValueError:
            refused.append(f"{relative}: not valid JSON")
            continue
        dependencies = document.get("dependencies") if isinstance(document, dict) else None
        files.append(relative)
        for name, version in (dependencies if isinstance(dependencies, dict) else {}).items():
            if isinstance(version, str) and _NODE_NAME.match(name) and _NODE_RANGE.match(version):
                found.append(f"{name}@{version.strip() or '*'}")
            else:
                refused.append(
                    f"{relative}: {name[:60]} {str(version)[:60]} (only packages of the "
                    "registry with a version range are installed: no URLs, paths or git)"
                )
    return tuple(dict.fromkeys(found)), tuple(files)


def _declarations(folder: Path, name: str) -> list[str]:
    """`name` in the skill's root and `scripts/`, relative to the skill, where it is a file."""
    relatives = [str(PurePosixPath(sub) / name) for sub in DECLARATION_FOLDERS]
    return [relative for relative in relatives if (folder / relative).is_file()]


def _inferred(folder: Path, skipped: list[str]) -> tuple[Inferred, ...]:
    read, unread = read_scripts(folder)
    skipped += unread
    scripts = [s for s in read if s.language == "python"]
    local = {part.removesuffix(".py") for s in scripts for part in PurePosixPath(s.relative).parts}
    modules: dict[str, set[str]] = defaultdict(set)
    places: dict[str, list[str]] = defaultdict(list)
    required: set[str] = set()
    for script in scripts:
        for found in python_imports(script.text):
            top = found.module.split(".")[0]
            if top in _STDLIB or top in local or top == "__future__":
                continue
            distribution = distribution_of(found.module)
            modules[distribution].add(top)
            places[distribution].append(f"{script.relative}:{found.line}")
            if not found.optional:
                required.add(distribution)
    return tuple(
        Inferred(name, tuple(sorted(modules[name])), tuple(places[name]), name not in required)
        for name in sorted(modules, key=str.lower)
    )


def _tools(skill: Skill) -> tuple[Tool, ...]:
    found = preview(skill)
    places: dict[str, list[str]] = defaultdict(list)
    for finding in found.findings:
        if finding.tool in found.missing_tools and finding.tool in DEBIAN_PACKAGES:
            places[finding.tool].append(f"{finding.file}:{finding.line or 1}")
    return tuple(
        Tool(name, DEBIAN_PACKAGES[name], tuple(dict.fromkeys(where)))
        for name, where in sorted(places.items())
    )
