"""What a finding of the capability preview meets under each posture, at its default settings.

`effect(posture, finding, context)` says whether `posture` blocks what `finding` does, and why
in a few words: the control ("network none") or the opening ("the network is open"); None for
a finding no posture acts on. Most capabilities meet the same answer whatever they name
(`_EFFECTS`). Some depend on what they name (`Context` holds what that takes): a file in the
skill folder is readable wherever the skill is mounted; one other users may read is readable
by hardened's throwaway uid (when the workbench runs as root); a file this computer does not
have fails everywhere, and a system file is the image's own in a container; a file in the home
folder is out of reach of hardened's private HOME; processes or memory a run takes meet the
limit only when they exceed it (when the amount is known); root's privileges are gone under
hardened run by root (a throwaway uid); an environment variable hardened keeps (`PATH`, `LANG`,
...) is seen; a loopback connection reaches a server the command starts itself, even in a
container (a container's loopback is its own: the host's services are out of its reach); a
third-party module is in the image or on this computer, or not.
"""

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from workbench.postures.model import DEFAULT_ENV_ALLOW, DEFAULT_LIMITS, Limits, PostureId
from workbench.skills.scripts import Capability, Finding

_L, _H, _D, _G, _Q = (PostureId.LOCAL, PostureId.HARDENED, PostureId.DOCKER, PostureId.GVISOR,
                      PostureId.QUICKJS)  # fmt: skip
_CONTAINERS = (_D, _G)
# What a container has of its own (the image's): reading there reads no file of this computer.
_SYSTEM = ("/etc/", "/usr/", "/lib", "/bin/", "/sbin/", "/proc/", "/sys/", "/dev/")
_NOT_MOUNTED = "only the skill and the workspace are mounted"
_CONFINED = "the fs object is confined to the workspace"
_NO_PROCESSES = "no processes in QuickJS"

# What each capability meets under each posture (default settings): (blocked?, why).
_EFFECTS: dict[Capability, dict[PostureId, tuple[bool, str]]] = {
    Capability.NETWORK: {
        _L: (False, "the network is open"),
        _H: (False, "the network is open"),
        _D: (True, "network none"),
        _G: (True, "network none"),
        _Q: (True, "fetch is off by default"),
    },
    Capability.SUBPROCESS: {
        _L: (False, "runs host programs"),
        _H: (False, "runs host programs, within the process limit"),
        _D: (False, "runs the image's programs"),
        _G: (False, "runs the image's programs"),
        _Q: (True, _NO_PROCESSES),
    },
    Capability.DESTRUCTIVE: {
        _L: (False, "can delete anything you can"),
        _H: (False, "can delete anything you can"),
        _D: (True, "read-only root; only the workspace is writable"),
        _G: (True, "read-only root; only the workspace is writable"),
        _Q: (True, _CONFINED),
    },
    Capability.NATIVE_CODE: {
        _L: (False, "loads native code on the host"),
        _H: (False, "loads native code on the host"),
        _D: (False, "loads native code in the container"),
        _G: (False, "loads native code in the container"),
        _Q: (True, "no native code in QuickJS"),
    },
    Capability.NODE_API: {
        _L: (False, "runs under Node"),
        _H: (False, "runs under Node"),
        _D: (False, "runs under the image's Node"),
        _G: (False, "runs under the image's Node"),
        _Q: (True, "QuickJS has no Node APIs"),
    },
    Capability.DAEMON: {
        _L: (True, "whole-tree kill when the run ends"),
        _H: (True, "whole-tree kill when the run ends"),
        _D: (True, "the run's processes are killed in the container"),
        _G: (True, "the run's processes are killed in the container"),
        _Q: (True, "no process API"),
    },
    Capability.CPU: {
        _L: (True, "the wall-clock timeout"),
        _H: (True, "the CPU-time limit or the timeout"),
        _D: (True, "the wall-clock timeout"),
        _G: (True, "the wall-clock timeout"),
        _Q: (True, "the CPU-time limit of the worker"),
    },
}


@dataclass(frozen=True, slots=True)
class Context:
    """What effects that depend on the finding's target need to know."""

    skill_dir: Path
    as_root: bool  # the workbench runs as root: hardened runs a throwaway uid
    limits: Limits = DEFAULT_LIMITS  # the limits the run has
    serves: bool = False  # the command starts a server of its own
    image_modules: dict[str, bool] = field(default_factory=dict)
    host_modules: dict[str, bool] = field(default_factory=dict)


