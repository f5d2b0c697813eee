"""Capability preview: a static read of a skill that predicts what each posture will block.

A prediction, not a security control (`NOTICE` says so wherever it is shown). `preview(skill)` reads
the skill's scripts and front matter, within bounds fit for hostile skills, into `Finding`s, the
commands the sandbox image lacks (`IMAGE_TOOLS`) and a `PosturePrediction` per posture from its
containment claims; `unrunnable_postures(skill)` is the cheap check the posture picker makes on
every selection: which postures cannot start the skill's command at all; `script_texts(folder)`
is the bounded read on its own (skill environments infer imports from it).
"""

import itertools
import os
import re
import shlex
import stat
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from workbench.authoring.package import is_excluded
from workbench.postures.containment import Aspect, claim
from workbench.postures.model import PostureId
from workbench.skills.model import Skill
from workbench.skills.scripts import (
    IMAGE_TOOLS,
    Capability,
    Finding,
    command_tools,
    scan_javascript,
    scan_python,
    scan_shell,
)

NOTICE = (
    "PREDICTION, NOT A SECURITY CONTROL: a static read of the skill's scripts and front matter. "
    "Code can do things a static read cannot see; the posture you run under is what actually "
    "limits the skill."
)
MAX_FILES = 200
MAX_FILE_BYTES = 256 * 1024
MAX_ENTRIES = 20_000  # folder entries looked at in all
SCRIPT_SUFFIXES = {".py": "python", ".sh": "shell", ".bash": "shell", ".js": "javascript",
                   ".mjs": "javascript", ".cjs": "javascript"}  # fmt: skip
_SHEBANG = re.compile(
    rb"^#!\s*(?:\S*/)?(?:env\s+(?:-\S+\s+)*)?(python[0-9.]*|bash|sh|dash|node|nodejs)(?:\s|$)"
)
_INTERPRETERS = {"python3": "python", "python": "python", "sh": "shell", "bash": "shell",
                 "node": "javascript", "nodejs": "javascript"}  # fmt: skip
_CONTAINER = (PostureId.DOCKER, PostureId.GVISOR)
_SKILL_DIR_PREFIXES = ("$SKILL_DIR/", "${SKILL_DIR}/")


class Verdict(StrEnum):
    """What a posture is predicted to do with the skill as a whole."""

    RUNS = "runs"  # nothing found that this posture blocks
    PARTLY_BLOCKED = "partly-blocked"  # it runs, but some of what it does will fail
    CANNOT_RUN = "cannot-run"  # the posture cannot run this kind of skill at all


@dataclass(frozen=True, slots=True)
class PosturePrediction:
    """One posture's predicted effect: `blocked` says what fails and why, `allowed` what the
    posture lets through that the user should know about (network, secrets, host files)."""

    posture: PostureId
    verdict: Verdict
    blocked: tuple[str, ...]
    allowed: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CapabilityPreview:
    """The whole preview of one skill (see the module docstring)."""

    skill: str
    findings: tuple[Finding, ...]
    tools: tuple[str, ...]  # every external command the skill invokes
    missing_tools: tuple[str, ...]  # those the sandbox image lacks
    predictions: tuple[PosturePrediction, ...]
    skipped: tuple[str, ...]  # files not read, and why
    notice: str = NOTICE
    prediction_only: bool = True  # never a security control


# The aspect of the containment table each capability a finding names tries.
_ASPECTS: dict[Capability, Aspect] = {
    Capability.NETWORK: Aspect.NETWORK,
    Capability.SUBPROCESS: Aspect.PROGRAMS,
    Capability.ENVIRONMENT: Aspect.SECRETS,
    Capability.HOST_FILES: Aspect.HOST_FILES,
    Capability.PRIVILEGE: Aspect.PRIVILEGE,
    Capability.DESTRUCTIVE: Aspect.WRITE_OUTSIDE,
    Capability.NATIVE_CODE: Aspect.NATIVE_CODE,
    Capability.NODE_API: Aspect.NODE_API,
}


