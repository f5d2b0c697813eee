"""Static scanners of a skill's scripts, and the one list of tools the sandbox image holds.

`scan_python` walks the `ast` (imports and calls, resolving `import x as y` aliases);
`scan_shell` and `scan_javascript` read line by line. Each returns `Finding`s for what the
capability preview (`workbench.authoring.preview`) predicts postures will block: network use,
subprocesses, environment reads, host files outside the workspace, privilege, destructive
deletes, native code and Node-only APIs, plus the external commands invoked. They only read
text: nothing here runs, imports or follows anything from the skill. `IMAGE_PACKAGES` mirrors
the package list of the sandbox image (`resources/sandbox-image/packages.txt`; a test keeps
them in step); `IMAGE_TOOLS` is every command those packages provide.
"""

import ast
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePosixPath
from typing import TypeGuard

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
    TOOL = "tool"  # runs an external command
    RUNTIME = "runtime"  # the interpreter a script needs
    DECLARED = "declared"  # what the front matter says


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the static read found: where (file relative to the skill, 1-based line when
    known), which capability, in plain words; `tool` names a command it invokes, `language`
    the script's language for a RUNTIME finding."""

    file: str
    line: int | None
    capability: Capability
    detail: str
    tool: str | None = None
    language: str | None = None

    @property
    def summary(self) -> str:
        """`detail in file:line`, as the preview prints it."""
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{self.detail} in {where}"


_NETWORK_WORDS = (
    "curl wget nc ncat netcat ssh scp sftp rsync ftp telnet ping dig nslookup git pip pip3 npm npx"
)
_NETWORK_TOOLS = frozenset(_NETWORK_WORDS.split())
_PRIVILEGE_TOOLS = {"sudo", "su", "doas", "pkexec"}
_WRAPPERS = {"sudo", "doas", "env", "nohup", "nice", "time", "exec", "command", "xargs", "timeout"}
_KEYWORDS = {"then", "do", "else", "elif", "if", "while", "until", "!", "{"}
_SKIP = {"for", "case", "in", "function", "esac", "fi", "done", "}", "select"}
_BUILTIN_WORDS = (
    "cd echo printf read exit return export local set unset shift source . eval trap wait break "
    "continue declare typeset true false test [ [[ ]] pwd alias type umask getopts let readonly "
    ": ulimit shopt"
)
_BUILTINS = frozenset(_BUILTIN_WORDS.split())
_SAFE_VARS = {"HOME", "SKILL_DIR", "WORKSPACE", "PWD", "OLDPWD", "PATH", "IFS", "TMPDIR",
              "RANDOM", "LINENO", "BASH_SOURCE", "SECONDS", "UID", "USER"}  # fmt: skip
