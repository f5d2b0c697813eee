"""What each posture contains: one typed table that the posture's text, the capability preview and
the probe lab all read.

`CONTAINMENT[posture][aspect]` is a `Claim` about one thing a skill may try (`Aspect`): whether the
posture stops it at its default settings (`contained`) and why, the card line and warning that say
so, the setting that opens it when loosened (`unless`, `opened`) and, where it differs, the claim
when the workbench runs as root (`as_root`), and whether the posture has anything the aspect is
about at all (`applies`: no rlimit to raise); `claim()` looks one up. A new posture adds its row
here (docs/ARCHITECTURE.md, "How to add a posture").
"""

import os
from dataclasses import dataclass, replace
from enum import StrEnum

from workbench.postures.model import Network, Posture, PostureId, PostureWarning, Severity

CPU_TIME_LIMIT = "RLIMIT_CPU"  # the control a CPU claim names when CPU time, not the clock, stops


class Aspect(StrEnum):
    """What a skill may try that a posture may stop, in the order a posture's text lists them."""

    HOST_FILES = "host files"  # read files outside the workspace and the skill folder
    PRIVATE_FILES = "private files"  # read your private files (mode 0600, an SSH key)
    WRITE_OUTSIDE = "write outside"  # create, change or delete files outside the workspace
    SKILL_FOLDER = "skill folder"  # change the skill's own folder
    SECRETS = "secrets in env"  # read what is in the workbench's environment
    NETWORK = "network"  # reach the network, the host's loopback included
    OTHER_PROCESSES = "other processes"  # see or signal your other processes
    PRIVILEGE = "privilege"  # become root (sudo, setuid programs)
    PROGRAMS = "programs"  # run other programs
    NATIVE_CODE = "native code"  # load native code
    NODE_API = "node api"  # use Node's APIs
    PROCESSES = "processes"  # start processes without bound
    DAEMONS = "daemons"  # leave processes running after the run
    LEFTOVERS = "leftovers"  # leave files in /tmp and IPC objects after the run
    CPU = "cpu"  # spin the CPU without end
    MEMORY = "memory"  # take memory without bound
    DISK = "disk"  # fill the disk
    LIMITS = "limits"  # raise its own rlimits


class Setting(StrEnum):
    """A posture setting that, loosened, opens what a claim contains."""

    NETWORK = "network"
    EXTRA_MOUNTS = "extra mounts"
    RUN_AS_ROOT = "run as root"
    SECRETS = "secrets passed"
    FETCH = "fetch hosts"
    ALLOW_HOSTS = "allowed hosts"

    def opened(self, posture: Posture) -> tuple[str, ...]:
        """What the setting lets through under `posture`, in words; () at its safe default."""
        values = {
            Setting.NETWORK: () if posture.network is Network.NONE else (posture.network.value,),
            Setting.EXTRA_MOUNTS: posture.extra_mounts,
            Setting.RUN_AS_ROOT: ("root",) if posture.run_as_root else (),
            Setting.SECRETS: posture.confirmed_secret_env,
            Setting.FETCH: posture.fetch_hosts,
            Setting.ALLOW_HOSTS: posture.allow_hosts,
        }
        return values[self]


@dataclass(frozen=True, slots=True)
class Claim:
    """What one posture does with one aspect; see the module doc."""

    contained: bool
    why: str
    card: str = ""
    warning: PostureWarning | None = None
    unless: Setting | None = None
    opened: tuple[PostureWarning, ...] = ()  # "{}" in a text: what the setting lets through
    as_root: "Claim | None" = None
    applies: bool = True  # False: the posture has nothing of the kind (`why` says so)

    def opened_warnings(self, posture: Posture) -> list[PostureWarning]:
        """The warnings of the setting that opens it, when `posture` loosened that setting."""
        opened = self.unless.opened(posture) if self.unless else ()
        if not opened:
            return []
        return [replace(w, text=w.text.format(", ".join(opened))) for w in self.opened]