def preview(skill: Skill) -> CapabilityPreview:
    """Predict what each posture will block for `skill` (see the module docstring)."""
    findings, skipped = _scan_files(skill.path)
    findings += _front_matter_findings(skill)
    tools = sorted({f.tool for f in findings if f.tool})
    missing = tuple(tool for tool in tools if tool not in IMAGE_TOOLS)
    ordered = tuple(sorted(findings, key=lambda f: (f.file, f.line or 0, f.capability)))
    kinds = _script_kinds(skill, ordered)
    unrunnable = unrunnable_postures(skill)
    predictions = tuple(
        _predict(posture, ordered, missing, kinds, unrunnable.get(posture)) for posture in PostureId
    )
    return CapabilityPreview(
        skill.name, ordered, tuple(tools), missing, predictions, tuple(skipped)
    )


def unrunnable_postures(skill: Skill) -> dict[PostureId, str]:
    """The postures that cannot start `skill`'s command at all, each with the reason.

    Only the quickjs posture runs a command that is a `.js` file (the others hand the command to
    a shell, which runs the file only if it is executable and starts with `#!`), and quickjs
    runs nothing else. Reads at most the first bytes of that one file; a skill without a
    command gets no answer ({}).
    """
    program = _program(skill.command or "")
    if program is None:
        return {}
    if not program.endswith(".js"):
        name = PurePosixPath(program).name
        return {PostureId.QUICKJS: f"QuickJS runs only .js files, and the command runs {name}"}
    if _is_executable_script(_script_path(skill.path, program)):
        return {}
    reason = (
        "its command is a .js file, which only the QuickJS worker runs (a shell needs an "
        "executable file with a #! line)"
    )
    return {posture: reason for posture in PostureId if posture is not PostureId.QUICKJS}


def _program(command: str) -> str | None:
    """The first word of a command line, unquoted (None for an empty command)."""
    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes: the shell would refuse it too; take the raw word
        words = [word.strip("\"'") for word in command.split()]
    return words[0] if words and words[0] else None


def _script_path(folder: Path, program: str) -> Path:
    """Where a command's program is: `$SKILL_DIR/...` and relative paths in the skill folder."""
    for prefix in _SKILL_DIR_PREFIXES:
        if program.startswith(prefix):
            return folder / program[len(prefix) :]
    return folder / program  # an absolute program replaces the folder


