"""Capability preview: a static read of a skill that predicts what each posture will block.

A prediction, not a security control (`NOTICE` says so wherever it is shown). `preview(skill,
command)` follows the command (the skill's own by default) to the scripts it runs, with their
arguments, reads them (`scriptfiles`, `skills.shellscan`, `skills.pyscan`, `skills.scripts`) and
the front matter into `Finding`s, and gives each posture a `PosturePrediction`: what each finding
meets there (`effects`), the programs and Python modules its environment lacks (`environments`),
and whether it can start the command at all; `unrunnable_postures(skill)` is the cheap check the
posture picker makes on every selection.
"""

import os
import re
import stat
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from workbench.authoring.effects import Context, effect
from workbench.authoring.environments import (
    host_has_tool,
    host_modules,
    image_has_tool,
    image_modules,
)
from workbench.authoring.scriptfiles import INTERPRETERS, ScriptFile, read_scripts
from workbench.postures.model import CONTAINER_POSTURES, DEFAULT_LIMITS, Limits, PostureId
from workbench.skills.model import Skill
from workbench.skills.pyscan import scan_python
from workbench.skills.scripts import Capability, Finding, scan_javascript
from workbench.skills.shell import Word, parse
from workbench.skills.shellscan import command_tools, scan_shell

NOTICE = (
    "PREDICTION, NOT A SECURITY CONTROL: a static read of the skill's scripts and front matter. "
    "Code can do things a static read cannot see; the posture you run under is what actually "
    "limits the skill."
)
MAX_REACHED = 50  # scripts followed from the command
_SKILL_DIR = "SKILL_DIR"
_UNWRAP = {"exec", "env", "nohup", "nice", "time", "timeout", "command", "setsid", "stdbuf"}


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
    """The whole preview of one skill's command (see the module docstring)."""

    skill: str
    findings: tuple[Finding, ...]
    tools: tuple[str, ...]  # every external command the skill invokes
    missing_tools: tuple[str, ...]  # those the sandbox image lacks
    predictions: tuple[PosturePrediction, ...]
    skipped: tuple[str, ...]  # files not read, and why
    command: str = ""  # the command predicted for ("" for the whole skill)
    notice: str = NOTICE
    prediction_only: bool = True  # never a security control


def preview(
    skill: Skill, command: str | None = None, limits: Limits = DEFAULT_LIMITS
) -> CapabilityPreview:
    """Predict what each posture will block for `command` of `skill` (its own by default),
    run with `limits` (see the module doc)."""
    command = (skill.command or "") if command is None else command
    scripts, skipped = read_scripts(skill.path)
    findings = _reached(skill.path, scripts, command) + _front_matter_findings(skill, command)
    ordered = tuple(sorted(findings, key=lambda f: (f.file, f.line or 0, f.capability)))
    tools = sorted({f.tool for f in ordered if f.tool})
    needed = sorted({f.tool for f in ordered if f.tool and not f.optional})
    local = {PurePosixPath(s.relative).stem for s in scripts} | _packages(scripts)
    modules = (
        frozenset(f.target for f in ordered if f.capability is Capability.MODULE and f.target)
        - local
    )
    context = Context(
        skill.path,
        as_root=os.geteuid() == 0,
        limits=limits,
        serves=any(f.capability is Capability.SERVER for f in ordered),
        image_modules=image_modules(modules),
        host_modules=host_modules(modules) if modules else {},
    )
    kinds = _script_kinds(command, skill.path, ordered)
    unrunnable = unrunnable_postures(skill, command)
    considered = tuple(
        f for f in ordered if f.capability is not Capability.MODULE or f.target in modules
    )
    predictions = tuple(
        _predict(posture, considered, needed, kinds, unrunnable.get(posture), context)
        for posture in PostureId
    )
    missing = tuple(tool for tool in tools if not image_has_tool(tool))
    return CapabilityPreview(
        skill.name, considered, tuple(tools), missing, predictions, tuple(skipped), command
    )


