"""The seccomp filter every bubblewrap command runs under, built as classic BPF for bwrap.

Namespaces leave some kernel interfaces open; the filter closes them with an error the command
can read (never a kill, so a program can fall back): new namespaces (`clone` with a CLONE_NEW*
flag, `unshare`, `setns`; `clone3`, whose flags a filter cannot read, answers ENOSYS so glibc
falls back to `clone`), `ptrace` and cross-process memory access, the keyrings,
`perf_event_open`, `bpf`, `userfaultfd`, io_uring (which would run socket and file operations
the filter never sees) and `socket(AF_UNIX, ...)`: nothing inside needs a new unix socket (the
allow-list proxy's listener is handed out by descriptor, see `proxy.py`) and one could reach a
socket file bound in by mistake; `socketpair` still works. `fallocate` answers EOPNOTSUPP, so
space is only taken by writing, which the disk limit counts (glibc's posix_fallocate then
writes instead), and `prctl(PR_SET_DUMPABLE)` EPERM, so no process can hide its
`/proc/PID/io`, where that limit reads what it wrote, from a workbench that is not root. A
system call of another architecture (an i386 or x32 call on x86_64) kills the process.
`program()` returns the filter for this machine, or None where the architecture is not one it
knows; bwrap reads it from a descriptor (`--seccomp FD`).
"""

import errno
import os
import struct

# BPF opcodes: load a word of seccomp_data, the jumps, return.
_LD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL_PROCESS, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (little-endian: arg 0's low word)
_X32_BIT = 0x40000000
CLONE_NEW_FLAGS = 0x7E020080  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
AF_UNIX = 1
PR_SET_DUMPABLE = 4

# fmt: off
# The calls the filter looks at, and their numbers on each architecture it knows.
CALLS = (
    "clone", "clone3", "unshare", "setns", "ptrace", "process_vm_readv", "process_vm_writev",
    "keyctl", "add_key", "request_key", "perf_event_open", "bpf", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "socket", "fallocate", "prctl",
)
ARCHES: dict[str, tuple[int, tuple[int, ...]]] = {  # AUDIT_ARCH value, the numbers of CALLS
    "x86_64": (0xC000003E, (
        56, 435, 272, 308, 101, 310, 311, 250, 248, 249, 298, 321, 323, 425, 426, 427, 41, 285,
        157,
    )),
    "aarch64": (0xC00000B7, (
        220, 435, 97, 268, 117, 270, 271, 219, 217, 218, 241, 280, 282, 425, 426, 427, 198, 47,
        167,
    )),
}
REFUSED = {  # call -> the errno it answers (clone, socket and prctl depend on an argument)
    "clone3": errno.ENOSYS,
    "fallocate": errno.EOPNOTSUPP,
    **dict.fromkeys((
        "unshare", "setns", "ptrace", "process_vm_readv", "process_vm_writev", "keyctl",
        "add_key", "request_key", "perf_event_open", "bpf", "userfaultfd", "io_uring_setup",
        "io_uring_enter", "io_uring_register",
    ), errno.EPERM),
}
# fmt: on


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _when_arg0(nr: int, test: int, value: int) -> list[bytes]:
    """EPERM when call `nr`'s first argument matches `value` (`test` is JEQ or JSET)."""
    return [
        _op(_JEQ, nr, 0, 4),
        _op(_LD, _ARG0),
        _op(test, value, 0, 1),
        _op(_RET, _ERRNO | errno.EPERM),
        _op(_RET, _ALLOW),
    ]


def program(machine: str | None = None) -> bytes | None:
    """The filter as an array of `struct sock_filter`, or None for an unknown architecture."""
    machine = machine or os.uname().machine
    if machine not in ARCHES:
        return None
    arch, values = ARCHES[machine]
    numbers = dict(zip(CALLS, values, strict=True))
    ops = [_op(_LD, _ARCH), _op(_JEQ, arch, 1, 0), _op(_RET, _KILL_PROCESS), _op(_LD, _NR)]
    if machine == "x86_64":
        ops += [_op(_JGE, _X32_BIT, 0, 1), _op(_RET, _KILL_PROCESS)]
    for name, error in REFUSED.items():
        ops += [_op(_JEQ, numbers[name], 0, 1), _op(_RET, _ERRNO | error)]
    ops += _when_arg0(numbers["clone"], _JSET, CLONE_NEW_FLAGS)  # a filter reads clone's flags
    ops += _when_arg0(numbers["socket"], _JEQ, AF_UNIX)
    ops += _when_arg0(numbers["prctl"], _JEQ, PR_SET_DUMPABLE)
    ops.append(_op(_RET, _ALLOW))
    return b"".join(ops)
