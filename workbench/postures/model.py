"""Executor postures as typed data: what each one is, what it guarantees, and what it does not.

A `Posture` is a frozen dataclass whose every knob has the safest default. Loosening a knob is
an explicit change of a field, and `assess()` turns the posture into plain-data warnings that
the CLI prints and the GUI renders. Which postures can run on this machine is asked by
`workbench.executors.availability`; `default_posture_id()` picks the strongest of them.
"""

import os
from dataclasses import dataclass, field, replace
from enum import StrEnum

from workbench.errors import PostureError

MIB = 1024 * 1024


class PostureId(StrEnum):
    """The executor postures, from no isolation to the strongest."""

    LOCAL = "local"
    HARDENED = "hardened"
    DOCKER = "docker"
    GVISOR = "gvisor"
    QUICKJS = "quickjs"


class Network(StrEnum):
    """Network access a command gets. Only container postures can actually withhold it."""

    NONE = "none"
    BRIDGE = "bridge"


CONTAINER_POSTURES = (PostureId.DOCKER, PostureId.GVISOR)


def network_reach(posture_id: PostureId, network: Network, fetch_hosts: tuple[str, ...]) -> str:
    """What a run's network really was under `posture_id`, in words (the posture's `network`
    setting is only honoured by containers; QuickJS has no network but its `fetch`)."""
    if posture_id in CONTAINER_POSTURES:
        return "off" if network is Network.NONE else "ON (bridge)"
    if posture_id is PostureId.QUICKJS:
        return f"fetch only, to {', '.join(fetch_hosts)}" if fetch_hosts else "off"
    return "not blocked: the host's network"


