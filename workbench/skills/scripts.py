"""What the static scanners report, the JavaScript scanner, and what the sandbox image holds.

A scanner (`shellscan.scan_shell`, `pyscan.scan_python`, `scan_javascript` here) returns
`Finding`s of what the capability preview (`workbench.authoring.preview`) predicts postures
will block: the network (the host's loopback and servers apart), subprocesses and the programs
run, environment reads, files outside the workspace read or written, privilege, destructive
deletes, native code, Node-only APIs, third-party modules, detached processes and loops that
spin the CPU, start processes or grow memory. They only read text: nothing here runs, imports or
follows anything from the skill. `scan_javascript` reads line by line, resolving the names a
script gives its `scriptArgs` to the arguments it is run with. `IMAGE_PACKAGES` mirrors the
package list of the sandbox image (`resources/sandbox-image/packages.txt`; a test keeps
them in step); `IMAGE_TOOLS` is every command those packages provide, and the image's
Python has the standard library only (`image_has_module`).
"""

import ast
import os
import re
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePosixPath

_COREUTILS = (
    "basename cat chgrp chmod chown cksum comm cp csplit cut date dd df dirname du echo env "
    "expand expr factor false fmt fold head hostid id install join link ln logname ls md5sum "
    "mkdir mkfifo mknod mktemp mv nice nl nohup nproc numfmt od paste pathchk pr printenv printf "
    "ptx pwd readlink realpath rm rmdir seq sha1sum sha256sum sha512sum shred shuf sleep sort "
    "split stat stdbuf stty sum sync tac tail tee test timeout touch tr true truncate tsort tty "
    "uname unexpand uniq unlink users wc who whoami yes ["
)
IMAGE_PACKAGES: dict[str, tuple[str, ...]] = {
    "(debootstrap minbase)": ("sh", "dash", "tar", "gzip", "gunzip", "zcat", "perl", "which",
                              "hostname", "getopt", "flock", "setsid", "more", "clear", "tput",
                              "su", "mawk"),
    "bash": ("bash",),
    "coreutils": tuple(_COREUTILS.split()),
    "findutils": ("find", "xargs"),
    "grep": ("grep", "egrep", "fgrep"),
    "sed": ("sed",),
    "gawk": ("gawk", "awk"),
    "diffutils": ("diff", "cmp", "diff3", "sdiff"),
    "procps": ("ps", "top", "kill", "pgrep", "pkill", "free", "uptime", "watch", "pmap", "w"),
    "psmisc": ("killall", "pstree", "fuser"),
    "file": ("file",),
    "jq": ("jq",),
    "zip": ("zip",),
    "unzip": ("unzip", "zipinfo"),
    "xz-utils": ("xz", "unxz", "xzcat"),
    "bzip2": ("bzip2", "bunzip2", "bzcat"),
    "python3": ("python3",),
    "python3-pip": ("pip", "pip3"),
    "nodejs": ("node", "nodejs"),
}  # fmt: skip
IMAGE_TOOLS = frozenset(tool for tools in IMAGE_PACKAGES.values() for tool in tools)