def _info(text: str) -> PostureWarning:
    return PostureWarning(Severity.INFO, text)


def _caution(text: str) -> PostureWarning:
    return PostureWarning(Severity.CAUTION, text)


def _loosened(text: str) -> PostureWarning:
    return PostureWarning(Severity.DANGER, text, loosened=True)


_TIMEOUT_AND_TREE_KILL = (
    "A wall-clock timeout that kills the whole process tree (if the workbench itself is killed "
    "mid-run, what the skill detached keeps running)."
)
_NO_SANDBOX = PostureWarning(
    Severity.DANGER,
    "NO SANDBOX: the skill runs as you, with full access to your files, your network and every "
    "secret in your environment.",
)
_LOCAL_FILES = Claim(
    False,
    "can read, change and delete any of your files",
    card="Isolate anything: the skill can read, change and delete any of your files.",
    warning=_NO_SANDBOX,
)
_NO_LIMITS = "Limit memory, CPU, disk use outside the workspace or the number of processes."

_LOCAL: dict[Aspect, Claim] = {
    Aspect.HOST_FILES: _LOCAL_FILES,
    Aspect.PRIVATE_FILES: _LOCAL_FILES,
    Aspect.WRITE_OUTSIDE: _LOCAL_FILES,
    Aspect.SKILL_FOLDER: _LOCAL_FILES,
    Aspect.SECRETS: Claim(
        False,
        "sees your whole environment, secrets included",
        card="Hide secrets: it sees your whole environment, tokens and keys included.",
        warning=_NO_SANDBOX,
    ),
    Aspect.NETWORK: Claim(
        False, "the network is open", card="Block the network.", warning=_NO_SANDBOX
    ),
    Aspect.OTHER_PROCESSES: Claim(False, "runs as you, beside your processes", warning=_NO_SANDBOX),
    Aspect.PRIVILEGE: Claim(False, "may ask for your password"),
    Aspect.PROGRAMS: Claim(False, "runs host programs"),
    Aspect.NATIVE_CODE: Claim(False, "loads native code on the host"),
    Aspect.NODE_API: Claim(False, "runs under Node"),
    Aspect.PROCESSES: Claim(False, "no process limit", card=_NO_LIMITS),
    Aspect.DAEMONS: Claim(True, "whole-tree kill", card=_TIMEOUT_AND_TREE_KILL),
    Aspect.LEFTOVERS: Claim(False, "what it leaves in /tmp stays", warning=_NO_SANDBOX),
    Aspect.CPU: Claim(True, "wall-clock timeout", card=_TIMEOUT_AND_TREE_KILL),
    Aspect.MEMORY: Claim(False, "no memory limit", card=_NO_LIMITS),
    Aspect.DISK: Claim(True, "the workspace size limit (watched); none outside the workspace"),
    Aspect.LIMITS: Claim(False, "it runs with no limits, so there is none to raise", applies=False),
}

_HARDENED_LIMITS = (
    "Limits on CPU time, memory, processes, open files and file size, which it cannot raise."
)
_YOUR_FILES = (
    "Protect your files: the skill can still read and write anything you can (when the "
    "workbench runs as root, it runs as a throwaway uid, which can still read every file other "
    "users may read)."
)
_ANY_FILE = _caution(
    "Best effort, not a sandbox: the skill can still read and write any file you can."
)
_OTHERS_FILES = _caution(
    "Best effort, not a sandbox: it runs as a throwaway uid, so your own files are closed to "
    "it, but the skill can still read every file other users may read."
)
_HARDENED_FILES = Claim(
    False,
    "can still read and write anything you can",
    card=_YOUR_FILES,
    warning=_ANY_FILE,
    as_root=Claim(True, "runs as a throwaway uid, so your own files are closed to it"),
)

