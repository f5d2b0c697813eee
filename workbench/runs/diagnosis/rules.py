"""The diagnosis rules: one small function per kind of failure, tried in the order of `RULES`.

A rule gets the run's `RunFacts` and returns a `Diagnosis` when it recognises the run, else
None. It names a control only where the run's posture really applies it (a write outside the
workspace is the read-only root of a container, the throwaway uid of hardened run by root,
QuickJS's confined fs; under local it is the skill's own failure). Limits come first (the
executor already knows which one ended the run), then the failures seen in the output, then
timeouts; `skill_failed` is the answer when none applies (`diagnose` tries them). To add a
kind, write its rule and put it in `RULES`.
"""

import os
import re
import shlex
import shutil
from pathlib import Path, PurePosixPath

from workbench.environments.names import DEBIAN_PACKAGES, distribution_of
from workbench.executors.types import RunResult, RunStatus
from workbench.postures.description import posture_title
from workbench.postures.model import CONTAINER_POSTURES, Network, PostureId
from workbench.runs.diagnosis.model import (
    LIMIT_WORDS,
    Change,
    Diagnosis,
    Evidence,
    Kind,
    Rule,
    RunFacts,
    show_limit,
)
from workbench.runs.diagnosis.signs import (
    ACCESS,
    FORK,
    HOST,
    INPUT_ENDED,
    INVALID,
    MEMORY,
    NAME_LOOKUP,
    NO_ENTRY,
    NO_MEMORY,
    NODE_MODULE,
    NOT_PERMITTED,
    OWNERSHIP,
    PRIVILEGE,
    PYTHON_MODULE,
    QUOTED_NAME,
    READ_ONLY,
    RUN_MISSING,
    SHELL_EXECUTING,
    SHELL_NOT_FOUND,
    SHELL_REFUSED,
    SPAWN_MISSING,
    TOO_LARGE,
    TRY_AGAIN,
    UNREACHABLE,
    last_error,
    near_text,
    path_in,
    writes,
)

CONTAINER_WORKSPACE = "/workspace"
CONTAINER_MOUNTS = (CONTAINER_WORKSPACE, "/mnt/skills", "/tmp", "/proc", "/dev")
BIGGER = 4  # a re-run's limit: this many times the one that stopped the run
WAITING_SHARE = 0.1  # below this share of one CPU over the run, it was waiting, not working
# A hardened run's private HOME (`.../runs/RUN/home/...`, or as root
# `.../workbench-RUN-xxxx/home/...`); a container user's home.
_PRIVATE_HOME = re.compile(
    r".*/(?:workbench-[0-9]{8}-[0-9]{6}-[0-9a-f]+-[^/]+|runs/[0-9]{8}-[0-9]{6}-[0-9a-f]+)"
    r"/home/(?P<rest>.+)"
)
_BWRAP_HOME = re.compile(r"^/tmp/home/(?P<rest>.+)")
_BWRAP_VISIBLE = ("/usr/", "/tmp/", "/proc/", "/dev/")
_CONTAINER_HOME = re.compile(r"^/(?:root|home/[^/]+)/(?P<rest>.+)")
_PROMPT = re.compile(r"[?:>\]\)]\s*$")


def _in_container(facts: RunFacts) -> bool:
    return facts.posture.id in CONTAINER_POSTURES


def _throwaway_uid(facts: RunFacts) -> bool:
    """Hardened run by root runs the command as a throwaway uid (it is you otherwise)."""
    return facts.posture.id is PostureId.HARDENED and os.geteuid() == 0


def _uncontained_posture() -> PostureId:
    """The posture whose command runs as you, with your files and privileges: hardened, unless
    the workbench runs as root (hardened then runs a throwaway uid), when only local is."""
    return PostureId.LOCAL if os.geteuid() == 0 else PostureId.HARDENED


def _outside(facts: RunFacts, path: str) -> bool:
    """Whether an absolute `path` from the output is outside the run's workspace."""
    if _in_container(facts):
        root = CONTAINER_WORKSPACE
    elif facts.workspace is not None:
        root = str(facts.workspace)
    else:
        return False
    return not (path == root or path.startswith(root.rstrip("/") + "/"))


def _first(facts: RunFacts, *signs: re.Pattern[str]) -> Evidence | None:
    """The first line of output (stderr, then stdout) on which every one of `signs` appears."""
    for line in facts.messages:
        if all(sign.search(line.text) for sign in signs):
            return line
    return None