class Capability(StrEnum):
    """What a finding says the skill does."""

    NETWORK = "network"
    SUBPROCESS = "subprocess"
    ENVIRONMENT = "environment"
    HOST_FILES = "host-files"
    PRIVILEGE = "privilege"
    DESTRUCTIVE = "destructive"
    NATIVE_CODE = "native-code"
    NODE_API = "node-api"
    WRITE_OUTSIDE = "write-outside"  # writes a file outside the workspace (`target`)
    LOOPBACK = "loopback"  # connects to a loopback address: the host's, or its own server's
    SERVER = "server"  # listens for connections itself
    MODULE = "module"  # imports a third-party module (`target`)
    DAEMON = "daemon"  # leaves a process running after it ends
    PROCESSES = "processes"  # starts processes in a loop (`target`: how many, when known)
    CPU = "cpu"  # spins the CPU until something stops it
    MEMORY = "memory"  # grows its memory in a loop (`target`: to how many bytes, when known)
    INPUT = "input"  # asks for input on stdin
    DISK = "disk"  # writes files in a loop
    LIMITS = "limits"  # raises its own resource limits
    TOOL = "tool"  # runs an external command
    RUNTIME = "runtime"  # the interpreter a script needs (`target`: a script it runs by path)
    DECLARED = "declared"  # what the front matter says


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the static read found: where (file relative to the skill, 1-based line when
    known), which capability, in plain words; `tool` names a command it invokes, `language`
    the script's language for a RUNTIME finding, `target` the path, module or variable it
    names; `optional` marks a program the script first checks for (`command -v X`), so its
    absence changes what the script does rather than failing it."""

    file: str
    line: int | None
    capability: Capability
    detail: str
    tool: str | None = None
    language: str | None = None
    target: str | None = None
    optional: bool = False

    @property
    def summary(self) -> str:
        """`detail in file:line`, as the preview prints it."""
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{self.detail} in {where}"


_NETWORK_WORDS = (
    "curl wget nc ncat netcat ssh scp sftp rsync ftp telnet ping dig nslookup git pip pip3 npm npx"
)
NETWORK_TOOLS = frozenset(_NETWORK_WORDS.split())
PRIVILEGE_TOOLS = frozenset({"sudo", "su", "doas", "pkexec"})
# Variables the workbench or the shell sets, and the environment's allow-listed names: reading
# them reads no secret.
_SAFE_WORDS = (
    "HOME SKILL_DIR WORKSPACE PWD OLDPWD PATH IFS TMPDIR RANDOM LINENO BASH_SOURCE SECONDS UID "
    "EUID USER PPID BASHPID OPTARG OPTIND REPLY HOSTNAME SHLVL FUNCNAME PIPESTATUS BASH_VERSION "
    "LANG LC_ALL LC_CTYPE TERM TZ"
)
SAFE_VARS = frozenset(_SAFE_WORDS.split())
_LOOPBACK = re.compile(r"^(localhost|127(\.\d{1,3}){3}|::1|0\.0\.0\.0|\[::1\])$", re.I)
# Paths a script may use anywhere without reaching the host: its devices and its own process.
_EVERYWHERE = re.compile(r"^/(dev/(null|zero|u?random|std(in|out|err)|fd/|tty)|proc/self/)")
_IMAGE_MISSING_STDLIB = frozenset({"tkinter", "turtle", "turtledemo", "idlelib", "ensurepip"})


def is_loopback(host: str) -> bool:
    """Whether `host` names the loopback interface (`localhost`, `127.0.0.1`, `::1`)."""
    return bool(_LOOPBACK.match(host))


def worth_reporting(path: str) -> bool:
    """Whether `path` leaves the workspace: absolute or in the home folder (`~`), but not a
    device or the process itself, and not a scratch path in `/tmp` unless this computer has
    it (a scratch file is every posture's own; an existing one is the host's)."""
    if not path.startswith(("/", "~")) or _EVERYWHERE.match(path):
        return False
    if path.startswith(("/tmp/", "/var/tmp/")) or path in ("/tmp", "/var/tmp"):
        parent = str(PurePosixPath(path).parent)
        return os.path.lexists(path) or parent not in ("/tmp", "/var/tmp", "/")
    return True


def image_has_module(name: str) -> bool:
    """Whether the sandbox image's Python has the top-level module `name`: the standard
    library, but for what Debian ships apart (tkinter, ensurepip, ...)."""
    return name in sys.stdlib_module_names and name not in _IMAGE_MISSING_STDLIB


_JS_PATTERNS: tuple[tuple[re.Pattern[str], Capability, str], ...] = (
    (re.compile(r"\b(fetch|XMLHttpRequest|WebSocket)\s*\("), Capability.NETWORK, "network call"),
    (re.compile(r"""(?:require\s*\(\s*|from\s+)['"](?:node:)?(https?|net|dgram|tls|dns)['"]"""),
     Capability.NETWORK, "uses Node's network module"),
    (re.compile(r"""(?:require\s*\(\s*|from\s+)['"](?:node:)?child_process['"]"""),
     Capability.SUBPROCESS, "uses child_process"),
    (re.compile(r"""(?:require\s*\(\s*|from\s+)['"](?:node:)?fs(/promises)?['"]"""),
     Capability.NODE_API, "uses Node's fs module"),
    (re.compile(r"\bprocess\.env\b"), Capability.ENVIRONMENT, "reads process.env"),
    (re.compile(r"globalThis\[|[\"'](process|child_process|os|std|Deno|Bun)[\"']"),
     Capability.NODE_API, "looks for a host API by name"),
    (re.compile(r"typeof\s+(fetch)\b"), Capability.NETWORK, "looks for the network API"),
    (re.compile(r"\b(require\s*\(|process\.)"), Capability.NODE_API, "uses a Node API"),
)  # fmt: skip