_HARDENED: dict[Aspect, Claim] = {
    Aspect.HOST_FILES: replace(
        _HARDENED_FILES,
        as_root=Claim(
            False,
            "can still read every file other users may read",
            card=_YOUR_FILES,
            warning=_OTHERS_FILES,
        ),
    ),
    Aspect.PRIVATE_FILES: _HARDENED_FILES,
    Aspect.WRITE_OUTSIDE: _HARDENED_FILES,
    Aspect.SKILL_FOLDER: _HARDENED_FILES,
    Aspect.SECRETS: Claim(
        True,
        "environment built from an allow-list; credential names removed",
        card="Environment built from an allow-list; credential-looking names are removed.",
        unless=Setting.SECRETS,
        opened=(_loosened("Secrets passed to the skill: {}."),),
    ),
    Aspect.NETWORK: Claim(
        False,
        "the network is open",
        card="Block the network.",
        warning=_caution("The skill can still reach the network."),
    ),
    Aspect.OTHER_PROCESSES: Claim(
        False,
        "sees and signals your other processes",
        card="Keep it away from your other processes.",
        warning=_caution(
            "The skill can still see and signal your other processes, and read their "
            "environment variables (secrets included)."
        ),
        as_root=Claim(  # a throwaway uid cannot signal them
            False,
            "sees your other processes",
            card="Keep it away from your other processes.",
            warning=_caution(
                "The skill can still see your other processes and their command lines."
            ),
        ),
    ),
    Aspect.PRIVILEGE: Claim(False, "may ask for your password"),
    Aspect.PROGRAMS: Claim(False, "runs host programs, within the process limit"),
    Aspect.NATIVE_CODE: Claim(False, "loads native code on the host"),
    Aspect.NODE_API: Claim(False, "runs under Node"),
    Aspect.PROCESSES: Claim(True, "RLIMIT_NPROC", card=_HARDENED_LIMITS),
    Aspect.DAEMONS: Claim(
        True,
        "whole-tree kill",
        card="The whole process tree is killed on timeout or Stop, daemons included (if the "
        "workbench itself is killed mid-run, what the skill detached keeps running).",
    ),
    Aspect.LEFTOVERS: Claim(
        False,
        "what it leaves in /tmp, /var/tmp or /dev/shm stays",
        warning=_caution(
            "Files the skill leaves in /tmp, /var/tmp or /dev/shm and its SysV IPC objects stay "
            "after the run (the workbench removes them only when it runs as root)."
        ),
        as_root=Claim(True, "what its throwaway uid leaves is removed after the run"),
    ),
    Aspect.CPU: Claim(True, CPU_TIME_LIMIT, card=_HARDENED_LIMITS),
    Aspect.MEMORY: Claim(True, "RLIMIT_AS", card=_HARDENED_LIMITS),
    Aspect.DISK: Claim(
        True,
        "the workspace size limit (watched); outside it many files can still fill the disk",
        warning=_info(
            "The file-size limit applies to each file; of their total only what a run adds to the "
            "workspace is limited (watched): outside it, many files can still fill the disk."
        ),
    ),
    Aspect.LIMITS: Claim(True, "every hard limit is its soft one", card=_HARDENED_LIMITS),
}

_MOUNTED_ONLY = "Only the workspace and the skill folder are mounted, the skill folder read-only."
_LOCKED_DOWN = "No network, read-only root filesystem, all capabilities dropped, non-root user."
_CGROUPS = "Memory, CPU and process-count limits enforced by the kernel (cgroups)."
_MOUNTS_OPENED = (_loosened("Extra host folder mounted: {}."),)
_NO_DISK_LIMIT = _info(
    "What a run may add to the workspace is limited (1 GiB by default), but watched during the "
    "run, not a kernel quota: a skill can fill that much of the disk."
)

_NOT_MOUNTED = Claim(
    True,
    "only the skill and the workspace are mounted",
    card=_MOUNTED_ONLY,
    unless=Setting.EXTRA_MOUNTS,
    opened=_MOUNTS_OPENED,
)

