"""What a finding of the capability preview meets under each posture, at its default settings.

`effect(posture, finding, context)` answers with the posture's claim on the finding's aspect in
the containment table (`postures.containment`; `_ASPECTS` maps capabilities to aspects), narrowed
to what the finding names where that decides it (`Context`): a file this computer lacks, the
skill folder, a system file in a container, a file others may or may not read, the private HOME,
a folder others may write, root's privileges under a throwaway uid, a count of processes or bytes
within its limit, the skill's own loopback server; it says for itself that a run gets no input
and whether a third-party module is in the image or on this computer.
"""

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from workbench.postures.containment import Aspect, claim
from workbench.postures.model import CONTAINER_POSTURES, DEFAULT_LIMITS, Limits, PostureId
from workbench.skills.scripts import Capability, Finding

# The aspect of the containment table each capability tries.
_ASPECTS: dict[Capability, Aspect] = {
    Capability.NETWORK: Aspect.NETWORK,
    Capability.LOOPBACK: Aspect.NETWORK,
    Capability.SERVER: Aspect.NETWORK,
    Capability.SUBPROCESS: Aspect.PROGRAMS,
    Capability.ENVIRONMENT: Aspect.SECRETS,
    Capability.HOST_FILES: Aspect.HOST_FILES,
    Capability.WRITE_OUTSIDE: Aspect.WRITE_OUTSIDE,
    Capability.PRIVILEGE: Aspect.PRIVILEGE,
    Capability.DESTRUCTIVE: Aspect.WRITE_OUTSIDE,
    Capability.NATIVE_CODE: Aspect.NATIVE_CODE,
    Capability.NODE_API: Aspect.NODE_API,
    Capability.DAEMON: Aspect.DAEMONS,
    Capability.PROCESSES: Aspect.PROCESSES,
    Capability.CPU: Aspect.CPU,
    Capability.MEMORY: Aspect.MEMORY,
    Capability.DISK: Aspect.DISK,
    Capability.LIMITS: Aspect.LIMITS,
}
# What a container has of its own (the image's): reading there reads no file of this computer.
_SYSTEM = ("/etc/", "/usr/", "/lib", "/bin/", "/sbin/", "/proc/", "/sys/", "/dev/")
Effect = tuple[bool, str]


@dataclass(frozen=True, slots=True)
class Context:
    """What refining a claim to what a finding names needs to know."""

    skill_dir: Path
    as_root: bool  # the workbench runs as root: hardened runs a throwaway uid
    limits: Limits = DEFAULT_LIMITS  # the limits the run has
    serves: bool = False  # the command starts a server of its own
    image_modules: dict[str, bool] = field(default_factory=dict)
    host_modules: dict[str, bool] = field(default_factory=dict)


def effect(posture: PostureId, finding: Finding, context: Context) -> Effect | None:
    """Whether `posture` blocks what `finding` does, and why (see the module doc)."""
    capability, target = finding.capability, finding.target or ""
    if capability is Capability.INPUT:
        return True, "a run's stdin is empty: no answer comes"
    if capability is Capability.MODULE:
        return _module(posture, target, context)
    aspect = _ASPECTS.get(capability)
    if aspect is None:
        return None
    found = claim(posture, aspect, as_root=context.as_root)
    if not found.applies:
        return None  # the posture has nothing of the kind (no limits to raise)
    table = (found.contained, found.why)
    if capability is Capability.HOST_FILES:
        return _read(posture, target, context) or table
    if capability is Capability.WRITE_OUTSIDE:
        return _write(posture, target, context) or table
    if capability in (Capability.LOOPBACK, Capability.SERVER) and found.contained:
        own = capability is Capability.SERVER or context.serves
        if own and posture is not PostureId.QUICKJS:
            return False, "its own server, on its own loopback"
        if posture in CONTAINER_POSTURES:
            return True, "a container's loopback is its own: the host's services are out of reach"
    if capability is Capability.PRIVILEGE and posture is PostureId.HARDENED and context.as_root:
        return True, "runs as a throwaway uid, not root"
    limited = capability in (Capability.PROCESSES, Capability.MEMORY)
    if limited and found.contained and posture is not PostureId.QUICKJS:
        return _limited(capability, target, context.limits, found.why)
    return table


def _read(posture: PostureId, path: str, context: Context) -> Effect | None:
    """A read of `path`, where the file decides more than the posture's claim does."""
    if posture is PostureId.QUICKJS:
        return None
    if _inside(path, context.skill_dir):
        return False, "the skill folder is readable"
    mine = Path.home() / path[2:] if path.startswith("~/") else Path(path)
    if not os.path.lexists(mine):
        return False, "this computer has no such file either: not the posture's doing"
    if posture in CONTAINER_POSTURES and path.startswith(_SYSTEM):
        return False, "the image has its own"
    if posture is PostureId.HARDENED and path.startswith("~"):
        return True, "HOME is private and empty"
    private = not _others_may(str(mine), stat.S_IROTH)
    aspect = Aspect.PRIVATE_FILES if private else Aspect.HOST_FILES
    found = claim(posture, aspect, as_root=context.as_root)
    return found.contained, found.why


def _write(posture: PostureId, path: str, context: Context) -> Effect | None:
    """A write to `path`: the skill folder's claim there, and a folder others may write open
    to hardened's throwaway uid."""
    if _inside(path, context.skill_dir):
        found = claim(posture, Aspect.SKILL_FOLDER, as_root=context.as_root)
        return found.contained, found.why
    if posture is PostureId.HARDENED and path.startswith("~"):
        return False, "it writes its private HOME, not yours"
    folder = next((p for p in (Path(path), *Path(path).parents) if p.is_dir()), Path("/"))
    if posture is PostureId.HARDENED and _others_may(str(folder), stat.S_IWOTH):
        return False, "other users may write there"
    return None


def _limited(capability: Capability, amount: str, limits: Limits, why: str) -> Effect:
    """Processes or memory a run takes: stopped by the limit only when over it."""
    processes = capability is Capability.PROCESSES
    limit = limits.pids if processes else limits.memory_bytes
    if amount.isdigit() and int(amount) + (2 if processes else 0) < limit:
        return False, f"{why}, {limit:,}, is more than it takes"
    return True, why if amount.isdigit() else f"{why} may stop it"


def _module(posture: PostureId, module: str, context: Context) -> Effect | None:
    if posture is PostureId.QUICKJS:
        return None  # QuickJS runs no Python at all
    if posture in CONTAINER_POSTURES:
        present = context.image_modules.get(module, True)
        return (False, "in the image") if present else (True, "the sandbox image lacks it")
    present = context.host_modules.get(module, True)
    return (False, "installed here") if present else (True, "this computer's python3 lacks it")


def _inside(path: str, folder: Path) -> bool:
    return path == str(folder) or path.startswith(str(folder).rstrip("/") + "/")


def _others_may(path: str, bit: int) -> bool:
    """Whether users other than the owner may read (or write: `bit`) `path`, every folder on
    the way searchable by them; a path that does not exist counts as allowed (the posture is
    not what would stop it)."""
    if not os.path.lexists(path):
        return True
    try:
        if any(not folder.stat().st_mode & stat.S_IXOTH for folder in Path(path).parents):
            return False
        return bool(Path(path).stat().st_mode & bit)
    except OSError:
        return True
