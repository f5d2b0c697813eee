"""The exec wrapper of the hardened posture: apply limits and identity, then exec the command.

Run as `python -I -S limits_exec.py SPEC -- ARGV...` (by file path, so the `workbench` package
is not imported on the spawn path). SPEC is JSON: `rlimits` {name: [soft, hard]}, `uid`/`gid`
to drop to (or null), `env_names` (the variables to pass on: this drops anything the
interpreter itself added, such as a coerced LC_CTYPE) and `status_fd`, a close-on-exec pipe.
The wrapper writes one JSON line to it: the limits and status it applied, or an error; the
pipe reaching EOF without an error means the command was exec'd. Stdlib only, never
`preexec_fn`: the app stays free to be threaded.
"""

import ctypes
import json
import os
import resource
import sys

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


def _report(fd: int, message: dict[str, str]) -> None:
    os.write(fd, json.dumps(message).encode() + b"\n")


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


def main(args: list[str]) -> int:
    """Apply SPEC and exec ARGV; returns only on failure (127 not found, 126 otherwise)."""
    spec = json.loads(args[0])
    argv = args[args.index("--") + 1 :]
    status_fd: int = spec["status_fd"]
    os.set_inheritable(status_fd, False)
    try:
        for name, (soft, hard) in spec["rlimits"].items():
            resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (soft, hard))
        if spec["gid"] is not None:
            os.setgroups([])
            os.setresgid(spec["gid"], spec["gid"], spec["gid"])
        if spec["uid"] is not None:
            os.setresuid(spec["uid"], spec["uid"], spec["uid"])
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        _report(status_fd, {"limits": _proc_text("limits"), "status": _proc_text("status")})
    except OSError as error:
        _report(status_fd, {"error": f"could not apply the hardened limits: {error}"})
        return 126
    names = set(spec["env_names"])
    env = {name: value for name, value in os.environ.items() if name in names}
    program = _resolve(argv[0], env.get("PATH", os.defpath))
    if program is None:
        _report(status_fd, {"error": f"command not found: {argv[0]}"})
        return 127
    try:
        os.execve(program, argv, env)
    except FileNotFoundError:
        _report(status_fd, {"error": f"command not found: {argv[0]}"})
        return 127
    except OSError as error:
        _report(status_fd, {"error": f"cannot run {argv[0]}: {error.strerror or error}"})
        return 126


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