# Limits: the executor's status says a limit ended the run; the output may show the refusal.


def memory_limit(facts: RunFacts) -> Diagnosis | None:
    """The memory limit: a cgroup OOM kill, or allocations failing at RLIMIT_AS."""
    result, limits = facts.result, facts.posture.limits
    said = _first(facts, MEMORY) or _first(facts, NO_MEMORY)
    limited = facts.posture.id is not PostureId.LOCAL
    by_status = result.status is RunStatus.OOM_KILLED or (
        result.status is RunStatus.LIMIT_EXCEEDED and "memory" in result.cause
    )
    if not by_status and not (limited and said is not None):
        return None
    size = show_limit("memory_bytes", limits.memory_bytes)
    cause = f"It needed more memory than the limit of {size}."
    return _over_limit(
        facts, Kind.MEMORY_LIMIT, "memory_bytes", cause, f"memory limit {size}", said
    )


def process_limit(facts: RunFacts) -> Diagnosis | None:
    """The process limit: a fork refused (pids cgroup, RLIMIT_NPROC)."""
    result, pids = facts.result, facts.posture.limits.pids
    said = _first(facts, FORK)
    if said is None and result.status is RunStatus.FAILED:
        eagain = _first(facts, TRY_AGAIN)  # BlockingIOError: [Errno 11]
        said = eagain if eagain and "fork" in near_text(eagain, facts.lines, 2, 0) else None
    limited = facts.posture.id in (PostureId.HARDENED, PostureId.BUBBLEWRAP, *CONTAINER_POSTURES)
    by_status = result.status is RunStatus.LIMIT_EXCEEDED and "process limit" in result.cause
    if not by_status and not (limited and said is not None and result.status is not RunStatus.OK):
        return None
    cause = f"It started more than {pids} processes at once, the process limit: a fork was refused."
    return _over_limit(facts, Kind.PROCESS_LIMIT, "pids", cause, f"process limit {pids}", said)


def file_size_limit(facts: RunFacts) -> Diagnosis | None:
    """The file-size limit: a write refused with EFBIG, or SIGXFSZ."""
    result, size = facts.result, facts.posture.limits.file_size_bytes
    said = _first(facts, TOO_LARGE)
    by_status = result.status is RunStatus.LIMIT_EXCEEDED and "file size" in result.cause
    rlimited = facts.posture.id in (PostureId.HARDENED, PostureId.BUBBLEWRAP)
    if not by_status and not (rlimited and said is not None):
        return None
    shown = show_limit("file_size_bytes", size)
    cause = f"It wrote a file bigger than the file-size limit of {shown}."
    control = f"file-size limit {shown} (RLIMIT_FSIZE)"
    return _over_limit(facts, Kind.FILE_SIZE_LIMIT, "file_size_bytes", cause, control, said)


def cpu_limit(facts: RunFacts) -> Diagnosis | None:
    """The CPU-time limit (RLIMIT_CPU)."""
    result, seconds = facts.result, facts.posture.limits.cpu_seconds
    if result.status is not RunStatus.LIMIT_EXCEEDED or "RLIMIT_CPU" not in result.cause:
        return None
    cause, control = f"It used up its CPU time, {seconds} s.", f"CPU-time limit {seconds} s"
    return _over_limit(facts, Kind.CPU_LIMIT, "cpu_seconds", cause, f"{control} (RLIMIT_CPU)", None)


def _over_limit(
    facts: RunFacts, kind: Kind, name: str, cause: str, control: str, said: Evidence | None
) -> Diagnosis:
    """A run the limit `name` (a `Limits` field) stopped; the re-run gets `BIGGER` times it."""
    bigger = getattr(facts.posture.limits, name) * BIGGER
    return Diagnosis(
        kind,
        cause,
        control,
        said or Evidence(facts.result.cause, "run"),
        f"If it needs that much, re-run with {LIMIT_WORDS[name]} {show_limit(name, bigger)}.",
        Change(limits=((name, bigger),)),
    )


# Failures the output shows.


