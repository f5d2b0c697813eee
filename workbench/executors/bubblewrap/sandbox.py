"""The bwrap command line of one bubblewrap run: namespaces, the filesystem view, the filter.

`bwrap_args()` builds it from a `SandboxSpec`. Every namespace bwrap knows is new (user,
mount, PID, IPC, network, UTS, cgroup); nested user namespaces are disabled; the sandbox gets
a new session and dies with the workbench; its PID 1 is the loader (`--as-pid-1`), not bwrap's
own init. Its filesystem is a read-only tmpfs root holding:
the system's `/usr` and the top-level links or folders that lead into it (`/bin`, `/lib`,
...), a few entries of `/etc` that programs need to run (`ETC_ENTRIES`, where they exist), the
skill folder and any extra folders read-only, the workspace read-write, each at its own path
(so `SKILL_DIR` and `WORKSPACE` are the same inside), its own `/proc`, a minimal `/dev` made
read-only, and private tmpfs `/tmp` and `/dev/shm` of a bounded size. `landlock_rules()` lists
the same view for the loader's Landlock wall: read and execute beneath `/`, everything beneath
what is writable.
"""

from dataclasses import dataclass
from pathlib import Path

ETC_ENTRIES = (
    "alternatives",  # Debian's command links (awk, editor, ...)
    "ca-certificates",
    "ca-certificates.conf",
    "ssl",
    "pki",
    "ld.so.cache",
    "localtime",
    "hosts",
    "nsswitch.conf",
)
TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
HOME = Path("/tmp/home")


@dataclass(frozen=True, slots=True)
class SandboxSpec:
    """What one run's sandbox holds: the folders bound in, its tmpfs size, the filter's fd."""

    skill_dir: Path
    workspace: Path
    tmp_bytes: int
    seccomp_fd: int
    read_only: tuple[Path, ...] = ()  # more folders bound read-only (the skill's environment)


def bwrap_args(spec: SandboxSpec, root: Path = Path("/")) -> list[str]:
    """bwrap's options for `spec`, up to the command (see the module docstring); `root` is the
    host's root folder whose top level is mirrored."""
    args = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent"]
    args += ["--new-session", "--as-pid-1", "--ro-bind", str(root / "usr"), "/usr"]
    for name in TOP_LEVEL:
        path = root / name
        if path.is_symlink():
            args += ["--symlink", str(path.readlink()), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    for name in ETC_ENTRIES:
        args += ["--ro-bind-try", str(root / "etc" / name), f"/etc/{name}"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--size", str(spec.tmp_bytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    args += ["--size", str(spec.tmp_bytes), "--tmpfs", "/tmp", "--dir", str(HOME)]
    binds = [(spec.workspace, "--bind"), (spec.skill_dir, "--ro-bind")]
    binds += [(folder, "--ro-bind") for folder in spec.read_only]
    for folder, how in sorted(binds, key=lambda bind: len(bind[0].parts)):  # outer ones first
        args += [how, str(folder), str(folder)]
    args += ["--remount-ro", "/", "--chdir", str(spec.workspace)]
    return [*args, "--seccomp", str(spec.seccomp_fd)]


def landlock_rules(spec: SandboxSpec) -> list[tuple[str, str]]:
    """The loader's Landlock rules: ("ro" or "rw", path)."""
    writable = ("/tmp", "/dev", "/proc", str(spec.workspace))
    return [("ro", "/"), *(("rw", path) for path in writable)]
