"""The words a user reads about each posture: its card (`POSTURE_INFO`) and warnings (`assess`).

Both are built from the containment table (`containment.py`), so what a posture says it stops is
what the preview predicts and the probe lab checks: its guarantees are the card lines of its
contained claims and what it "does not" the card lines of the others, and `assess()` gives its
claims' warnings, then the warnings of every setting loosened and limit raised. What is about no
single aspect (a shared kernel, speed, where it runs) is written here, in its `PostureInfo`.
"""

from dataclasses import dataclass

from workbench.postures.containment import claims
from workbench.postures.model import (
    CONTAINER_POSTURES,
    DEFAULT_IMAGE,
    DEFAULT_LIMITS,
    MIB,
    STRENGTH_ORDER,
    Availability,
    Limits,
    Posture,
    PostureId,
    PostureWarning,
    Severity,
    default_posture_id,
)


@dataclass(frozen=True, slots=True)
class PostureInfo:
    """The plain-words description of a posture: what it is, guarantees and non-guarantees."""

    id: PostureId
    title: str
    summary: str
    more_guarantees: tuple[str, ...] = ()  # about no single aspect
    more_does_not: tuple[str, ...] = ()
    notes: tuple[PostureWarning, ...] = ()  # warnings about no single aspect

    @property
    def guarantees(self) -> tuple[str, ...]:
        """What it guarantees: its contained claims' card lines, then `more_guarantees`."""
        return _card_lines(self.id, contained=True) + self.more_guarantees

    @property
    def does_not(self) -> tuple[str, ...]:
        """What it does not do: its other claims' card lines, then `more_does_not`."""
        return _card_lines(self.id, contained=False) + self.more_does_not


def _card_lines(posture_id: PostureId, *, contained: bool) -> tuple[str, ...]:
    lines = [c.card for c in claims(posture_id) if c.card and c.contained is contained]
    return tuple(dict.fromkeys(lines))


_KILLED_APP = (
    "Stop the skill if the workbench itself is killed mid-run: its container runs on until the "
    "next run, pool command or app start on this machine removes it."
)

POSTURE_INFO: dict[PostureId, PostureInfo] = {
    PostureId.LOCAL: PostureInfo(
        id=PostureId.LOCAL,
        title="Local (no sandbox)",
        summary="Runs the command as a plain process on this computer, as you.",
        notes=(
            PostureWarning(
                Severity.DANGER,
                "Only use the local posture for skills you wrote yourself or have read line by "
                "line.",
            ),
        ),
    ),
    PostureId.HARDENED: PostureInfo(
        id=PostureId.HARDENED,
        title="Hardened local",
        summary="A local process with resource limits, a scrubbed environment and a "
        "private home folder. Best effort, not a sandbox.",
        more_guarantees=("Private HOME and TMPDIR inside the run's folder.",),
    ),
    PostureId.BUBBLEWRAP: PostureInfo(
        id=PostureId.BUBBLEWRAP,
        title="Bubblewrap sandbox",
        summary="A local process in its own user, mount, PID, IPC and network namespaces "
        "(bwrap), without root or a daemon: it sees the system's /usr, the skill folder and "
        "the workspace, and nothing else of this computer.",
        more_does_not=(
            "Protect against kernel bugs: it shares the host kernel.",
            "Stop a disk fill at once: what a run writes is checked a hundred times a second, "
            "so a fast writer overshoots the disk limit by what it writes in that time.",
            "Exist where the kernel refuses unprivileged user namespaces.",
        ),
        notes=(
            PostureWarning(Severity.INFO, "It shares the host kernel; a kernel bug can break out."),
        ),
    ),
    PostureId.DOCKER: PostureInfo(
        id=PostureId.DOCKER,
        title="Docker container",
        summary="One container per session; each command is a `docker exec` in it.",
        more_does_not=(
            "Protect against kernel bugs: containers share the host's kernel.",
            "Stay this strict if you loosen a setting (network, mounts, root).",
            _KILLED_APP,
        ),
        notes=(
            PostureWarning(
                Severity.INFO, "Containers share the host kernel; a kernel bug can break out."
            ),
        ),
    ),
    PostureId.GVISOR: PostureInfo(
        id=PostureId.GVISOR,
        title="Docker on gVisor",
        summary="The Docker posture on the runsc runtime: a user-space kernel between the "
        "command and the host kernel.",
        more_guarantees=("System calls are served by gVisor, not the host kernel.",),
        more_does_not=(
            "Run as fast: system calls are slower.",
            "Exist on every machine: it needs the runsc runtime in the Docker engine.",
            "Turn the network on where the engine runs runsc with --network=none.",
            "Run coreutils `ls` and `stat` under Debian 12's runsc (20221219): they fail with "
            "'Invalid argument' (find, Python and Node work).",
            _KILLED_APP,
        ),
        notes=(
            PostureWarning(
                Severity.INFO, "gVisor serves system calls in user space; expect slower I/O."
            ),
        ),
    ),
    PostureId.QUICKJS: PostureInfo(
        id=PostureId.QUICKJS,
        title="QuickJS worker",
        summary="Runs a JavaScript file in a QuickJS engine inside a separate, limited "
        "worker process.",
        more_does_not=(
            "Run anything but JavaScript (no shell, no Python).",
            "Keep the network closed when fetch is turned on.",
        ),
    ),
}