def missing_tool(facts: RunFacts) -> Diagnosis | None:
    """A program the command runs that is not there: not in the image, or not on this computer."""
    found = _missing_program(facts)
    if found is None:
        return None
    tool, said = found
    package = DEBIAN_PACKAGES.get(tool)
    if _in_container(facts):
        control = f"the sandbox image ({facts.posture.image})"
        cause = f"It runs {tool}, which the sandbox image does not have."
        if shutil.which(tool):
            suggestion = f"This computer has {tool}: re-run under Hardened local."
            change = Change(posture=PostureId.HARDENED)
        elif package:
            suggestion = (
                f"{tool} is in the Debian package {package}: {_env_build(facts)} adds it to an "
                f"image of the skill's environment (or name it: --system {package})."
            )
            change = Change(build_env=True)
        else:
            suggestion = f"Add the package that provides {tool} to the skill's environment."
            change = Change(build_env=True)
    else:
        control = "the programs on this computer (PATH)"
        cause = f"It runs {tool}, which is not installed on this computer."
        provider = f"the Debian package {package}" if package else tool
        suggestion, change = f"Install {provider}, or use a posture whose image has it.", None
    return Diagnosis(Kind.MISSING_TOOL, cause, control, said, suggestion, change)


def _env_build(facts: RunFacts) -> str:
    """The command that builds the skill's environment for the run's posture."""
    return f"`workbench env build --skill {shlex.quote(facts.skill)} --posture {facts.posture.id}`"


def _missing_program(facts: RunFacts) -> tuple[str, Evidence] | None:
    result, lines = facts.result, facts.lines
    if result.status is RunStatus.ERROR and result.cause.startswith("command not found: "):
        return result.cause.removeprefix("command not found: "), Evidence(result.cause, "run")
    for line in facts.messages:
        match = SHELL_NOT_FOUND.match(line.text) or SPAWN_MISSING.search(line.text)
        match = match or RUN_MISSING.match(line.text)
        if match is None and result.exit_code == 127:
            match = SHELL_REFUSED.match(line.text)
        if match is not None:
            return PurePosixPath(match["tool"]).name, line
        if (
            (NO_ENTRY.search(line.text) or ACCESS.search(line.text))
            and (name := QUOTED_NAME.search(line.text))
            and "_execute_child" in near_text(line, lines, 3, 0)
        ):  # Python's subprocess
            return name["name"], line
    return None


def missing_module(facts: RunFacts) -> Diagnosis | None:
    """A Python or Node module the environment lacks, with the package that provides it."""
    for line in facts.messages:
        python = PYTHON_MODULE.search(line.text)
        match = python or NODE_MODULE.search(line.text)
        if match is None:
            continue
        module = match["module"].split(".")[0] if python else match[1]
        where = "the sandbox image" if _in_container(facts) else "this computer's interpreter"
        if environment := facts.result.card.environment:
            where = f"the skill's environment {environment}"
        if python:
            package = distribution_of(match["module"])
            declare = f"Add {package} to the skill's requirements.txt"
        else:
            package, declare = module, f"Add {module} to the skill's package.json dependencies"
        return Diagnosis(
            Kind.MISSING_MODULE,
            f"It imports {module}, which {where} does not have.",
            f"the skill's environment ({where})",
            line,
            f"{declare}, or build the skill's environment, which finds {package} among its "
            f"imports: {_env_build(facts)}.",
            Change(build_env=True),
        )
    return None


def network_off(facts: RunFacts) -> Diagnosis | None:
    """The network is off: a name lookup or a connection failed where the posture has none."""
    posture = facts.posture
    if posture.id is PostureId.QUICKJS:
        return _fetch_refused(facts)
    if posture.id is PostureId.BUBBLEWRAP:
        return _proxy_refused(facts)
    if not (_in_container(facts) and posture.network is Network.NONE):
        return None
    said = _first(facts, NAME_LOOKUP) or _first(facts, UNREACHABLE)
    if said is None:
        return None
    host = _host(facts)
    to = f" to {host}" if host else ""
    if posture.id is PostureId.GVISOR:
        change = Change(posture=PostureId.DOCKER, network=Network.BRIDGE)
        rerun = "re-run under Docker with the network on"
    else:
        change, rerun = Change(network=Network.BRIDGE), "re-run with the network on"
    return Diagnosis(
        Kind.NETWORK_OFF,
        f"It tried to reach the network{to}, which is off {facts.where} (loopback only).",
        "network none",
        said,
        f"If it must, {rerun} (it can then reach any host).",
        change,
    )