def effect(posture: PostureId, finding: Finding, context: Context) -> tuple[bool, str] | None:
    """Whether `posture` blocks what `finding` does, and why (see the module doc)."""
    capability = finding.capability
    if capability in _EFFECTS:
        return _EFFECTS[capability][posture]
    target = finding.target or ""
    if capability is Capability.HOST_FILES:
        return _read(posture, target, context)
    if capability is Capability.WRITE_OUTSIDE:
        return _write(posture, target, context)
    if capability is Capability.ENVIRONMENT:
        return _environment(posture, target)
    if capability in (Capability.LOOPBACK, Capability.SERVER):
        return _loopback(posture, capability, context)
    if capability is Capability.MODULE:
        return _module(posture, target, context)
    if capability is Capability.PRIVILEGE:
        return _privilege(posture, context)
    if capability is Capability.INPUT:
        return True, "a run's stdin is empty: no answer comes"
    if capability in (Capability.PROCESSES, Capability.MEMORY):
        return _limited(posture, capability, target, context.limits)
    return None


def _read(posture: PostureId, path: str, context: Context) -> tuple[bool, str]:
    if posture is _Q:
        return True, _CONFINED
    if _inside(path, context.skill_dir):
        return False, "the skill folder is readable"
    mine = Path.home() / path[2:] if path.startswith("~/") else Path(path)
    if not os.path.lexists(mine):
        return False, "this computer has no such file either: not the posture's doing"
    if posture in _CONTAINERS and path.startswith(_SYSTEM):
        return False, "the image has its own"
    if posture in _CONTAINERS:
        return True, _NOT_MOUNTED
    if path.startswith("~"):
        if posture is _H:
            return True, "HOME is private and empty"
        return False, "reads your home folder"
    if posture is _H and context.as_root and not _others_may(path, stat.S_IROTH):
        return True, "the throwaway uid cannot read it (others may not)"
    if posture is _H and context.as_root:
        return False, "other users may read it"
    return False, "reads your files"


def _write(posture: PostureId, path: str, context: Context) -> tuple[bool, str]:
    if posture is _Q:
        return True, _CONFINED
    if posture in _CONTAINERS:
        if _inside(path, context.skill_dir):
            return True, "the skill folder is mounted read-only"
        return True, "read-only root; only /workspace and /tmp are writable"
    if posture is _H and path.startswith("~"):
        return False, "writes its private HOME, not yours"
    folder = next((p for p in (Path(path), *Path(path).parents) if p.is_dir()), Path("/"))
    if posture is _H and context.as_root and not _others_may(str(folder), stat.S_IWOTH):
        return True, "the throwaway uid cannot write there"
    return False, "writes where you can"


def _environment(posture: PostureId, name: str) -> tuple[bool, str]:
    if posture is _L:
        return False, "sees your whole environment, secrets included"
    if posture is _H:
        if name in DEFAULT_ENV_ALLOW:
            return False, "an allow-listed variable"
        return True, "environment built from an allow-list; credential names removed"
    if posture is _Q:
        return True, "no environment in QuickJS"
    return True, "the container gets none of your environment"


def _loopback(posture: PostureId, capability: Capability, context: Context) -> tuple[bool, str]:
    if posture is _Q:
        return True, "no network API (fetch is off)"
    if capability is Capability.SERVER or context.serves:
        return False, "its own server, on its own loopback"
    if posture in _CONTAINERS:
        return True, "a container's loopback is its own: the host's services are out of reach"
    return False, "reaches this computer's loopback"


def _privilege(posture: PostureId, context: Context) -> tuple[bool, str]:
    if posture is _Q:
        return True, _NO_PROCESSES
    if posture in _CONTAINERS:
        return True, "non-root with no-new-privileges, every capability dropped"
    if posture is _H and context.as_root:
        return True, "runs as a throwaway uid, not root"
    return False, "as privileged as you are"


def _limited(
    posture: PostureId, capability: Capability, amount: str, limits: Limits
) -> tuple[bool, str]:
    """Processes or memory a run takes: over the posture's limit, when the amount is known."""
    processes = capability is Capability.PROCESSES
    if posture is _Q:
        return True, "no process API" if processes else "QuickJS's memory limit"
    if posture is _L:
        return False, "no process limit" if processes else "no memory limit"
    limit = limits.pids if processes else limits.memory_bytes
    what = f"the process limit of {limit}" if processes else f"the memory limit of {limit:,} bytes"
    if amount.isdigit() and int(amount) + (2 if processes else 0) < limit:
        return False, f"within {what}"
    return True, what if amount.isdigit() else f"{what} may stop it"


def _module(posture: PostureId, module: str, context: Context) -> tuple[bool, str] | None:
    if posture is _Q:
        return None  # QuickJS runs no Python at all
    if posture in _CONTAINERS:
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
