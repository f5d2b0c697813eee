"""The Docker posture as engine options, and the effective posture card read back from them.

`container_options()` turns a typed `Posture` and a `SessionSpec` into the keyword arguments
of docker-py's `containers.create`, with every control at its safe setting unless the posture
loosens it. On an engine that sees this machine's files the skill folder (read-only) and the
workspace are bind-mounted, and so is a skill environment (read-only at /opt/skill-env, with
PYTHONPATH and NODE_PATH pointing into it, its image with its Debian packages replacing the
posture's); on one that does not (`copied`), the skill and workspace are two volumes the session
owns (named after it, labelled with it), which `remote` fills and empties, and no environment is
mounted. `posture_card()` reads the container's inspect data back into a CIS-style checklist of
(control, held) pairs, so the card shows what the engine applied, not what was asked for, and
where the engine is ("Engine on this machine" / "Remote engine: files are copied"). The process
limit is the pids cgroup under runc and RLIMIT_NPROC under gVisor (`ulimits`).
`network_refusal()` says when the engine's runtime cannot give the network a posture asks for.
"""

import os
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

import docker
from docker.types import Mount

from workbench.executors.availability import EngineRuntimes, network_off
from workbench.executors.docker.supervisor_link import PROGRAM
from workbench.executors.process.outcome import format_bytes
from workbench.executors.types import PostureCard, SessionSpec
from workbench.monitor.process import RUN_TAG_ENV
from workbench.postures.model import MIB, Limits, Network, Posture

LABEL_APP = "org.skill-workbench"
LABEL_SESSION = "org.skill-workbench.session"
LABEL_SKILL = "org.skill-workbench.skill"
SKILLS_MOUNT = "/mnt/skills"
WORKSPACE_MOUNT = "/workspace"
ENVIRONMENT_MOUNT = PurePosixPath("/opt/skill-env")
TMPFS_OPTIONS = "rw,nosuid,nodev,size=64m"
CONTAINER_UID = 1000
MIN_MEMORY_BYTES = 6 * MIB  # Docker refuses less (and so does Podman)
MIN_CPUS = 0.01
NPROC = "nproc"
# Under runc RLIMIT_NPROC counts the uid's processes on the whole host, so the pids cgroup is
# the container's process limit; but Podman, given any ulimit, fills in an RLIMIT_NPROC of
# 1048576, which hosts that cap it refuse: a roomy one is given instead.
RUNC_NPROC = 4096
RUNSC_PROCESS_LIMIT = "RLIMIT_NPROC inside gVisor"
ENGINE_SOCKETS = ("docker.sock", "podman.sock")
LOCAL = "Engine on this machine"
COPIED = "Remote engine: files are copied"
# What Docker and Podman grant a container unless told otherwise (Podman's inspect lists these
# one by one where Docker says "ALL").
DEFAULT_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
        "NET_BIND_SERVICE", "NET_RAW", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
    }
)  # fmt: skip

# The container's main process under runc, the only child of the init: on SIGUSR1 (forwarded by
# the init) it kills every other process of the container with the `kill` builtin, which needs no
# fork and so works even when a fork bomb holds every slot of the process limit. Its own sleep dies
# too, and the next fork may find the slots still taken (by the bomb, or by the dead not yet
# reaped): under `command eval` a refused fork is an error dash survives and retries, where a
# plain one would end the shell, and with it the container.
SUPERVISOR_NAME = "workbench-supervisor"
SUPERVISOR_SCRIPT = (
    'trap "for i in 1 2 3 4 5 6 7 8; do kill -9 -1 2>/dev/null; done" USR1; '
    'while :; do command eval "sleep 3600 &" 2>/dev/null && wait; done'
)
SWEEP_SIGNAL = "SIGUSR1"
RUNC_IDLE_TASKS = 3  # an idle runc container: the init, the shell of SUPERVISOR_SCRIPT, its sleep
SESSION_TAG = "session"


def skill_mount(session: SessionSpec) -> str:
    """Where the skill folder appears inside the container."""
    return f"{SKILLS_MOUNT}/{session.skill_name}"