_SEPARATORS = re.compile(r"\|\||&&|\$\(|[;|&`()\n]")
_CASE_PATTERN = re.compile(r"(^|;;|\bin)\s*\(?[\w*.|\"'-]+\)")  # `start)` in a case statement
_WORD = re.compile(r"^[A-Za-z0-9_.+-]+$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_VARIABLE = re.compile(r"\$\{?([A-Za-z_]\w*)")
_HOME = re.compile(r"(~/|\$HOME\b|\$\{HOME\})[^\s\"')]*")
_DELETE_ALL = re.compile(
    r"\brm\s+(-\S+\s+)*-\S*[rR]\S*\s+(-\S+\s+)*"  # rm with -r among its options
    r"[\"']?(/\*?|~/?|\$\{?HOME\}?/?)[\"']?(\s|$)"  # then /, /*, ~ or $HOME
)


def command_tools(line: str) -> list[str]:
    """The command names a shell line invokes, in order (builtins and keywords left out)."""
    tools = []
    for segment in _SEPARATORS.split(_CASE_PATTERN.sub(" ", line)):
        words = [w for w in segment.split() if not _ASSIGNMENT.match(w)]
        if not words or words[0] in _SKIP:
            continue
        while words and words[0] in _KEYWORDS:
            words = words[1:]
        while words:
            word = PurePosixPath(words[0]).name if words[0].startswith("/") else words[0]
            if word in _BUILTINS or not _WORD.match(word) or "$" in words[0]:
                break
            tools.append(word)
            if word not in _WRAPPERS:
                break
            words = [w for w in words[1:] if not w.startswith("-") and not _ASSIGNMENT.match(w)]
            words = words[1:] if word == "timeout" and words else words
    return tools


def scan_shell(text: str, file: str, line_offset: int | None = 0) -> list[Finding]:
    """Findings of a shell script (or, with `line_offset` None, a one-line command)."""
    assigned = set(re.findall(r"^\s*(?:export\s+|local\s+)?([A-Za-z_]\w*)=", text, re.M))
    found = [] if line_offset is None else [_runtime_of_shell(text, file)]
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw)
        where = None if line_offset is None else number + line_offset
        found += [Finding(file, where, *item) for item in _shell_line(line, assigned)]
    return found


def _shell_line(line: str, assigned: set[str]) -> list[tuple[Capability, str, str | None]]:
    """(capability, detail, tool) of each thing one shell line does."""
    found: list[tuple[Capability, str, str | None]] = []
    for tool in command_tools(line):
        if tool in _NETWORK_TOOLS:
            found.append((Capability.NETWORK, f"network command {tool}", tool))
        elif tool in _PRIVILEGE_TOOLS:
            found.append((Capability.PRIVILEGE, f"{tool} asks for more privilege", tool))
        else:
            found.append((Capability.TOOL, f"runs {tool}", tool))
    if _DELETE_ALL.search(line):
        found.append((Capability.DESTRUCTIVE, "recursive delete of / or your home folder", None))
    for match in _HOME.finditer(line):
        found.append((Capability.HOST_FILES, f"reads your home folder ({match.group(0)})", None))
    for name in sorted(set(_VARIABLE.findall(line)) - _SAFE_VARS - assigned):
        if name.isupper():
            found.append((Capability.ENVIRONMENT, f"reads the environment variable {name}", None))
    return found


def _runtime_of_shell(text: str, file: str) -> Finding:
    tool = "bash" if re.match(r"#!\S*(/env\s+)?\S*bash", text) or file.endswith(".bash") else "sh"
    return Finding(file, None, Capability.RUNTIME, f"a shell script for {tool}", tool, "shell")


_MODULES = {
    **dict.fromkeys(("socket", "urllib", "urllib3", "requests", "http", "httpx", "aiohttp",
                     "ftplib", "smtplib", "telnetlib", "paramiko", "websocket", "websockets"),
                    Capability.NETWORK),
    "subprocess": Capability.SUBPROCESS,
    "multiprocessing": Capability.SUBPROCESS,
    "ctypes": Capability.NATIVE_CODE,
    "cffi": Capability.NATIVE_CODE,
}  # fmt: skip
_RUN_CALLS = re.compile(
    r"^(subprocess\.(run|Popen|call|check_call|check_output|getoutput|getstatusoutput)"
    r"|os\.(system|popen|exec\w*|spawn\w*|posix_spawnp?))$"
)
_NETWORK_CALLS = re.compile(
    r"^(requests|httpx|urllib3|aiohttp|http\.client)\.|^urllib\.request\.urlopen$"
    r"|^socket\.(socket|create_connection)$"
)
_OPEN_CALLS = {"open", "io.open", "os.open", "pathlib.Path", "Path"}
_HOME_CALLS = {"os.path.expanduser", "pathlib.Path.home", "Path.home"}


def scan_python(text: str, file: str) -> list[Finding]:
    """Findings of a Python script, from its syntax tree (nothing is imported or run)."""
    runtime = Finding(file, None, Capability.RUNTIME, "a Python script", "python3", "python")
    try:
        tree = ast.parse(text, filename=file)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        detail = f"a Python script the preview could not parse ({type(error).__name__})"
        return [Finding(file, None, Capability.RUNTIME, detail, "python3", "python")]
    scanner = _PythonScanner(file)
    scanner.visit(tree)
    return [runtime, *scanner.found]


class _PythonScanner(ast.NodeVisitor):
    def __init__(self, file: str) -> None:
        self.file = file
        self.aliases: dict[str, str] = {}
        self.found: list[Finding] = []

    def add(
        self, node: ast.AST, capability: Capability, detail: str, tool: str | None = None
    ) -> None:
        self.found.append(
            Finding(self.file, getattr(node, "lineno", None), capability, detail, tool)
        )

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.aliases[alias.asname or alias.name.split(".")[0]] = (
                alias.name if alias.asname else alias.name.split(".")[0]
            )
            self._module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        for alias in node.names:
            self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
        self._module(node, module)

    def _module(self, node: ast.AST, module: str) -> None:
        capability = _MODULES.get(module.split(".")[0])
        if capability is not None:
            self.add(node, capability, f"imports {module}")

    def visit_Call(self, node: ast.Call) -> None:
        name = self.dotted(node.func)
        first = node.args[0] if node.args else None
        literal = first.value if isinstance(first, ast.Constant) else None
        if _RUN_CALLS.match(name):
            self.add(node, Capability.SUBPROCESS, f"runs a command ({name})")
            for tool in self._tools(first):
                capability = Capability.NETWORK if tool in _NETWORK_TOOLS else Capability.TOOL
                self.add(node, capability, f"runs {tool}", tool)
        elif _NETWORK_CALLS.search(name):
            self.add(node, Capability.NETWORK, f"network call ({name})")
        elif name in ("os.getenv", "os.environ.get") and _is_outside_variable(literal):
            self.add(node, Capability.ENVIRONMENT, f"reads the environment variable {literal}")
        elif name in _OPEN_CALLS and isinstance(literal, str) and literal[:1] in ("/", "~"):
            if not literal.startswith(("/tmp", "/dev/null", "/dev/std")):
                self.add(node, Capability.HOST_FILES, f"opens {literal}")
        elif name in _HOME_CALLS:
            self.add(node, Capability.HOST_FILES, f"reads your home folder ({name})")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = node.slice.value if isinstance(node.slice, ast.Constant) else None
        if self.dotted(node.value) == "os.environ" and _is_outside_variable(key):
            self.add(node, Capability.ENVIRONMENT, f"reads the environment variable {key}")
        self.generic_visit(node)

    def _tools(self, first: ast.expr | None) -> list[str]:
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return command_tools(first.value)
        if isinstance(first, ast.List | ast.Tuple) and first.elts:
            head = first.elts[0]
            if isinstance(head, ast.Constant) and isinstance(head.value, str):
                return [PurePosixPath(head.value).name]
        return []

    def dotted(self, node: ast.expr) -> str:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            return f"{self.dotted(node.value)}.{node.attr}"
        return ""


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


def _is_outside_variable(name: object) -> TypeGuard[str]:
    """True for an environment variable name the workbench does not set itself."""
    return isinstance(name, str) and name not in _SAFE_VARS


_JS_PATTERNS: tuple[tuple[re.Pattern[str], Capability, str], ...] = (
    (re.compile(r"\b(fetch|XMLHttpRequest|WebSocket)\s*\("), Capability.NETWORK, "network call"),
    (re.compile(r"""(?:require\s*\(\s*|from\s+)['"](?:node:)?(https?|net|dgram|tls|dns)['"]"""),
     Capability.NETWORK, "uses Node's network module"),
    (re.compile(r"""(?:require\s*\(\s*|from\s+)['"](?:node:)?child_process['"]"""),
     Capability.SUBPROCESS, "uses child_process"),
    (re.compile(r"""(?:require\s*\(\s*|from\s+)['"](?:node:)?fs(/promises)?['"]"""),
     Capability.NODE_API, "uses Node's fs module"),
    (re.compile(r"\bprocess\.env\b"), Capability.ENVIRONMENT, "reads process.env"),
    (re.compile(r"\b(require\s*\(|process\.)"), Capability.NODE_API, "uses a Node API"),
)  # fmt: skip


def scan_javascript(text: str, file: str) -> list[Finding]:
    """Findings of a JavaScript file, line by line."""
    found = [Finding(file, None, Capability.RUNTIME, "a JavaScript file", None, "javascript")]
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("//")[0] if not line.lstrip().startswith("//") else ""
        for pattern, capability, detail in _JS_PATTERNS:
            if (match := pattern.search(code)) is not None:
                shown = match.group(1) if capability is Capability.NETWORK else None
                text_detail = f"{detail} ({shown})" if shown else detail
                found.append(Finding(file, number, capability, text_detail))
    return found
