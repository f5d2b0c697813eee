"""The loader that is every bubblewrap sandbox's PID 1: limits, Landlock, then the command.

bwrap itself cannot set rlimits or Landlock, and Landlock cannot be applied from outside (a
process restricts itself, and a Landlock-restricted bwrap could not mount), so bwrap runs
`perl -e LOADER` (`loader.pl`, core perl without a single module, so it starts in a fraction
of Python's time; see docs/notes.md) as the sandbox's PID 1 (`--as-pid-1`), under the seccomp
filter. It sets each rlimit with hard = soft (RLIMIT_NPROC, set inside the new user namespace,
then counts the sandbox's processes only, not all of the user's); with `listen`, opens the
allow-list proxy's listener on 127.0.0.1:PORT of the sandbox's own network namespace and hands
it to the workbench over a socket pair (SCM_RIGHTS), so nothing inside needs a unix socket or
a forwarding process (see `proxy.py`); where the kernel has Landlock, restricts the sandbox to
read and execute beneath the `ro` paths and everything beneath the `rw` ones (and, from ABI 6,
to its own abstract sockets and signals), a second wall should a mount let through more than
it should; and writes what it applied (`/proc/self/limits`, `status`, `mountinfo`, `net/dev`,
its namespaces, the Landlock ABI, 0 for none) to the status pipe, which the command does not
inherit. Then it forks and execs the command (PATH lookup; a failure writes an `error` and
exits 127 when the command is not found, else 126), reaps whatever re-parents to it, and when
the command ends, counts the processes it left behind in the namespace, kills them all
(`kill(-1)` from PID 1 reaches every one) and writes `end` (`code:N` or `signal:N`, which
bwrap's own exit code cannot tell apart) and `left` (how many it killed). The pipe reaches EOF
when the sandbox is gone (`limits_exec.decode_report` reads it). `/usr/bin/perl` must exist
(`perl-base` is essential on Debian and Ubuntu); availability says so where it does not.
"""

import os
from pathlib import Path

PERL = Path("/usr/bin/perl")
LOADER = (Path(__file__).with_name("loader.pl")).read_text(encoding="utf-8")
PROXY_PORT = 3128  # the proxy's port on the sandbox's own loopback
# prlimit64 and sendmsg by architecture (Landlock's calls are numbered alike everywhere).
SYSCALLS = {"x86_64": (302, 46), "aarch64": (261, 211)}
# rlimit name (as in `resource.RLIMIT_<name>`) -> its number on Linux
RLIMIT_NUMBERS = {"CPU": 0, "FSIZE": 1, "CORE": 4, "NPROC": 6, "NOFILE": 7, "AS": 9}


def loader_argv(
    status_fd: int,
    rlimits: dict[str, int],
    rules: list[tuple[str, str]],
    listen_fd: int | None,
) -> list[str]:
    """`perl -e LOADER ...` up to and including the `--` before the command.

    `rlimits` maps a name of `RLIMIT_NUMBERS` to its value (hard = soft); `rules` are Landlock's
    ("ro" or "rw", path) pairs; `listen_fd` is the socket-pair end that receives the proxy's
    listener (None: no proxy).
    """
    prlimit, sendmsg = SYSCALLS[os.uname().machine]
    args = [str(PERL), "-e", LOADER, str(status_fd), str(prlimit), str(sendmsg)]
    args += [f"rlimit={RLIMIT_NUMBERS[name]}:{v}:{v}" for name, v in rlimits.items()]
    args += [f"{kind}={path}" for kind, path in rules]
    if listen_fd is not None:
        args.append(f"listen={PROXY_PORT}:{listen_fd}")
    return [*args, "--"]