def volume_name(session_id: str, role: str) -> str:
    """The name of a session's volume: `role` is "skill" or "workspace"."""
    return f"skill-workbench-{session_id}-{role}"


def container_user(posture: Posture, copied: bool = False) -> str:
    """The uid:gid commands run as: root only when the posture asks for it.

    A non-root workbench maps to its own uid so files written to a bind-mounted workspace stay
    the user's; a workbench running as root, or whose files are copied (they come back as the
    user's files anyway), runs commands as the image's uid 1000.
    """
    if posture.run_as_root:
        return "0:0"
    if hasattr(os, "getuid") and os.getuid() != 0 and not copied:
        return f"{os.getuid()}:{os.getgid()}"
    return f"{CONTAINER_UID}:{CONTAINER_UID}"


def container_options(
    posture: Posture, session: SessionSpec, session_id: str, runtime: str, copied: bool = False
) -> dict[str, Any]:
    """Keyword arguments for `client.containers.create(...)` of the session container; with
    `copied`, the skill and the workspace are the session's volumes, not bind mounts."""
    limits = posture.limits
    labels = {LABEL_APP: "1", LABEL_SESSION: session_id, LABEL_SKILL: session.skill_name}
    environment = None if copied else session.environment
    return {
        "image": environment.image if environment and environment.image else posture.image,
        # The supervisor's tag, which every exec overrides with its own: the sweep kills the
        # untagged orphans of the init (`env -i` escapees) and spares the session's processes.
        "environment": {
            RUN_TAG_ENV: SESSION_TAG,
            **(environment.variables(ENVIRONMENT_MOUNT, {}) if environment else {}),
        },
        **_main_process(runtime),
        "init": True,
        "runtime": runtime,
        "user": container_user(posture, copied),
        "working_dir": WORKSPACE_MOUNT,
        "network_mode": "bridge" if posture.network is Network.BRIDGE else "none",
        "mem_limit": limits.memory_bytes,
        "memswap_limit": limits.memory_bytes,
        "nano_cpus": int(limits.cpus * 1e9),
        "ulimits": ulimits(limits, runtime),
        **({} if runtime == "runsc" else {"pids_limit": limits.pids}),
        "read_only": True,
        "tmpfs": {"/tmp": TMPFS_OPTIONS},
        "security_opt": ["no-new-privileges"],
        "cap_drop": ["ALL"],
        "cgroupns": "private",
        **_folders(posture, session, session_id, copied),
        "labels": labels,
    }


def _main_process(runtime: str) -> dict[str, Any]:
    """The container's main process: under gVisor the supervisor every command starts through
    (`gvisor_supervisor`), talking over its attached stdin and stdout, which no log keeps (they
    carry the commands' output); under runc the shell of `SUPERVISOR_SCRIPT`."""
    if runtime == "runsc":
        return {"command": PROGRAM, "stdin_open": True, "log_config": {"type": "none"}}
    return {"command": ["sh", "-c", SUPERVISOR_SCRIPT, SUPERVISOR_NAME]}


def _folders(
    posture: Posture, session: SessionSpec, session_id: str, copied: bool
) -> dict[str, Any]:
    """The skill folder (read-only) and the workspace: bind mounts, or the session's volumes."""
    if not copied:
        folders = [
            f"{session.skill_dir.resolve()}:{skill_mount(session)}:ro",
            f"{session.workspace.resolve()}:{WORKSPACE_MOUNT}:rw",
        ]
        if session.environment is not None:
            folders.append(f"{session.environment.root.resolve()}:{ENVIRONMENT_MOUNT}:ro")
        return {"volumes": [*folders, *posture.extra_mounts]}
    skill = volume_name(session_id, "skill")
    workspace = volume_name(session_id, "workspace")
    mounts = [
        Mount(skill_mount(session), skill, read_only=True),
        Mount(WORKSPACE_MOUNT, workspace),
    ]
    return {"volumes": list(posture.extra_mounts), "mounts": mounts}


