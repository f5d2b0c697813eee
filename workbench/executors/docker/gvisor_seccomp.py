"""The seccomp filter every gVisor command starts under: no new user namespaces.

`wrapped(argv)` prefixes a command with a short Python loader that installs, inside the sandbox, a
filter refusing `unshare`, `setns` and `clone` with CLONE_NEWUSER (`clone3` answers ENOSYS) and then
execs the command; it fails closed. Without it a command in its own user namespace escapes gVisor's
process limit (why, and what was measured: docs/notes.md, "Docker sessions").
"""

# Runs as `python3 -I -S -c LOADER argv...` (isolated: no PYTHON* variables, no workspace or
# site modules on its path). Exit codes and the "not found" text match runsc's own.
LOADER = r"""
import ctypes, os, struct, sys
NRS = {"x86_64": (0xC000003E, 435, 272, 308, 56), "aarch64": (0xC00000B7, 435, 97, 268, 220)}
if os.uname().machine not in NRS:
    sys.exit("workbench: cannot refuse user namespaces on " + os.uname().machine)
ARCH, CLONE3, UNSHARE, SETNS, CLONE = NRS[os.uname().machine]
LD, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06
ALLOW, EPERM, ENOSYS = 0x7FFF0000, 0x00050001, 0x00050026
def op(code, k, jt=0, jf=0):
    return struct.pack("=HBBI", code, jt, jf, k)
prog = b"".join([
    op(LD, 4), op(JEQ, ARCH, 1, 0), op(RET, EPERM),
    op(LD, 0), op(JEQ, CLONE3, 7), op(JEQ, UNSHARE, 4), op(JEQ, SETNS, 3), op(JEQ, CLONE, 0, 3),
    op(LD, 16), op(JSET, 0x10000000, 0, 1),
    op(RET, EPERM), op(RET, ALLOW), op(RET, ENOSYS),
])
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
code = ctypes.create_string_buffer(prog)
fprog = Fprog(len(prog) // 8, ctypes.addressof(code))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0):
    sys.exit("workbench: cannot install the seccomp filter: " + os.strerror(ctypes.get_errno()))
try:
    os.execvp(sys.argv[1], sys.argv[1:])
except OSError as error:
    missing = isinstance(error, FileNotFoundError)
    why = "executable file not found in $PATH" if missing else error.strerror
    print("exec: %s: %s" % (sys.argv[1], why), file=sys.stderr)
    sys.exit(127 if missing else 126)
"""


LOADER_PROGRAM = "python3"


def wrapped(argv: list[str]) -> list[str]:
    """`argv` started under the filter (the exec's argv under gVisor)."""
    return [LOADER_PROGRAM, "-I", "-S", "-c", LOADER, *argv]