def _is_executable_script(path: Path) -> bool:
    """Whether `path` is a regular, executable file starting with `#!` (a link is not read)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        with os.fdopen(os.open(path, flags), "rb") as file:
            mode = os.fstat(file.fileno()).st_mode
            return stat.S_ISREG(mode) and bool(mode & 0o111) and file.read(2) == b"#!"
    except OSError:
        return False


@dataclass(frozen=True, slots=True)
class ScriptText:
    """One script of a skill as the static read sees it: its path relative to the skill, its
    language (`python`, `shell` or `javascript`) and its text (at most `MAX_FILE_BYTES`)."""

    file: str
    language: str
    text: str


def script_texts(folder: Path, skipped: list[str]) -> list[ScriptText]:
    """The scripts of the skill in `folder`, read within the bounds of the module docstring;
    what was left out is appended to `skipped`."""
    scripts: list[ScriptText] = []
    for path in _candidates(folder, skipped):
        relative = str(path.relative_to(folder))
        data = read_bounded(path, skipped, relative)
        if data is None or (language := _language(path, data)) is None:
            continue
        if len(scripts) == MAX_FILES:
            skipped.append(f"{relative} and the rest: only {MAX_FILES} scripts are read")
            break
        scripts.append(ScriptText(relative, language, data.decode("utf-8", errors="replace")))
    return scripts


def _scan_files(folder: Path) -> tuple[list[Finding], list[str]]:
    skipped: list[str] = []
    scan = {"python": scan_python, "shell": scan_shell, "javascript": scan_javascript}
    findings = [
        finding
        for script in script_texts(folder, skipped)
        for finding in scan[script.language](script.text, script.file)
    ]
    return findings, skipped


def _candidates(folder: Path, skipped: list[str]) -> list[Path]:
    """Regular files under `folder` (links never followed, junk folders left out), bounded."""
    found: list[Path] = []
    pending = [folder]
    room = MAX_ENTRIES
    while pending and room > 0:
        current = pending.pop()
        try:
            with os.scandir(current) as scan:
                entries = sorted(itertools.islice(scan, room), key=lambda entry: entry.name)
        except OSError:
            continue
        room -= len(entries)
        if room <= 0:
            skipped.append(f"the rest: only {MAX_ENTRIES:,} folder entries are looked at")
        for entry in entries:
            if is_excluded(entry.name):
                continue
            if entry.is_symlink():
                if len(skipped) < MAX_FILES:
                    skipped.append(f"{Path(entry.path).relative_to(folder)}: a link, not followed")
            elif entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False) and entry.name != "SKILL.md":
                found.append(Path(entry.path))
    return sorted(found)


def read_bounded(path: Path, skipped: list[str], relative: str) -> bytes | None:
    """A regular text file's first `MAX_FILE_BYTES` (whole lines), never through a link; None
    for anything else (what and why appended to `skipped` when it is worth saying)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        with os.fdopen(os.open(path, flags), "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return None
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        skipped.append(f"{relative}: not readable ({error.strerror})")
        return None
    if b"\0" in data[:8192]:
        return None  # binary: assets, images, compiled code
    if len(data) > MAX_FILE_BYTES:
        skipped.append(f"{relative}: only the first {MAX_FILE_BYTES // 1024} KiB were read")
        data = data[: data.rfind(b"\n") + 1]
    return data


def _language(path: Path, data: bytes) -> str | None:
    if path.suffix in SCRIPT_SUFFIXES:
        return SCRIPT_SUFFIXES[path.suffix]
    match = _SHEBANG.match(data)
    if match is None:
        return None
    word = match.group(1).decode()
    return "python" if word.startswith("python") else _INTERPRETERS.get(word, "shell")


def _front_matter_findings(skill: Skill) -> list[Finding]:
    findings = []
    if skill.command:
        findings += scan_shell(skill.command, "SKILL.md", line_offset=None)
    tools = skill.front_matter.get("allowed-tools")
    names = tools.split() if isinstance(tools, str) else tools if isinstance(tools, list) else []
    for name in (n for n in names if isinstance(n, str)):
        match = re.fullmatch(r"Bash\((.+?)(?::.*)?\)", name)
        detail = f"allowed-tools lists {name} (read by agents; the workbench does not enforce it)"
        tool = command_tools(match.group(1))[0] if match and command_tools(match.group(1)) else None
        findings.append(Finding("SKILL.md", None, Capability.DECLARED, detail, tool))
    compatibility = skill.front_matter.get("compatibility")
    if isinstance(compatibility, str) and compatibility.strip():
        network = re.search(r"\b(network|internet|online|download|api key)\b", compatibility, re.I)
        capability = Capability.NETWORK if network else Capability.DECLARED
        detail = f"compatibility says: {compatibility.strip()}"
        findings.append(Finding("SKILL.md", None, capability, detail))
    return findings


def _script_kinds(skill: Skill, findings: tuple[Finding, ...]) -> set[str]:
    """The languages the skill needs: from its command's interpreter, else from its scripts."""
    command = skill.command or ""
    first = command.split()[0] if command.split() else ""
    if first.endswith(".js") or first.endswith('.js"'):
        return {"javascript"}
    kinds = {f.language for f in findings if f.language}
    if first:
        program = PurePosixPath(first).name
        kinds.add(_INTERPRETERS.get(program, program))
    return kinds


def _predict(
    posture: PostureId,
    findings: tuple[Finding, ...],
    missing: tuple[str, ...],
    kinds: set[str],
    unrunnable: str | None,
) -> PosturePrediction:
    blocked: list[str] = []
    allowed: list[str] = []
    if posture is PostureId.QUICKJS and kinds - {"javascript"}:
        reason = "QuickJS runs only .js files; this skill needs " + ", ".join(
            sorted(k for k in kinds if k != "javascript")
        )
        return PosturePrediction(posture, Verdict.CANNOT_RUN, (reason,), ())
    if unrunnable is not None:
        return PosturePrediction(posture, Verdict.CANNOT_RUN, (unrunnable,), ())
    if posture in _CONTAINER:
        in_order = sorted(findings, key=lambda f: f.line is None)  # script lines first
        first_use = {f.tool: f for f in reversed(in_order) if f.tool}
        blocked += [
            f"{tool} is not in the sandbox image ({first_use[tool].summary})" for tool in missing
        ]
    for finding in findings:
        if (aspect := _ASPECTS.get(finding.capability)) is not None:
            found = claim(posture, aspect)
            (blocked if found.contained else allowed).append(f"{finding.summary} ({found.why})")
    verdict = Verdict.PARTLY_BLOCKED if blocked else Verdict.RUNS
    return PosturePrediction(posture, verdict, tuple(blocked), tuple(allowed))
