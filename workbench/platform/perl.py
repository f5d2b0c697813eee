"""Starting the workbench's perl helpers: the hardened exec wrapper and the bubblewrap loader.

Each is core perl without a single module, run as `perl -e SCRIPT ARGS...`, because perl starts
in a fraction of Python's time and these run before every command of their posture. They call
the kernel by number (`syscall_numbers`, per machine, for a 64-bit perl). A helper starts before
anything of the run is applied (as root, before it drops to the run's uid), so it must not start
with the command's environment: the dynamic loader reads `LD_PRELOAD` and `LD_LIBRARY_PATH`,
perl `PERL5OPT`, `PERL5LIB`, `PERLIO` and `PERL_UNICODE`, and both the locale. `helper_launch`
hands every variable to the helper under another name (`HELD_PREFIX`), and the `PRELUDE` every
helper begins with gives them back for the command. `helper_command` tells a helper's process
apart and names the command it is about to become.
"""

import os
from pathlib import Path

PERL = Path("/usr/bin/perl")
HELD_PREFIX = "WORKBENCH_HELD_"
PRELUDE = (
    "# A perl helper of Skill Workbench (workbench/platform/perl.py).\n"
    f"my @held = grep {{ /^{HELD_PREFIX}/ }} keys %ENV;\n"
    "my %held = map { $_ => delete $ENV{$_} } @held;\n"
    f"$ENV{{substr($_, {len(HELD_PREFIX)})}} = $held{{$_}} for @held;\n"
)
# The system calls the helpers make by number, by machine.
_SYSCALLS = {
    "x86_64": {
        "sendmsg": 46,
        "execve": 59,
        "setgroups": 116,
        "setresuid": 117,
        "setresgid": 119,
        "prctl": 157,
        "faccessat": 269,
        "unshare": 272,
        "prlimit64": 302,
    },
    "aarch64": {
        "faccessat": 48,
        "unshare": 97,
        "setresuid": 147,
        "setresgid": 149,
        "setgroups": 159,
        "prctl": 167,
        "sendmsg": 211,
        "execve": 221,
        "prlimit64": 261,
    },
}


def helper_problem(role: str) -> str:
    """Why the perl helpers cannot run here ("" when they can): this machine's system calls are
    not in the table, or there is no 64-bit perl (a 32-bit one numbers its calls otherwise).
    `role` says what the posture's helper does, for the sentence."""
    machine = os.uname().machine
    if machine not in _SYSCALLS:
        return f"Not supported on {machine} (x86_64, aarch64)."
    try:
        with PERL.open("rb") as perl:
            elf = perl.read(5)
    except OSError:
        return f"No {PERL}: {role}."
    if elf != b"\x7fELF\x02":
        return f"{PERL} is not a 64-bit program: {role}, calling the kernel by number."
    return ""


def syscall_numbers(*names: str) -> list[str]:
    """The numbers of the system calls `names` on this machine, as arguments for a helper."""
    table = _SYSCALLS[os.uname().machine]
    return [str(table[name]) for name in names]


def helper_launch(
    script: str, args: list[str], env: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    """The argv that runs the helper `script` with `args`, and the environment to start it
    with: every variable of `env` held under another name (see the module doc)."""
    held = {HELD_PREFIX + name: value for name, value in env.items()}
    return [str(PERL), "-e", PRELUDE + script, *args], held


def helper_command(argv: list[str]) -> list[str] | None:
    """For a helper's process, the command after its `--` (what it is about to run); None
    for any other process."""
    if argv[:2] != [str(PERL), "-e"] or len(argv) < 3 or not argv[2].startswith(PRELUDE):
        return None
    rest = argv[3:]
    return rest[rest.index("--") + 1 :] if "--" in rest else None