_DOCKER: dict[Aspect, Claim] = {
    Aspect.HOST_FILES: _NOT_MOUNTED,
    Aspect.PRIVATE_FILES: _NOT_MOUNTED,
    Aspect.WRITE_OUTSIDE: Claim(
        True,
        "read-only root; only the workspace is writable",
        card=_LOCKED_DOWN,
        unless=Setting.EXTRA_MOUNTS,
        opened=_MOUNTS_OPENED,
    ),
    Aspect.SKILL_FOLDER: Claim(True, "read-only mount", card=_MOUNTED_ONLY),
    Aspect.SECRETS: Claim(True, "the container gets none of your environment"),
    Aspect.NETWORK: Claim(
        True,
        "network none",
        card=_LOCKED_DOWN,
        unless=Setting.NETWORK,
        opened=(_loosened("Network is ON: the skill can reach the network."),),
    ),
    Aspect.OTHER_PROCESSES: Claim(True, "a process namespace of its own"),
    Aspect.PRIVILEGE: Claim(
        True,
        "non-root with no-new-privileges",
        card=_LOCKED_DOWN,
        unless=Setting.RUN_AS_ROOT,
        opened=(_loosened("Runs as root inside the container."),),
    ),
    Aspect.PROGRAMS: Claim(False, "runs the image's programs"),
    Aspect.NATIVE_CODE: Claim(False, "loads native code in the container"),
    Aspect.NODE_API: Claim(False, "runs under the image's Node"),
    Aspect.PROCESSES: Claim(True, "cgroup pids limit", card=_CGROUPS),
    Aspect.DAEMONS: Claim(True, "the run's processes are killed in the container"),
    Aspect.LEFTOVERS: Claim(True, "the container and its /tmp go with the session"),
    Aspect.CPU: Claim(
        True, "wall-clock timeout (a CPU share slows a busy loop, never stops it)", card=_CGROUPS
    ),
    Aspect.MEMORY: Claim(True, "cgroup memory limit", card=_CGROUPS),
    Aspect.DISK: Claim(
        True, "the workspace size limit (watched) stops the run", warning=_NO_DISK_LIMIT
    ),
    Aspect.LIMITS: Claim(True, "its ulimits are set with every hard limit equal to its soft one"),
}

_AS_DOCKER = (
    "Everything the Docker posture guarantees; the process limit is RLIMIT_NPROC inside gVisor "
    "instead of a cgroup; every command runs under a seccomp filter that refuses new user "
    "namespaces, which would escape it."
)

_GVISOR: dict[Aspect, Claim] = {  # Docker's claims, its guarantees said in one line
    **{aspect: replace(c, card=_AS_DOCKER if c.card else "") for aspect, c in _DOCKER.items()},
    Aspect.NETWORK: replace(
        _DOCKER[Aspect.NETWORK],
        card=_AS_DOCKER,
        opened=(
            _loosened(
                "Network is ON: the skill can reach the network where the engine's runsc has "
                "one (where it has none, the run is refused)."
            ),
        ),
    ),
    Aspect.PROCESSES: Claim(
        True,
        "RLIMIT_NPROC inside gVisor",
        card=_AS_DOCKER,
        warning=_info(
            "The process limit is RLIMIT_NPROC inside gVisor, not a cgroup: a run is reported "
            "as stopped by it only when a failing command reports a refused fork."
        ),
    ),
    Aspect.MEMORY: Claim(
        True, "cgroup memory limit (it can take the whole sandbox down)", card=_AS_DOCKER
    ),
}

_NO_HOST_API = "No host API beyond console output and a workspace-confined file API."
_ENGINE_LIMITS = "The engine's memory cap, a CPU-time limit and a wall-clock kill of the worker."
_JS_ONLY = _info("Runs JavaScript only; shell commands are refused.")
_CONFINED_FS = Claim(True, "the fs object is confined to the workspace", card=_NO_HOST_API)