def posture_title(posture_id: str) -> str:
    """`Hardened local` for `hardened`; an id this build does not know (an old record's), as
    it is."""
    known = {posture.value: posture for posture in PostureId}
    return POSTURE_INFO[known[posture_id]].title if posture_id in known else posture_id


def assess(posture: Posture) -> list[PostureWarning]:
    """Every warning a user should read before running under `posture` (see the module doc)."""
    found = claims(posture.id)
    warnings = [c.warning for c in found if c.warning is not None]
    warnings += POSTURE_INFO[posture.id].notes
    for c in found:
        warnings += c.opened_warnings(posture)
    if posture.id is PostureId.BUBBLEWRAP:
        tmp = _format_limit("disk_bytes", posture.limits.disk_bytes)
        warnings.append(
            PostureWarning(
                Severity.INFO, f"Its private /tmp and /dev/shm hold up to {tmp} each, in memory."
            )
        )
    if posture.id in CONTAINER_POSTURES and posture.image != DEFAULT_IMAGE:
        text = (
            f"Runs the image {posture.image}, not the workbench's sandbox image: it holds what "
            "its maker put in it (the container's controls are the same)."
        )
        warnings.append(PostureWarning(Severity.CAUTION, text, True))
    warnings += _loosened_limits(posture.limits)
    return list(dict.fromkeys(warnings))


def _loosened_limits(limits: Limits) -> list[PostureWarning]:
    """A warning for each limit set above its safe default."""
    warnings = []
    for name in _LIMIT_LABELS:
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
    "open_files": "Open-file limit",
    "file_size_bytes": "File-size limit",
    "disk_bytes": "Disk limit",
    "log_bytes": "Output log cap",
}


def _format_limit(name: str, value: float) -> str:
    if name.endswith("_bytes"):
        return f"{value / MIB:g} MiB"
    if name in ("timeout_s", "cpu_seconds"):
        return f"{value:g} s"
    return f"{value:g}"


def default_reason(available: dict[PostureId, Availability]) -> str:
    """Why the default posture is the one it is: the stronger ones this machine lacks."""
    default = default_posture_id(available)
    stronger = STRENGTH_ORDER[: STRENGTH_ORDER.index(default)]
    reasons = dict.fromkeys(available[p].reason for p in stronger)  # the same cause once
    title = POSTURE_INFO[default].title
    if not reasons:
        return f"{title} is the strongest posture this machine offers."
    names = " and ".join(POSTURE_INFO[p].title for p in stronger)
    return f"{title} is the default because {names} cannot run here: {' '.join(reasons)}"
