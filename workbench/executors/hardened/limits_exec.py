"""The hardened posture's exec wrapper: it applies limits and identity, then execs the command.

`wrapper_launch()` starts `limits_exec.pl` (a perl helper, see `workbench.platform.perl`) with the
rlimits (hard = soft as asked), the run's uid when there is one, the status pipe and the names of
the variables to pass on; without a uid (an ordinary user's app), whether to make a user namespace
of the run's own first, where RLIMIT_NPROC counts the run's processes only
(`own_user_namespace_problem()` says why not). The wrapper enters that namespace (its uid and gid
mapped to themselves; `userns` says `own`, with its /proc/self/ns/user as `userns_id`, or why the
kernel refused it), sets the limits, drops to the uid (no supplementary groups) and sets
no_new_privs, reports what it applied (`/proc/self/limits` and `status`) or an `error` as
NUL-separated pairs on the close-on-exec status pipe, keeps only the named variables, finds the
command on their PATH as the new uid sees it and execs it (127 and `command not found` when there is
none, 126 for any other failure). EOF without an error means the command was exec'd. `prctl` is the
app's own way to the call.
"""

import ctypes
import os
import re
import resource
import subprocess
from collections.abc import Iterable
from pathlib import Path

from workbench.platform.perl import helper_launch, syscall_numbers

PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
NPROC_PER_NAMESPACE = (5, 14)  # the kernel whose ucounts count RLIMIT_NPROC per user namespace
CHECK_TIMEOUT_S = 10.0
WRAPPER = (Path(__file__).with_name("limits_exec.pl")).read_text(encoding="utf-8")


def prctl(option: int, value: int = 0) -> int:
    """Call prctl(2) with one argument and return its result; raises OSError on failure."""
    libc = ctypes.CDLL(None, use_errno=True)
    result: int = libc.prctl(option, value, 0, 0, 0)
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return result


def wrapper_launch(
    rlimits: dict[str, tuple[int, int]],
    uid: int | None,
    status_fd: int,
    env_names: Iterable[str],
    env: dict[str, str],
    own_userns: bool = False,
) -> tuple[list[str], dict[str, str]]:
    """The wrapper's argv up to and including the "--" before the command, and the
    environment to start it with (`env`, the command's, held: see `helper_launch`). With
    `own_userns`, the wrapper sets the limits in a user namespace of the run's own (see the
    module doc)."""
    numbers = syscall_numbers(
        "prlimit64",
        "setgroups",
        "setresgid",
        "setresuid",
        "prctl",
        "faccessat",
        "execve",
        "unshare",
    )
    args = [str(status_fd), *numbers]
    args += [
        f"rlimit={name}:{getattr(resource, f'RLIMIT_{name}')}:{soft}:{hard}"
        for name, (soft, hard) in rlimits.items()
    ]
    if uid is not None:
        args.append(f"uid={uid}")
    if own_userns:
        args.append("userns=own")
    args += [f"env={name}" for name in env_names]
    return helper_launch(WRAPPER, [*args, "--"], env)


def own_user_namespace_problem() -> str:
    """Why a run cannot get a user namespace of its own where RLIMIT_NPROC counts its processes
    only ("" when it can): before 5.14 the kernel counts them over all the user's; a kernel may
    refuse the namespace, or (Ubuntu's AppArmor) allow it and refuse the mapping. Tried for
    real: the wrapper execs `true` in one."""
    release = os.uname().release
    version = re.match(r"(\d+)\.(\d+)", release)
    if version is None or (int(version[1]), int(version[2])) < NPROC_PER_NAMESPACE:
        return f"Linux {release} counts RLIMIT_NPROC over all your processes before 5.14"
    read_fd, write_fd = os.pipe()
    argv, env = wrapper_launch({}, None, write_fd, ["PATH"], {"PATH": os.defpath}, True)
    try:
        subprocess.run(
            [*argv, "true"],
            env=env,
            pass_fds=(write_fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=CHECK_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"the check could not run: {error}"
    finally:
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as status:
            report = decode_report(status.read())
    if report.get("userns") == "own":
        return ""
    return report.get("error") or report.get("userns") or "the check reported nothing"


def app_user_namespace() -> str:
    """The app's own user namespace, as /proc/self/ns/user names it."""
    return str(Path("/proc/self/ns/user").readlink())


def decode_report(data: bytes) -> dict[str, str]:
    """The key/value pairs a helper wrote to its status pipe."""
    fields = data.split(b"\0")
    return {
        fields[i].decode(): fields[i + 1].decode("utf-8", errors="replace")
        for i in range(0, len(fields) - 1, 2)
    }