def _proxy_refused(facts: RunFacts) -> Diagnosis | None:
    """Bubblewrap's network: its own loopback, and the hosts its proxy lets through."""
    refused = [a for a in facts.result.network_log if a.verdict == "refused"]
    said = _first(facts, NAME_LOOKUP) or _first(facts, UNREACHABLE)
    if refused:
        attempt = refused[0]
        host = f"{attempt.host}:{attempt.port}"
        said = Evidence(f"{host} {attempt.verdict}", "network")
    elif said is None:
        return None
    else:
        host = _host(facts)
    to = f" {host}" if host else " the network"
    return Diagnosis(
        Kind.NETWORK_OFF,
        f"It tried to reach{to}, which {facts.where} is not on the allow-list (only its own "
        "loopback and the allowed hosts are reachable).",
        "network allow-list",
        said,
        f"If it must, re-run with{to} allowed (`--allow-host HOST[:PORT]`).",
        Change(allow_hosts=(host,)) if host else None,
    )


def _fetch_refused(facts: RunFacts) -> Diagnosis | None:
    refused = [call for call in facts.result.host_calls if not call.allowed]
    if refused:
        call = refused[0]
        host = _url_host(call.target)
        return Diagnosis(
            Kind.NETWORK_OFF,
            f"It fetched {call.target}, which the fetch allow-list refused.",
            "fetch allow-list",
            Evidence(f"{call.api} {call.target} -> {call.outcome}", "network"),
            f"If it must reach {host}, re-run with it allowed.",
            Change(allow_hosts=(host,)) if host else None,
        )
    said = _first(facts, re.compile(r"'fetch' is not defined|fetch is not defined"))
    if said is None:
        return None
    return Diagnosis(
        Kind.NETWORK_OFF,
        "It calls fetch, which QuickJS offers only when hosts are allowed.",
        "fetch off",
        said,
        "Allow the hosts it fetches (`--allow-host HOST`), or run it with node under Docker.",
    )


def _host(facts: RunFacts) -> str:
    for line in facts.messages:
        if match := HOST.search(line.text):
            return match["host"]
    return ""


def _url_host(target: str) -> str:
    match = re.search(r"\w+://\[?([^/:\]\s]+)", target)
    return match[1] if match else ""


def write_outside(facts: RunFacts) -> Diagnosis | None:
    """A write outside the workspace: a container's read-only root, a throwaway uid, QuickJS."""
    lines = facts.lines
    if facts.posture.id is PostureId.QUICKJS:
        return _confined_fs(facts)
    for line in facts.messages:
        path = path_in(line.text)
        read_only = READ_ONLY.search(line.text)
        denied = ACCESS.search(line.text) and (_in_container(facts) or _throwaway_uid(facts))
        if path is None or not (read_only or denied) or not _outside(facts, path):
            continue
        if not (read_only or writes(line, lines) or not os.path.lexists(path)):
            continue  # a refused read of a file that exists is `hidden_file`'s
        if _in_container(facts):
            control = "read-only root filesystem"
            why = f"{facts.where} only /workspace and /tmp are writable"
        elif _throwaway_uid(facts):
            control = "throwaway uid"
            why = "hardened runs it as a throwaway user, who may write only in the workspace"
        elif facts.posture.id is PostureId.BUBBLEWRAP:
            control = "read-only view of this computer"
            why = f"{facts.where} only the workspace and /tmp are writable"
        else:
            continue
        return Diagnosis(
            Kind.WRITE_OUTSIDE,
            f"It wrote to {path}, outside the workspace: {why}.",
            control,
            line,
            "Write in the workspace ($WORKSPACE, where the command starts) instead.",
            Change(posture=_uncontained_posture()),
        )
    return None


def _confined_fs(facts: RunFacts) -> Diagnosis | None:
    said = _first(facts, re.compile(r"fs\.\w+: .*refused: (paths are relative|'\.\.')"))
    if said is None:
        return None
    kind = Kind.WRITE_OUTSIDE if re.search(r"fs\.(write|mkdir|remove|rename)", said.text) else None
    return Diagnosis(
        kind or Kind.HIDDEN_FILE,
        "It used a path outside the workspace, which QuickJS's fs refuses.",
        "workspace-confined fs",
        said,
        "Use paths in the workspace; copy a file from elsewhere in first.",
    )


def hidden_file(facts: RunFacts) -> Diagnosis | None:
    """A file outside the workspace that this computer has and the posture does not show."""
    for line in facts.messages:
        path = path_in(line.text)
        if path is None or not (NO_ENTRY.search(line.text) or ACCESS.search(line.text)):
            continue
        found = _hidden(facts, path, bool(ACCESS.search(line.text)))
        if found is None:
            continue
        host_path, control, why = found
        return Diagnosis(
            Kind.HIDDEN_FILE,
            f"It read {path}: this computer has {host_path}, but {why}.",
            control,
            line,
            "Copy what it needs into the workspace and read it there.",
            Change(posture=_uncontained_posture()),
        )
    return None