class Severity(StrEnum):
    """How loud a posture warning is: `danger` for no isolation or a loosened control."""

    INFO = "info"
    CAUTION = "caution"
    DANGER = "danger"


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of a run. The defaults are the safe ones a user may change."""

    timeout_s: float = 60.0
    memory_bytes: int = 512 * MIB
    cpus: float = 1.0
    pids: int = 128
    cpu_seconds: int = 60
    open_files: int = 256
    file_size_bytes: int = 256 * MIB


DEFAULT_LIMITS = Limits()

DEFAULT_ENV_ALLOW: tuple[str, ...] = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ")
DEFAULT_IMAGE = "skill-workbench-sandbox:latest"


@dataclass(frozen=True, slots=True)
class Posture:
    """One executor posture with every knob it honours.

    Fields a posture does not use are ignored by it (for example `image` for `hardened`);
    `assess()` only reports the ones that matter for the posture's `id`.
    """

    id: PostureId
    limits: Limits = field(default_factory=Limits)
    network: Network = Network.NONE
    env_allow: tuple[str, ...] = DEFAULT_ENV_ALLOW
    confirmed_secret_env: tuple[str, ...] = ()
    extra_mounts: tuple[str, ...] = ()
    run_as_root: bool = False
    image: str = DEFAULT_IMAGE
    fetch_hosts: tuple[str, ...] = ()

    def with_limits(self, **changes: float | int) -> "Posture":
        """A copy with some limits changed, e.g. `posture.with_limits(timeout_s=5)`."""
        return replace(self, limits=replace(self.limits, **changes))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class PostureWarning:
    """One sentence about a posture that a user must see before trusting it."""

    severity: Severity
    text: str
    loosened: bool = False


@dataclass(frozen=True, slots=True)
class PostureInfo:
    """The plain-words description of a posture: what it is, guarantees and non-guarantees."""

    id: PostureId
    title: str
    summary: str
    guarantees: tuple[str, ...]
    does_not: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Availability:
    """Whether a posture can run on this machine, and the reason when it cannot."""

    available: bool
    reason: str


_KILLED_APP = (
    "Stop the skill if the workbench itself is killed mid-run: its container runs on until the "
    "next run, pool command or app start on this machine removes it."
)

POSTURE_INFO: dict[PostureId, PostureInfo] = {
    PostureId.LOCAL: PostureInfo(
        id=PostureId.LOCAL,
        title="Local (no sandbox)",
        summary="Runs the command as a plain process on this computer, as you.",
        guarantees=(
            "A wall-clock timeout that kills the whole process tree (if the workbench "
            "itself is killed mid-run, what the skill detached keeps running).",
        ),
        does_not=(
            "Isolate anything: the skill can read, change and delete any of your files.",
            "Hide secrets: it sees your whole environment, tokens and keys included.",
            "Block the network.",
            "Limit memory, CPU, disk use or the number of processes.",
        ),
    ),
    PostureId.HARDENED: PostureInfo(
        id=PostureId.HARDENED,
        title="Hardened local",
        summary="A local process with resource limits, a scrubbed environment and a "
        "private home folder. Best effort, not a sandbox.",
        guarantees=(
            "Limits on CPU time, memory, processes, open files and file size.",
            "Environment built from an allow-list; credential-looking names are removed.",
            "Private HOME and TMPDIR inside the run's folder.",
            "The whole process tree is killed on timeout or Stop, daemons included (if the "
            "workbench itself is killed mid-run, what the skill detached keeps running).",
        ),
        does_not=(
            "Protect your files: the skill can still read and write anything you can (when "
            "the workbench runs as root, it runs as a throwaway uid, which can still read "
            "every file other users may read).",
            "Block the network.",
            "Keep it away from your other processes.",
        ),
    ),
    PostureId.DOCKER: PostureInfo(
        id=PostureId.DOCKER,
        title="Docker container",
        summary="One container per session; each command is a `docker exec` in it.",
        guarantees=(
            "No network, read-only root filesystem, all capabilities dropped, non-root user.",
            "Memory, CPU and process-count limits enforced by the kernel (cgroups).",
            "Only the workspace is writable; the skill folder is mounted read-only.",
        ),
        does_not=(
            "Protect against kernel bugs: containers share the host's kernel.",
            "Stay this strict if you loosen a setting (network, mounts, root).",
            _KILLED_APP,
        ),
    ),
    PostureId.GVISOR: PostureInfo(
        id=PostureId.GVISOR,
        title="Docker on gVisor",
        summary="The Docker posture on the runsc runtime: a user-space kernel between the "
        "command and the host kernel.",
        guarantees=(
            "Everything the Docker posture guarantees; the process limit is RLIMIT_NPROC "
            "inside gVisor instead of a cgroup; every command runs under a seccomp filter that "
            "refuses new user namespaces, which would escape it.",
            "System calls are served by gVisor, not the host kernel.",
        ),
        does_not=(
            "Run as fast: system calls are slower.",
            "Exist on every machine: it needs the runsc runtime in the Docker engine.",
            "Turn the network on where the engine runs runsc with --network=none.",
            "Run coreutils `ls` and `stat` under Debian 12's runsc (20221219): they fail with "
            "'Invalid argument' (find, Python and Node work).",
            _KILLED_APP,
        ),
    ),
    PostureId.QUICKJS: PostureInfo(
        id=PostureId.QUICKJS,
        title="QuickJS worker",
        summary="Runs a JavaScript file in a QuickJS engine inside a separate, limited "
        "worker process.",
        guarantees=(
            "No host API beyond console output and a workspace-confined file API.",
            "The engine's memory cap, a CPU-time limit and a wall-clock kill of the worker.",
        ),
        does_not=(
            "Run anything but JavaScript (no shell, no Python).",
            "Keep the network closed when fetch is turned on.",
        ),
    ),
}

# Strongest first: the default posture is the first available one in this order.
STRENGTH_ORDER: tuple[PostureId, ...] = (
    PostureId.GVISOR,
    PostureId.DOCKER,
    PostureId.HARDENED,
)


def posture_title(posture_id: str) -> str:
    """`Hardened local` for `hardened`; an id this build does not know (an old record's), as
    it is."""
    known = {posture.value: posture for posture in PostureId}
    return POSTURE_INFO[known[posture_id]].title if posture_id in known else posture_id


def parse_posture_id(text: str) -> PostureId:
    """The posture named `text`, or a `PostureError` listing the known names."""
    try:
        return PostureId(text)
    except ValueError:
        known = ", ".join(p.value for p in PostureId)
        raise PostureError(f"Unknown posture {text!r}. Known postures: {known}.") from None


def assess(posture: Posture) -> list[PostureWarning]:
    """Every warning a user should read before running under `posture`."""
    checks = {
        PostureId.LOCAL: _assess_local,
        PostureId.HARDENED: _assess_hardened,
        PostureId.DOCKER: _assess_container,
        PostureId.GVISOR: _assess_container,
        PostureId.QUICKJS: _assess_quickjs,
    }
    return checks[posture.id](posture)


def _assess_local(posture: Posture) -> list[PostureWarning]:
    del posture
    return [
        PostureWarning(
            Severity.DANGER,
            "NO SANDBOX: the skill runs as you, with full access to your files, "
            "your network and every secret in your environment.",
        ),
        PostureWarning(
            Severity.DANGER,
            "Only use the local posture for skills you wrote yourself or have read line by line.",
        ),
    ]


def _assess_hardened(posture: Posture) -> list[PostureWarning]:
    warnings = [
        PostureWarning(
            Severity.CAUTION,
            "Best effort, not a sandbox: it runs as a throwaway uid, so your own files are "
            "closed to it, but the skill can still read every file other users may read."
            if os.geteuid() == 0
            else "Best effort, not a sandbox: the skill can still read and write any file you can.",
        ),
        PostureWarning(Severity.CAUTION, "The skill can still reach the network."),
        PostureWarning(
            Severity.CAUTION,
            "The skill can still see your other processes and their command lines."
            if os.geteuid() == 0  # it runs as a throwaway uid, which cannot signal them
            else "The skill can still see and signal your other processes, and read their "
            "environment variables (secrets included).",
        ),
        PostureWarning(
            Severity.INFO,
            "The file-size limit applies to each file, not the total: many files can "
            "still fill the disk.",
        ),
    ]
    if os.geteuid() != 0:  # as root, what its throwaway uid leaves is removed after the run
        warnings.append(
            PostureWarning(
                Severity.CAUTION,
                "Files the skill leaves in /tmp, /var/tmp or /dev/shm and its SysV IPC objects "
                "stay after the run (the workbench removes them only when it runs as root).",
            )
        )
    if posture.confirmed_secret_env:
        names = ", ".join(posture.confirmed_secret_env)
        warnings.append(
            PostureWarning(Severity.DANGER, f"Secrets passed to the skill: {names}.", True)
        )
    warnings.extend(_loosened_limits(posture.limits))
    return warnings


def _assess_container(posture: Posture) -> list[PostureWarning]:
    warnings = [
        PostureWarning(
            Severity.INFO,
            "Containers share the host kernel; a kernel bug can break out."
            if posture.id is PostureId.DOCKER
            else "gVisor serves system calls in user space; expect slower I/O.",
        ),
        PostureWarning(Severity.INFO, "No size limit on the workspace: a skill can fill the disk."),
    ]
    if posture.id is PostureId.GVISOR:
        warnings.append(
            PostureWarning(
                Severity.INFO,
                "The process limit is RLIMIT_NPROC inside gVisor, not a cgroup: a run is "
                "reported as stopped by it only when a failing command reports a refused fork.",
            )
        )
    if posture.network is not Network.NONE:
        text = (
            "Network is ON: the skill can reach the network where the engine's runsc has one "
            "(where it has none, the run is refused)."
            if posture.id is PostureId.GVISOR
            else "Network is ON: the skill can reach the network."
        )
        warnings.append(PostureWarning(Severity.DANGER, text, True))
    for mount in posture.extra_mounts:
        warnings.append(
            PostureWarning(Severity.DANGER, f"Extra host folder mounted: {mount}.", True)
        )
    if posture.run_as_root:
        warnings.append(PostureWarning(Severity.DANGER, "Runs as root inside the container.", True))
    warnings.extend(_loosened_limits(posture.limits))
    return warnings


def _assess_quickjs(posture: Posture) -> list[PostureWarning]:
    warnings = [
        PostureWarning(Severity.INFO, "Runs JavaScript only; shell commands are refused."),
        PostureWarning(Severity.INFO, "A run can write up to 256 MiB into the workspace."),
    ]
    if posture.fetch_hosts:
        hosts = ", ".join(posture.fetch_hosts)
        warnings.append(
            PostureWarning(Severity.DANGER, f"fetch is ON for these hosts: {hosts}.", True)
        )
        text = "fetch follows no redirects; every call, allowed or refused, is in the run record."
        warnings.append(PostureWarning(Severity.INFO, text))
    warnings.extend(_loosened_limits(posture.limits))
    return warnings


def _loosened_limits(limits: Limits) -> list[PostureWarning]:
    """A warning for each limit set above its safe default."""
    warnings = []
    for name in ("timeout_s", "memory_bytes", "cpus", "pids", "cpu_seconds"):
        value, default = getattr(limits, name), getattr(DEFAULT_LIMITS, name)
        if value > default:
            warnings.append(
                PostureWarning(
                    Severity.CAUTION,
                    f"{_LIMIT_LABELS[name]} raised to {_format_limit(name, value)} "
                    f"(default {_format_limit(name, default)}).",
                    True,
                )
            )
    return warnings


_LIMIT_LABELS = {
    "timeout_s": "Timeout",
    "memory_bytes": "Memory limit",
    "cpus": "CPU limit",
    "pids": "Process limit",
    "cpu_seconds": "CPU-time limit",
}


def _format_limit(name: str, value: float) -> str:
    if name == "memory_bytes":
        return f"{value / MIB:g} MiB"
    if name in ("timeout_s", "cpu_seconds"):
        return f"{value:g} s"
    return f"{value:g}"


def default_posture_id(available: dict[PostureId, Availability]) -> PostureId:
    """The strongest available posture that runs shell commands; never `local`."""
    for posture_id in STRENGTH_ORDER:
        if available[posture_id].available:
            return posture_id
    raise PostureError(
        "No sandboxing posture is available on this machine; choose --posture local "
        "explicitly if you accept running without one."
    )
