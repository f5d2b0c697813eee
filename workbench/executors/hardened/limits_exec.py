"""The exec wrapper of the hardened posture: apply limits and identity, then exec the command.

Run as `python -I -S limits_exec.py SPEC... -- ARGV...` by file path, stdlib only, so the
`workbench` package stays off the spawn path; `spec_args()` writes SPEC (`NAME=SOFT:HARD` per
rlimit, `uid=N`, `fd=N` for the status pipe, `env=NAME` per variable to pass on). The wrapper
reports what it applied, or an `error`, as NUL-separated pairs on the close-on-exec status pipe; EOF
without an error means the command was exec'd.
"""

# Stdlib only, and no json: importing it alone costs ~20 ms of every hardened start-up.
import ctypes
import os
import resource
import sys
from collections.abc import Iterable

PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38


def prctl(option: int, value: int = 0) -> int:
    """Call prctl(2) with one argument and return its result; raises OSError on failure."""
    libc = ctypes.CDLL(None, use_errno=True)
    result: int = libc.prctl(option, value, 0, 0, 0)
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return result


def spec_args(
    rlimits: dict[str, tuple[int, int]], uid: int | None, status_fd: int, env_names: Iterable[str]
) -> list[str]:
    """The wrapper's arguments up to and including the "--" before the command."""
    args = [f"{name}={soft}:{hard}" for name, (soft, hard) in rlimits.items()]
    if uid is not None:
        args.append(f"uid={uid}")
    args.append(f"fd={status_fd}")
    args.extend(f"env={name}" for name in env_names)
    return [*args, "--"]


def decode_report(data: bytes) -> dict[str, str]:
    """The key/value pairs the wrapper wrote to its status pipe."""
    fields = data.split(b"\0")
    return {
        fields[i].decode(): fields[i + 1].decode("utf-8", errors="replace")
        for i in range(0, len(fields) - 1, 2)
    }


def _report(fd: int, **fields: str) -> None:
    os.write(
        fd, b"".join(key.encode() + b"\0" + value.encode() + b"\0" for key, value in fields.items())
    )


def _proc_text(name: str) -> str:
    with open(f"/proc/self/{name}", encoding="utf-8") as f:  # noqa: PTH123 - no pathlib here
        return f.read()


def _resolve(name: str, path: str) -> str | None:
    """The executable `name` on `path` as this (already switched) uid sees it."""
    if "/" in name:
        return name
    for folder in path.split(os.pathsep):
        candidate = os.path.join(folder or ".", name)  # noqa: PTH118 - no pathlib here
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):  # noqa: PTH113
            return candidate
    return None


def _set_rlimit(name: str, soft: int, hard: int) -> None:
    """Set RLIMIT_`name`; raises OSError naming it when the kernel refuses (not root: above the
    hard limit; even root: open files above fs.nr_open)."""
    try:
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (soft, hard))
    except ValueError as error:  # what setrlimit raises for EPERM and EINVAL
        raise OSError(f"RLIMIT_{name} {soft}:{hard}: {error}") from None


def main(args: list[str]) -> int:
    """Apply the SPEC and exec ARGV; returns only on failure (127 not found, 126 otherwise)."""
    split = args.index("--")
    argv = args[split + 1 :]
    rlimits: list[tuple[str, int, int]] = []
    uid: int | None = None
    status_fd = -1
    names: set[str] = set()
    for arg in args[:split]:
        key, _, value = arg.partition("=")
        if key == "uid":
            uid = int(value)
        elif key == "fd":
            status_fd = int(value)
        elif key == "env":
            names.add(value)
        else:
            soft, _, hard = value.partition(":")
            rlimits.append((key, int(soft), int(hard)))
    os.set_inheritable(status_fd, False)
    try:
        for name, soft_limit, hard_limit in rlimits:
            _set_rlimit(name, soft_limit, hard_limit)
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        _report(status_fd, limits=_proc_text("limits"), status=_proc_text("status"))
    except OSError as error:
        _report(status_fd, error=f"could not apply the hardened limits: {error}")
        return 126
    env = {name: value for name, value in os.environ.items() if name in names}
    program = _resolve(argv[0], env.get("PATH", os.defpath))
    if program is None:
        _report(status_fd, error=f"command not found: {argv[0]}")
        return 127
    try:
        os.execve(program, argv, env)
    except FileNotFoundError:
        _report(status_fd, error=f"command not found: {argv[0]}")
        return 127
    except OSError as error:
        _report(status_fd, error=f"cannot run {argv[0]}: {error.strerror or error}")
        return 126


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