def _hidden(facts: RunFacts, path: str, denied: bool) -> tuple[str, str, str] | None:
    """(the file on this computer, the control, why it is not seen) for a path that failed."""
    if not _outside(facts, path) or path.startswith("~"):
        return None
    posture = facts.posture.id
    home = _PRIVATE_HOME.match(path)
    if posture is PostureId.HARDENED and home and os.path.lexists(Path.home() / home["rest"]):
        why = "hardened gives the command a private, empty HOME"
        return str(Path.home() / home["rest"]), "private HOME", why
    bubblewrap = facts.posture.id is PostureId.BUBBLEWRAP
    home = _BWRAP_HOME.match(path) if bubblewrap else None
    if home and os.path.lexists(Path.home() / home["rest"]):
        why = "bubblewrap gives the command a private, empty HOME"
        return str(Path.home() / home["rest"]), "private HOME", why
    if bubblewrap and not path.startswith(_BWRAP_VISIBLE) and os.path.lexists(path):
        why = "bubblewrap shows only /usr, the skill and the workspace of this computer"
        return path, "only /usr, the skill and the workspace are visible", why
    if _in_container(facts) and not path.startswith(CONTAINER_MOUNTS):
        why = "the container sees only the workspace, the skill and its image"
        home = _CONTAINER_HOME.match(path)
        for mine in ([Path.home() / home["rest"]] if home else []) + [Path(path)]:
            if os.path.lexists(mine):
                return str(mine), "only the workspace and the skill folder are mounted", why
    if _throwaway_uid(facts) and denied and os.path.lexists(path):
        return path, "throwaway uid", "hardened runs the command as another user"
    return None


def permission_dropped(facts: RunFacts) -> Diagnosis | None:
    """A privilege the posture took away: a non-root uid, dropped capabilities, no_new_privs."""
    said = _first(facts, PRIVILEGE) or _first(facts, NOT_PERMITTED)
    if said is None and facts.posture.id is PostureId.BUBBLEWRAP:  # no uid 0 to map to
        said = _first(facts, OWNERSHIP, INVALID)
    if said is None:
        return None
    card = facts.result.card
    if _in_container(facts) and not facts.posture.run_as_root:
        control = f"non-root user {card.run_as or ''} with every capability dropped".replace(
            "  ", " "
        )
    elif _throwaway_uid(facts):
        control = "throwaway uid"
    elif facts.posture.id is PostureId.BUBBLEWRAP:
        control = "no capabilities and no root in its user namespace"
    elif facts.posture.id is PostureId.HARDENED and PRIVILEGE.search(said.text):
        control = "no_new_privs (set-uid programs such as sudo gain nothing)"
    else:
        return None
    return Diagnosis(
        Kind.PERMISSION,
        f"It needed a privilege the posture does not give ({control}).",
        control,
        said,
        f"Make it work without root; only {posture_title(_uncontained_posture())} runs it with "
        "your privileges.",
        Change(posture=_uncontained_posture()),
    )


def no_input(facts: RunFacts) -> Diagnosis | None:
    """The command asked for input and found none (a run's stdin is empty): it says it read
    the end of its input, or it failed right after printing a prompt."""
    said = _first(facts, INPUT_ENDED)
    if said is not None:
        return _input_diagnosis(facts, said, "it read the end of its input")
    prompt = _prompt(facts)
    if prompt is not None and facts.result.status is RunStatus.FAILED:
        return _input_diagnosis(facts, prompt, "it read no answer and gave up")
    return None


def _prompt(facts: RunFacts) -> Evidence | None:
    """The question the command left on its last line of stdout (no newline after it)."""
    text = facts.result.stdout.text
    lines = text.splitlines()
    if not lines or text.endswith("\n") or not _PROMPT.search(lines[-1]):
        return None
    return Evidence(lines[-1].strip()[:200], "stdout", len(lines))


def _input_diagnosis(facts: RunFacts, said: Evidence, how: str) -> Diagnosis:
    return Diagnosis(
        Kind.WAITING_FOR_INPUT,
        f"It asked for input, but {how}: a run's stdin is empty (/dev/null).",
        "no input (stdin is /dev/null)",
        said,
        "Give the answer in the command: an option, or piped in (`printf 'y\\n' | ...`).",
    )