_QUICKJS: dict[Aspect, Claim] = {
    Aspect.HOST_FILES: _CONFINED_FS,
    Aspect.PRIVATE_FILES: _CONFINED_FS,
    Aspect.WRITE_OUTSIDE: _CONFINED_FS,
    Aspect.SKILL_FOLDER: _CONFINED_FS,
    Aspect.SECRETS: Claim(True, "no environment in QuickJS", card=_NO_HOST_API),
    Aspect.NETWORK: Claim(
        True,
        "fetch is off by default",
        card=_NO_HOST_API,
        unless=Setting.FETCH,
        opened=(
            _loosened("fetch is ON for these hosts: {}."),
            _info(
                "fetch follows no redirects; every call, allowed or refused, is in the run record."
            ),
        ),
    ),
    Aspect.OTHER_PROCESSES: Claim(True, "no process API", card=_NO_HOST_API),
    Aspect.PRIVILEGE: Claim(True, "no processes in QuickJS", card=_NO_HOST_API),
    Aspect.PROGRAMS: Claim(True, "no processes in QuickJS", warning=_JS_ONLY),
    Aspect.NATIVE_CODE: Claim(True, "no native code in QuickJS", warning=_JS_ONLY),
    Aspect.NODE_API: Claim(True, "QuickJS has no Node APIs", warning=_JS_ONLY),
    Aspect.PROCESSES: Claim(True, "no process API", card=_NO_HOST_API),
    Aspect.DAEMONS: Claim(True, "no process API", card=_NO_HOST_API),
    Aspect.LEFTOVERS: Claim(True, "it reaches nothing outside the workspace", card=_NO_HOST_API),
    Aspect.CPU: Claim(True, f"{CPU_TIME_LIMIT} on the worker", card=_ENGINE_LIMITS),
    Aspect.MEMORY: Claim(True, "QuickJS memory limit", card=_ENGINE_LIMITS),
    Aspect.DISK: Claim(True, "the workspace size limit (watched) stops the run"),
    Aspect.LIMITS: Claim(True, "no process API", card=_NO_HOST_API),
}

_BWRAP_VIEW = (
    "Only /usr (read-only), the skill folder (read-only), the workspace, a private /tmp, its own "
    "/proc and a minimal /dev: none of your home folder or other users' files."
)
_BWRAP_PROCESSES = (
    "Its own PID namespace: it sees no other process, and nothing it starts outlives the run, "
    "nor the workbench."
)
_BWRAP_LIMITS = (
    "Limits on CPU time, memory, processes, open files and file size that it cannot raise "
    "(hard = soft), and on what it writes to disk in all."
)
_BWRAP_WALLS = (
    "No capabilities and no_new_privs; a seccomp filter refuses new namespaces, ptrace, keyrings, "
    "perf_event_open, bpf, io_uring and new unix sockets; Landlock, where the kernel has it, is a "
    "second wall around the files."
)
_BWRAP_SEES_USR = _info(
    "Bound in read-only: /usr (every program and library installed there is readable), a few "
    "files of /etc (certificates, alternatives, hosts) and the skill folder."
)
_BWRAP_MOUNTED = Claim(True, "only /usr, the skill and the workspace are mounted", card=_BWRAP_VIEW)