_JS_ARGS = re.compile(r"\[([\w\s,]+)\]\s*=\s*scriptArgs")
_JS_FS = re.compile(r"\bfs\.(\w+)\(\s*(\w+|`[^`]*`|'[^']*'|\"[^\"]*\")")
_JS_FS_WRITES = {"writeText", "writeFile", "append", "appendText", "mkdir", "remove", "rename"}
_JS_LOOP = re.compile(r"^\s*(while|for)\s*\((.*)\)")
_JS_CLOCK = re.compile(r"Date\.now\(\)|performance\.now\(\)|new Date\(\)")
_JS_WRITE = re.compile(r"\bfs\.(writeText|writeFile|append\w*)\(")
_JS_ALLOCATION = re.compile(r"new (Uint8Array|ArrayBuffer|Array)\(|\.repeat\(")
_JS_URL = re.compile(r"fetch\(\s*[`'\"](?:https?://)?(\[[^\]]+\]|[^/:`'\"]+)")


def scan_javascript(text: str, file: str, args: tuple[str, ...] = ()) -> list[Finding]:
    """Findings of a JavaScript file run with `args` (its `scriptArgs`), line by line."""
    found = [Finding(file, None, Capability.RUNTIME, "a JavaScript file", None, "javascript")]
    names: dict[str, str] = {}
    loop_depth: list[int] = []  # brace depth at which each open loop started
    depth = 0
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("//")[0] if not line.lstrip().startswith("//") else ""
        if match := _JS_ARGS.search(code):
            names |= dict(zip((n.strip() for n in match[1].split(",")), args, strict=False))
        for pattern, capability, detail in _JS_PATTERNS:
            if (match := pattern.search(code)) is not None:
                shown = match.group(1) if capability is Capability.NETWORK else None
                text_detail = f"{detail} ({shown})" if shown else detail
                found.append(Finding(file, number, capability, text_detail))
        if (match := _JS_URL.search(code)) and is_loopback(match[1]):
            found.append(Finding(file, number, Capability.LOOPBACK, "connects to loopback"))
        found += _js_files(code, file, number, names)
        loop = _JS_LOOP.match(code)
        if loop and _JS_CLOCK.search(loop[2]) and code.rstrip().endswith(";"):
            found.append(Finding(file, number, Capability.CPU, "spins the CPU until a deadline"))
        if loop_depth and _JS_ALLOCATION.search(code):
            found.append(Finding(file, number, Capability.MEMORY, "allocates in a loop"))
        if loop_depth and _JS_WRITE.search(code):
            found.append(Finding(file, number, Capability.DISK, "writes files in a loop"))
        if loop and "{" in code:
            loop_depth.append(depth)
        depth += code.count("{") - code.count("}")
        while loop_depth and depth <= loop_depth[-1]:
            loop_depth.pop()
    return found


def _js_files(code: str, file: str, number: int, names: dict[str, str]) -> list[Finding]:
    """The workspace-confined `fs` calls of a line on paths outside the workspace."""
    found = []
    for method, argument in _JS_FS.findall(code):
        if argument[:1] in "`'\"":
            path = re.sub(r"\$\{(\w+)\}", lambda m: names.get(m[1], m[0]), argument[1:-1])
        else:
            path = names.get(argument, "")
        if path.startswith(("/", "~")) or path.startswith("../") or "/../" in path:
            write = method in _JS_FS_WRITES
            capability = Capability.WRITE_OUTSIDE if write else Capability.HOST_FILES
            detail = f"{'writes' if write else 'reads'} {path}"
            found.append(Finding(file, number, capability, detail, target=path))
    return found


@dataclass(frozen=True, slots=True)
class PythonImport:
    """One absolute import of a Python script: the dotted module, its 1-based line, and whether
    it sits in a `try` that catches ImportError (the script runs without it)."""

    module: str
    line: int
    optional: bool


def python_imports(text: str) -> list[PythonImport]:
    """The absolute imports of a Python script, from its syntax tree (relative imports, which
    are the skill's own modules, are left out); [] when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    guarded = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.Try) and any(map(_catches_import_error, block.handlers))
        for statement in block.body
        for node in ast.walk(statement)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        found += [PythonImport(name, node.lineno, id(node) in guarded) for name in modules]
    return found


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    """True for `except:`, `except ImportError` and the like (tuples included)."""
    kinds = handler.type
    names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    wide = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
    return kinds is None or any(isinstance(n, ast.Name) and n.id in wide for n in names)