def ulimits(limits: Limits, runtime: str) -> list[dict[str, Any]]:
    """The rlimits of every process in the container, hard equal to soft (the command cannot
    raise them): open files, file size, CPU seconds and, under gVisor, the process limit.

    Under gVisor the host's pids cgroup counts the sandbox's own threads, not the command's
    processes: a limit there starves the sandbox (it dies, or never starts below ~64). gVisor's
    kernel enforces RLIMIT_NPROC itself, per uid inside the sandbox, for root too while it holds
    no capabilities; `docker exec` processes inherit it. Under runc RLIMIT_NPROC would count
    the uid's processes on the whole host, so there the pids cgroup does it.
    """
    return [
        {"name": name, "soft": value, "hard": value}
        for name, value in _rlimits(limits, runtime).items()
    ]


def _rlimits(limits: Limits, runtime: str) -> dict[str, int]:
    """The container's rlimits by the engine's name of each."""
    rlimits = {
        "nofile": limits.open_files,
        "fsize": limits.file_size_bytes,
        "cpu": limits.cpu_seconds,
    }
    return rlimits | {NPROC: limits.pids if runtime == "runsc" else RUNC_NPROC}


def limits_refusal(limits: Limits, engine_cpus: Callable[[], int]) -> str:
    """Why the engine would refuse `limits` (its own words are an HTTP error), or "".

    `engine_cpus` asks the engine how many CPUs it has (13 ms); every engine has one at least,
    so only a CPU limit outside 0.01-1 calls it."""
    if limits.memory_bytes < MIN_MEMORY_BYTES:
        return (
            f"The memory limit {format_bytes(limits.memory_bytes)} is below "
            f"{format_bytes(MIN_MEMORY_BYTES)}, the least a container can start with; raise it."
        )
    if MIN_CPUS <= limits.cpus <= 1:
        return ""
    most = engine_cpus()
    if MIN_CPUS <= limits.cpus <= most:
        return ""
    return (
        f"The CPU limit {limits.cpus:g} is outside what the engine can give: from "
        f"{MIN_CPUS:g} to {most} (its machine's CPUs)."
    )


def network_refusal(posture: Posture, runtime: str, client: docker.DockerClient) -> str:
    """Why the engine cannot give `posture` the network it asks for ("" when nothing says so).

    Asks the engine (blocking) only when a network is asked for on runsc.
    """
    if posture.network is Network.NONE or runtime != "runsc":
        return ""
    engine = EngineRuntimes.from_info(client.info().get("Runtimes") or {})
    if not network_off(engine.args.get(runtime, ())):
        return ""
    return (
        "Network cannot be turned on under this engine's gVisor runtime: its runsc runs with "
        "--network=none (runtimeArgs in the engine's daemon.json), so a gVisor container has "
        "no network whatever is asked. Run with --network none, or use the docker posture."
    )


def posture_card(posture: Posture, attrs: dict[str, Any], runtime: str) -> PostureCard:
    """The checklist of what the engine actually applied, from the container's inspect data."""
    host = attrs.get("HostConfig") or {}
    config = attrs.get("Config") or {}
    mounts = attrs.get("Mounts") or []
    limits = posture.limits
    user = str(config.get("User") or "0")
    memory = int(host.get("Memory") or 0)
    nano_cpus = int(host.get("NanoCpus") or 0)
    network = str(host.get("NetworkMode") or "")
    host_namespaces = [
        name
        for name in ("PidMode", "IpcMode", "NetworkMode", "UTSMode", "UsernsMode", "CgroupnsMode")
        if str(host.get(name) or "") == "host"
    ]
    sockets = [m for m in mounts if str(m.get("Source", "")).endswith(ENGINE_SOCKETS)]
    skill: dict[str, Any] = next(
        (m for m in mounts if m.get("Destination", "").startswith(SKILLS_MOUNT)), {}
    )
    workspace: dict[str, Any] = next(
        (m for m in mounts if m.get("Destination") == WORKSPACE_MOUNT), {}
    )
    copied = workspace.get("Type") == "volume"
    checks = (
        (f"Non-root user ({user})", user.split(":")[0] not in ("", "0", "root")),
        ("All capabilities dropped", _capabilities_dropped(host)),
        ("Read-only root filesystem", bool(host.get("ReadonlyRootfs"))),
        (
            f"Memory limit {memory / MIB:g} MiB, no swap beyond it",
            memory == limits.memory_bytes and host.get("MemorySwap") == memory,
        ),
        (_cpu_label(nano_cpus / 1e9), nano_cpus == int(limits.cpus * 1e9)),
        _pids_check(host, limits.pids, runtime),
        *_ulimit_checks(host, limits),
        ("Network off" if network == "none" else f"Network off (is {network})", network == "none"),
        (
            "No new privileges (set-uid programs gain nothing)",
            any(o.startswith("no-new-privileges") for o in host.get("SecurityOpt") or []),
        ),
        ("No Docker socket mounted", not sockets),
        (
            "No host namespaces" + (f" ({', '.join(host_namespaces)})" if host_namespaces else ""),
            not host_namespaces,
        ),
        ("No devices, not privileged", not host.get("Devices") and not host.get("Privileged")),
        ("Skill folder mounted read-only", skill.get("RW") is False),
        (COPIED if copied else LOCAL, True),
        *_environment_check(mounts),
        _runtime_check(str(host.get("Runtime") or ""), runtime),
    )
    return PostureCard(
        posture=posture, checks=checks, run_as=user, image_id=str(attrs.get("Image") or "")
    )