_BUBBLEWRAP: dict[Aspect, Claim] = {
    Aspect.HOST_FILES: _BWRAP_MOUNTED,
    Aspect.PRIVATE_FILES: _BWRAP_MOUNTED,
    Aspect.WRITE_OUTSIDE: _BWRAP_MOUNTED,
    Aspect.SKILL_FOLDER: Claim(True, "read-only mount", card=_BWRAP_VIEW),
    Aspect.SECRETS: _HARDENED[Aspect.SECRETS],
    Aspect.NETWORK: Claim(
        True,
        "its own network namespace",
        card="No network but its own loopback; with allowed hosts, only those, through a proxy "
        "that records every attempt.",
        unless=Setting.ALLOW_HOSTS,
        opened=(
            _loosened(
                "Network is ON for these hosts, through the workbench's proxy: {}. Every "
                "attempt, allowed or refused, is in the run record."
            ),
        ),
    ),
    Aspect.OTHER_PROCESSES: Claim(True, "its own PID namespace", card=_BWRAP_PROCESSES),
    Aspect.PRIVILEGE: Claim(True, "no capabilities, no_new_privs", card=_BWRAP_WALLS),
    Aspect.PROGRAMS: Claim(
        False,
        "runs the system's programs from /usr",
        card="Hide /usr: every program and library installed there is readable.",
        warning=_BWRAP_SEES_USR,
    ),
    Aspect.NATIVE_CODE: Claim(False, "loads native code inside the sandbox"),
    Aspect.NODE_API: Claim(False, "runs under the system's Node, if it has one"),
    Aspect.PROCESSES: Claim(True, "RLIMIT_NPROC in its own user namespace", card=_BWRAP_LIMITS),
    Aspect.DAEMONS: Claim(True, "its PID 1 kills what the command left", card=_BWRAP_PROCESSES),
    Aspect.LEFTOVERS: Claim(True, "its /tmp, /dev/shm and IPC end with the run", card=_BWRAP_VIEW),
    Aspect.CPU: Claim(True, CPU_TIME_LIMIT, card=_BWRAP_LIMITS),
    Aspect.MEMORY: Claim(True, "RLIMIT_AS", card=_BWRAP_LIMITS),
    Aspect.DISK: Claim(True, "disk limit", card=_BWRAP_LIMITS),
    Aspect.LIMITS: Claim(True, "hard limits equal soft ones", card=_BWRAP_LIMITS),
}

CONTAINMENT: dict[PostureId, dict[Aspect, Claim]] = {
    PostureId.LOCAL: _LOCAL,
    PostureId.HARDENED: _HARDENED,
    PostureId.BUBBLEWRAP: _BUBBLEWRAP,
    PostureId.DOCKER: _DOCKER,
    PostureId.GVISOR: _GVISOR,
    PostureId.QUICKJS: _QUICKJS,
}


def runs_as_root() -> bool:
    """True when the workbench runs as root (`hardened` then uses a throwaway uid)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def claim(posture_id: PostureId, aspect: Aspect, *, as_root: bool | None = None) -> Claim:
    """What `posture_id` does with `aspect` at its default settings, for a workbench that runs
    as root or not (by default, as this one does)."""
    found = CONTAINMENT[posture_id][aspect]
    root = runs_as_root() if as_root is None else as_root
    return found.as_root if root and found.as_root is not None else found


def stops_busy_loops_by_cpu_time(posture_id: PostureId) -> bool:
    """True when `posture_id` promises to stop a busy loop with a CPU-time limit (not only
    with the wall clock)."""
    return claim(posture_id, Aspect.CPU).why.startswith(CPU_TIME_LIMIT)


def claims(posture_id: PostureId, *, as_root: bool | None = None) -> list[Claim]:
    """Every claim of `posture_id`, in `Aspect` order (see `claim`)."""
    return [claim(posture_id, aspect, as_root=as_root) for aspect in Aspect]


def admission(found: Claim) -> str:
    """The sentence of a posture's text that admits what `found` does not contain: its card's
    "does not" line as the card shows it, else its warning; "" when neither says it."""
    if found.card and not found.contained:
        return f"Does not {found.card[0].lower()}{found.card[1:]}"
    return found.warning.text if found.warning is not None else ""


def network_reach(
    posture_id: PostureId,
    network: Network,
    fetch_hosts: tuple[str, ...],
    allow_hosts: tuple[str, ...] = (),
) -> str:
    """What a run's network really was under `posture_id` and those settings, in words."""
    found = claim(posture_id, Aspect.NETWORK)
    if not found.contained:
        return "not blocked: the host's network"
    posture = Posture(posture_id, network=network, fetch_hosts=fetch_hosts, allow_hosts=allow_hosts)
    opened = ", ".join(found.unless.opened(posture)) if found.unless else ""
    if not opened:
        return "off"
    if found.unless is Setting.ALLOW_HOSTS:
        return f"only {opened}, through the logging proxy"
    return f"fetch only, to {opened}" if found.unless is Setting.FETCH else f"ON ({opened})"
