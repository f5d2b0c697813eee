"""The loader that is every bubblewrap sandbox's PID 1: limits, Landlock, then the command.

bwrap itself cannot set rlimits or Landlock, and Landlock cannot be applied from outside (a process
restricts itself, and a Landlock-restricted bwrap could not mount), so bwrap runs the perl helper
`loader.pl` (see `workbench.platform.perl` and docs/notes.md) as the sandbox's PID 1 (`--as-pid-1`),
under the seccomp filter. It sets each rlimit with hard = soft (RLIMIT_NPROC, set inside the new
user namespace, then counts the sandbox's processes only, not all of the user's); with `listen`,
opens the allow-list proxy's listener on 127.0.0.1:PORT of the sandbox's own network namespace and
hands it to the workbench over a socket pair (SCM_RIGHTS), so nothing inside needs a unix socket or
a forwarding process (see `proxy.py`); where the kernel has Landlock, restricts the sandbox to read
and execute beneath the `ro` paths and everything beneath the `rw` ones (and, from ABI 6, to its own
abstract sockets and signals), a second wall should a mount let through more than it should; and
writes what it applied (`/proc/self/limits`, `status`, `mountinfo`, `net/dev`, its namespaces, the
Landlock ABI, 0 for none) to the status pipe, which the command does not inherit. Then it forks and
execs the command (PATH lookup; a failure writes an `error` and exits 127 when the command is not
found, else 126), reaps whatever re-parents to it, and when the command ends, counts the processes
it left behind in the namespace, kills them all (`kill(-1)` from PID 1 reaches every one) and writes
`end` (`code:N` or `signal:N`, which bwrap's own exit code cannot tell apart) and `left` (how many
it killed). The pipe reaches EOF when the sandbox is gone (`limits_exec.decode_report` reads it).
"""

import resource
from pathlib import Path

from workbench.platform.perl import helper_launch, syscall_numbers

LOADER = (Path(__file__).with_name("loader.pl")).read_text(encoding="utf-8")
PROXY_PORT = 3128  # the proxy's port on the sandbox's own loopback


def loader_launch(
    status_fd: int,
    rlimits: dict[str, int],
    rules: list[tuple[str, str]],
    listen_fd: int | None,
    env: dict[str, str],
) -> tuple[list[str], dict[str, str]]:
    """The loader's argv up to and including the `--` before the command, and the environment
    to start it with (`env`, the command's, held: see `helper_launch`).

    `rlimits` maps a name of `resource.RLIMIT_<name>` to its value (hard = soft); `rules` are
    Landlock's ("ro" or "rw", path) pairs; `listen_fd` is the socket-pair end that receives the
    proxy's listener (None: no proxy).
    """
    args = [str(status_fd), *syscall_numbers("prlimit64", "sendmsg")]
    args += [f"rlimit={getattr(resource, f'RLIMIT_{name}')}:{v}:{v}" for name, v in rlimits.items()]
    args += [f"{kind}={path}" for kind, path in rules]
    if listen_fd is not None:
        args.append(f"listen={PROXY_PORT}:{listen_fd}")
    return helper_launch(LOADER, [*args, "--"], env)