def _environment_check(mounts: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    """A row for the skill environment's mount, when there is one."""
    found = [mount for mount in mounts if mount.get("Destination") == str(ENVIRONMENT_MOUNT)]
    return [
        (f"Skill environment mounted read-only at {ENVIRONMENT_MOUNT}", m.get("RW") is False)
        for m in found
    ]


def _cpu_label(cpus: float) -> str:
    """`CPU limit 1 CPU`, `CPU limit 0.5 CPUs`."""
    return f"CPU limit {cpus:g} CPU{'' if cpus == 1 else 's'}"


def _capabilities_dropped(host: dict[str, Any]) -> bool:
    """Docker says "ALL"; Podman lists the capabilities it would otherwise have granted."""
    dropped = {str(name).upper().removeprefix("CAP_") for name in host.get("CapDrop") or []}
    return not host.get("CapAdd") and ("ALL" in dropped or dropped >= DEFAULT_CAPABILITIES)


def _runtime_check(applied: str, asked: str) -> tuple[str, bool]:
    """Podman names its default runtime (runc or crun, never gVisor) "oci"."""
    if applied == "oci" and asked == "runc":
        return "Runtime oci (Podman's default, not gVisor)", True
    return f"Runtime {applied}", applied == asked


def _ulimit_checks(host: dict[str, Any], limits: Limits) -> list[tuple[str, bool]]:
    """One check per rlimit of the container but the process one: held when soft and hard
    both are the value asked."""
    applied = _applied_ulimits(host)
    labels = {
        "nofile": f"Open files limit {limits.open_files} (RLIMIT_NOFILE)",
        "fsize": f"File size limit {format_bytes(limits.file_size_bytes)} (RLIMIT_FSIZE)",
        "cpu": f"CPU time limit {limits.cpu_seconds} s (RLIMIT_CPU)",
    }
    wanted = _rlimits(limits, "runc")
    return [(label, applied.get(name) == (wanted[name],) * 2) for name, label in labels.items()]


def _applied_ulimits(host: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """(soft, hard) by the engine's name of each rlimit (Podman says "RLIMIT_NOFILE")."""
    return {
        str(u.get("Name")).lower().removeprefix("rlimit_"): (u.get("Soft"), u.get("Hard"))
        for u in host.get("Ulimits") or []
    }


def _pids_check(host: dict[str, Any], asked: int, runtime: str) -> tuple[str, bool]:
    if runtime == "runsc":
        soft, hard = (int(value or 0) for value in _applied_ulimits(host).get(NPROC, (0, 0)))
        return f"Process limit {hard} ({RUNSC_PROCESS_LIMIT})", 0 < soft <= hard <= asked
    applied = int(host.get("PidsLimit") or 0)
    return f"Process limit {applied}", 0 < applied <= asked