def unrunnable_postures(skill: Skill, command: str | None = None) -> dict[PostureId, str]:
    """The postures that cannot start `command` of `skill` (its own by default), each with the
    reason.

    Only the quickjs posture runs a command that is a `.js` file (the others hand the command to
    a shell, which runs the file only if it is executable and starts with `#!`), and quickjs
    runs nothing else. Reads at most the first bytes of that one file; no command gets no
    answer ({}).
    """
    command = (skill.command or "") if command is None else command
    words = _words(command, {_SKILL_DIR: str(skill.path)})
    program = words[0] if words else None
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


def _words(command: str, values: dict[str, str], positional: tuple[str, ...] = ()) -> list[str]:
    """The words of a command line's first command, `$SKILL_DIR`, `$1`... and `"$@"`
    replaced, wrappers such as `exec` and `env` taken off."""
    commands = parse(command).commands
    if not commands:
        return []
    words: list[str] = []
    for word in commands[0].words:
        if word.text in ("$@", "$*"):
            words += positional
        else:
            words.append(_substitute(word, values, positional))
    while words and PurePosixPath(words[0]).name in _UNWRAP:
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    return words


def _substitute(word: Word, values: dict[str, str], positional: tuple[str, ...]) -> str:
    known = {**values, **{str(i): arg for i, arg in enumerate(positional, 1)}}
    return re.sub(
        r"\$\{?([A-Za-z_][A-Za-z0-9_]*|[0-9])\}?",
        lambda m: known.get(m[1], m[0]),
        word.text,
    )


def _entry(
    command: str, skill_dir: Path, positional: tuple[str, ...] = (), depth: int = 0
) -> tuple[str | None, tuple[str, ...]]:
    """The skill's script a command line runs (relative to the skill folder) and the arguments
    it gets; (None, ()) when it runs none of the skill's scripts."""
    words = _words(command, {_SKILL_DIR: str(skill_dir)}, positional)
    if not words:
        return None, ()
    program = PurePosixPath(words[0]).name
    language = INTERPRETERS.get(program) or ("python" if program.startswith("python") else None)
    if language is not None:
        rest = words[1:]
        if language == "shell" and "-c" in rest[:-1] and depth < 4:
            index = rest.index("-c")
            return _entry(rest[index + 1], skill_dir, tuple(rest[index + 3 :]), depth + 1)
        arguments = [w for w in rest if not w.startswith("-")]
        if not arguments:
            return None, ()
        script, args = arguments[0], tuple(rest[rest.index(arguments[0]) + 1 :])
    else:
        script, args = words[0], tuple(words[1:])
    folder = str(skill_dir).rstrip("/") + "/"
    relative = script[len(folder) :] if script.startswith(folder) else None
    return relative, args


def _reached(skill_dir: Path, scripts: list[ScriptFile], command: str) -> list[Finding]:
    """The findings of the scripts the command reaches (every script without a command)."""
    values = {_SKILL_DIR: str(skill_dir)}
    by_path = {s.relative: s for s in scripts}
    entry, args = _entry(command, skill_dir) if command else (None, ())
    if not command:
        return [f for s in scripts for f in _scan(s, (), values)]
    found = scan_shell(command, "SKILL.md", line_offset=None, values=values)
    if entry is None or entry not in by_path:
        return found
    pending, seen = [(entry, args)], set[str]()
    while pending and len(seen) < MAX_REACHED:
        relative, script_args = pending.pop()
        if relative in seen or relative not in by_path:
            continue
        seen.add(relative)
        scanned = _scan(by_path[relative], script_args, values)
        found += scanned
        pending += [(p, ()) for p in _runs(scanned, by_path, skill_dir, relative)]
    return found


def _scan(script: ScriptFile, args: tuple[str, ...], values: dict[str, str]) -> list[Finding]:
    if script.language == "shell":
        return scan_shell(script.text, script.relative, args=args, values=values)
    if script.language == "python":
        return scan_python(script.text, script.relative, args)
    return scan_javascript(script.text, script.relative, args)


def _runs(
    findings: list[Finding], by_path: dict[str, ScriptFile], skill_dir: Path, current: str
) -> list[str]:
    """The skill's scripts that `findings` run by path or import as modules."""
    here = PurePosixPath(current).parent
    found = []
    for finding in findings:
        target = finding.target or ""
        if finding.capability is Capability.RUNTIME and target:
            target = target.removeprefix(str(skill_dir).rstrip("/") + "/")
            found += [p for p in by_path if p == target or p.endswith("/" + target)]
        elif finding.capability is Capability.MODULE:
            found += [str(here / f"{target}.py"), str(here / target / "__init__.py")]
    return found