def timed_out(facts: RunFacts) -> Diagnosis | None:
    """The wall-clock timeout: while waiting (for input, when its last output is a prompt)
    or while working."""
    result = facts.result
    if result.status is not RunStatus.TIMED_OUT:
        return None
    timeout = facts.posture.limits.timeout_s
    busy = result.cpu_seconds / max(result.wall_seconds, 0.001)
    prompt = _prompt(facts)
    if busy < WAITING_SHARE and prompt is not None:
        return _input_diagnosis(facts, prompt, f"it waited until the timeout of {timeout:g} s")
    state = "waiting (it used almost no CPU)" if busy < WAITING_SHARE else "still working"
    bigger = timeout * BIGGER
    return Diagnosis(
        Kind.TIMEOUT,
        f"It was {state} when the wall-clock timeout of {timeout:g} s ended it.",
        f"wall-clock timeout {timeout:g} s",
        Evidence(
            f"{result.cause}; {result.cpu_seconds:.1f} s of CPU in {result.wall_seconds:.1f} s",
            "run",
        ),
        f"If it needs longer, re-run with a timeout of {bigger:g} s.",
        Change(limits=(("timeout_s", bigger),)),
    )


def not_executable(facts: RunFacts) -> Diagnosis | None:
    """The shell could not execute the file the command names (exit 126): not executable."""
    if facts.result.exit_code != 126:
        return None
    for line in facts.messages:
        match = SHELL_EXECUTING.match(line.text)
        if match is None or not (ACCESS.search(line.text) or "cannot execute" in line.text):
            continue
        program = match["program"]
        javascript = program.endswith(".js")
        return Diagnosis(
            Kind.NOT_RUN,
            f"The shell cannot execute {program}: it is not an executable file"
            + (" (a .js file runs under QuickJS, or with node)." if javascript else "."),
            "a shell runs only executable files",
            line,
            "Run it with its interpreter (`node FILE`, `python3 FILE`)"
            + (", or re-run under QuickJS." if javascript else "."),
            Change(posture=PostureId.QUICKJS) if javascript else None,
        )
    return None


def not_run(facts: RunFacts) -> Diagnosis | None:
    """The workbench could not run the command at all."""
    result = facts.result
    if result.status is not RunStatus.ERROR:
        return None
    return Diagnosis(
        Kind.NOT_RUN,
        f"The workbench could not run it {facts.where}: {result.cause}.",
        f"{posture_title(facts.posture.id)} cannot run it",
        Evidence(result.cause, "run"),
        "Choose a posture that can run this command.",
    )


def skill_failed(facts: RunFacts) -> Diagnosis:
    """No control explains the failure: the skill itself failed, shown by its last error."""
    result = facts.result
    ended = f"exited with code {result.exit_code}" if result.exit_code is not None else result.cause
    return Diagnosis(
        Kind.SKILL_FAILED,
        f"The skill itself failed ({ended}); its output points at nothing the posture did.",
        "",
        last_error(facts.lines),
        "Fix the skill: the evidence is its own last error.",
    )


RULES: tuple[Rule, ...] = (
    memory_limit,
    process_limit,
    file_size_limit,
    cpu_limit,
    missing_tool,
    missing_module,
    network_off,
    not_executable,
    write_outside,
    hidden_file,
    permission_dropped,
    no_input,
    timed_out,
    not_run,
)
# The rules that read only the output: what a run that ended ok may show refusing part of it.
OUTPUT_RULES: tuple[Rule, ...] = (
    missing_tool,
    missing_module,
    network_off,
    write_outside,
    hidden_file,
    permission_dropped,
)


def diagnose(
    result: RunResult, workspace: Path | None = None, skill: str = "SKILL"
) -> Diagnosis | None:
    """The diagnosis of `result`, a run of `skill` in `workspace` on this computer: the first
    rule of `RULES` that recognises it, else `skill_failed`; None for a run that ended ok or
    was cancelled."""
    if result.status in (RunStatus.OK, RunStatus.CANCELLED):
        return None
    facts = RunFacts(result, workspace, skill)
    return next((found for rule in RULES if (found := rule(facts)) is not None), None) or (
        skill_failed(facts)
    )


def refused_in_passing(result: RunResult, workspace: Path | None = None) -> Diagnosis | None:
    """For a run that ended ok, the first control its output shows refusing something."""
    if result.status is not RunStatus.OK:
        return None
    facts = RunFacts(result, workspace)
    return next((found for rule in OUTPUT_RULES if (found := rule(facts)) is not None), None)