def _packages(scripts: list[ScriptFile]) -> set[str]:
    """The names of the skill's own Python packages (folders with an `__init__.py`)."""
    return {
        PurePosixPath(s.relative).parent.name
        for s in scripts
        if PurePosixPath(s.relative).name == "__init__.py"
    }


def _script_path(folder: Path, program: str) -> Path:
    """Where a command's program is: in the skill folder when relative."""
    return Path(program) if program.startswith("/") else folder / program


def _is_executable_script(path: Path) -> bool:
    """Whether `path` is a regular, executable file starting with `#!` (a link is not read)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        with os.fdopen(os.open(path, flags), "rb") as file:
            mode = os.fstat(file.fileno()).st_mode
            return stat.S_ISREG(mode) and bool(mode & 0o111) and file.read(2) == b"#!"
    except OSError:
        return False


def _front_matter_findings(skill: Skill, command: str) -> list[Finding]:
    findings = []
    tools = skill.front_matter.get("allowed-tools")
    names = tools.split() if isinstance(tools, str) else tools if isinstance(tools, list) else []
    for name in (n for n in names if isinstance(n, str)):
        match = re.fullmatch(r"Bash\((.+?)(?::.*)?\)", name)
        detail = f"allowed-tools lists {name} (read by agents; the workbench does not enforce it)"
        tool = command_tools(match.group(1))[0] if match and command_tools(match.group(1)) else None
        findings.append(Finding("SKILL.md", None, Capability.DECLARED, detail, tool))
    compatibility = skill.front_matter.get("compatibility")
    if (
        isinstance(compatibility, str)
        and compatibility.strip()
        and command == (skill.command or "")
    ):
        network = re.search(r"\b(network|internet|online|download|api key)\b", compatibility, re.I)
        capability = Capability.NETWORK if network else Capability.DECLARED
        detail = f"compatibility says: {compatibility.strip()}"
        findings.append(Finding("SKILL.md", None, capability, detail))
    return findings


def _script_kinds(command: str, skill_dir: Path, findings: tuple[Finding, ...]) -> set[str]:
    """The languages the command needs: its program's, else those of the scripts read."""
    words = _words(command, {_SKILL_DIR: str(skill_dir)})
    if words and words[0].endswith(".js"):
        return {"javascript"}
    kinds = {f.language for f in findings if f.language and f.file != "SKILL.md"}
    if words:
        program = PurePosixPath(words[0]).name
        kinds.add(INTERPRETERS.get(program, program))
    return kinds


def _predict(
    posture: PostureId,
    findings: tuple[Finding, ...],
    tools: list[str],
    kinds: set[str],
    unrunnable: str | None,
    context: Context,
) -> PosturePrediction:
    if posture is PostureId.QUICKJS and kinds - {"javascript"}:
        reason = "QuickJS runs only .js files; this skill needs " + ", ".join(
            sorted(k for k in kinds if k != "javascript")
        )
        return PosturePrediction(posture, Verdict.CANNOT_RUN, (reason,), ())
    if unrunnable is not None:
        return PosturePrediction(posture, Verdict.CANNOT_RUN, (unrunnable,), ())
    blocked: list[str] = []
    allowed: list[str] = []
    if posture is not PostureId.QUICKJS:
        in_order = sorted(findings, key=lambda f: f.line is None)  # script lines first
        first_use = {f.tool: f for f in reversed(in_order) if f.tool}
        container = posture in CONTAINER_POSTURES
        has = image_has_tool if container else host_has_tool
        where = "the sandbox image" if container else "this computer"
        blocked += [
            f"{tool} is not in {where} ({first_use[tool].summary})"
            for tool in tools
            if not has(tool)
        ]
    for finding in findings:
        found = effect(posture, finding, context)
        if found is not None:
            is_blocked, why = found
            (blocked if is_blocked else allowed).append(f"{finding.summary} ({why})")
    verdict = Verdict.PARTLY_BLOCKED if blocked else Verdict.RUNS
    return PosturePrediction(posture, verdict, tuple(blocked), tuple(allowed))
