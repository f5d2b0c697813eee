"""The Python scanner: what a Python script does, read from its syntax tree.

`scan_python(text, file, args=...)` walks the `ast` (nothing is imported or run), resolving
`import x as y` aliases, and reports the modules it imports that are not the standard library
(`Capability.MODULE`, the top-level name as `target`), network calls (to the loopback apart,
and servers it starts), the programs it runs, environment reads, files outside the workspace it
opens, reads from the home folder or writes, processes it detaches or starts in a loop, and
loops that spin the CPU or grow memory. Paths are followed through simple assignments: string
literals, `sys.argv[i]` (from `args`), `Path(...)`, `/` joins, `expanduser`, `Path.home()`. An
import of a network module counts as network use only where no call says where it connects
(a script whose only connections are to the loopback does not reach the network).
"""

import ast
import contextlib
import re
import sys
from pathlib import PurePosixPath
from typing import TypeGuard

from workbench.skills.scripts import (
    NETWORK_TOOLS,
    SAFE_VARS,
    Capability,
    Finding,
    is_loopback,
    worth_reporting,
)
from workbench.skills.shell import parse

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
_SERVERS = re.compile(r"(HTTPServer|TCPServer|UDPServer|serve_forever|\.listen|\.bind)$")
_OPEN_CALLS = {"open", "io.open", "os.open"}
_PATH_TYPES = {"pathlib.Path", "Path", "pathlib.PurePath", "os.fspath", "str"}
_HOME_CALLS = {"os.path.expanduser", "pathlib.Path.home", "Path.home"}
_PATH_WRITES = {"write_text", "write_bytes", "mkdir", "touch", "unlink", "rename", "rmdir",
                "replace", "symlink_to", "chmod"}  # fmt: skip
_PATH_READS = {"read_text", "read_bytes", "open", "iterdir", "stat", "exists", "is_file"}
_OS_WRITES = {
    "os.makedirs",
    "os.mkdir",
    "os.remove",
    "os.unlink",
    "os.rmdir",
    "os.rename",
    "shutil.rmtree",
    "shutil.copy",
    "shutil.copyfile",
    "shutil.copytree",
    "shutil.move",
}
_LIMIT_CALLS = {"resource.setrlimit", "resource.prlimit"}
_PRIVILEGE_CALLS = {"os.chown", "os.lchown", "shutil.chown", "os.setuid", "os.chroot"}
_DETACH_CALLS = {"os.setsid", "os.setpgrp", "os.daemon"}
_FORK_CALLS = re.compile(r"^(os\.fork|subprocess\.Popen|multiprocessing\.Process)$")
_CLOCKS = re.compile(r"^(time\.(monotonic|time|perf_counter)|datetime\.\w+\.now)$")
_WAITS = re.compile(r"(sleep|wait|select|poll|recv|read|input|join|accept|get)$")


def scan_python(text: str, file: str, args: tuple[str, ...] = ()) -> list[Finding]:
    """Findings of a Python script run with `args` (see the module doc)."""
    runtime = Finding(file, None, Capability.RUNTIME, "a Python script", "python3", "python")
    try:
        tree = ast.parse(text, filename=file)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        detail = f"a Python script the preview could not parse ({type(error).__name__})"
        return [Finding(file, None, Capability.RUNTIME, detail, "python3", "python")]
    scanner = _PythonScanner(file, args)
    with contextlib.suppress(RecursionError):  # deeper than Python's stack: keep what was found
        scanner.visit(tree)
    return [runtime, *scanner.result()]


class _PythonScanner(ast.NodeVisitor):
    def __init__(self, file: str, args: tuple[str, ...]) -> None:
        self.file = file
        self.args = args
        self.aliases: dict[str, str] = {}
        self.paths: dict[str, str] = {}  # variable -> the path it holds
        self.found: list[Finding] = []
        self.imported_network: list[Finding] = []
        self.bounds: list[str | None] = []  # how many times each loop around runs, when known

    def add(
        self,
        node: ast.AST,
        capability: Capability,
        detail: str,
        tool: str | None = None,
        target: str | None = None,
    ) -> None:
        line = getattr(node, "lineno", None)
        self.found.append(Finding(self.file, line, capability, detail, tool, target=target))

    def result(self) -> list[Finding]:
        calls = {f.capability for f in self.found}
        only_local = Capability.NETWORK not in calls and calls & {
            Capability.LOOPBACK,
            Capability.SERVER,
        }
        return (
            self.found
            if only_local
            else sorted(self.found + self.imported_network, key=lambda f: f.line or 0)
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
        if node.level == 0:
            self._module(node, module)

    def _module(self, node: ast.stmt, module: str) -> None:
        top = module.split(".")[0]
        if top and top not in sys.stdlib_module_names:
            self.add(node, Capability.MODULE, f"imports {top}", target=top)
        if module in ("http.server", "socketserver"):
            self.add(node, Capability.SERVER, f"imports {module}")
        capability = _MODULES.get(top)
        if capability is Capability.NETWORK:
            line = node.lineno
            self.imported_network.append(Finding(self.file, line, capability, f"imports {module}"))
        elif capability is not None:
            self.add(node, capability, f"imports {module}")

    def visit_While(self, node: ast.While) -> None:
        calls = {self.dotted(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
        clocked = any(_CLOCKS.match(name) for n in ast.walk(node.test)
                      if isinstance(n, ast.Call) for name in [self.dotted(n.func)])  # fmt: skip
        endless = isinstance(node.test, ast.Constant) and bool(node.test.value)
        breaks = any(isinstance(n, ast.Break) for n in ast.walk(node))
        waits = any(_WAITS.search(name) for name in calls)
        if (clocked or (endless and not breaks)) and not waits:
            self.add(node, Capability.CPU, "spins the CPU until a deadline")
        self._loop(node)

    def visit_For(self, node: ast.For) -> None:
        iterates = node.iter
        times = None
        if isinstance(iterates, ast.Call) and self.dotted(iterates.func) == "range":
            times = self.number(iterates.args[-1]) if len(iterates.args) == 1 else None
        self._loop(node, times)

    def _loop(self, node: ast.While | ast.For, times: str | None = None) -> None:
        calls = {self.dotted(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
        if {"bytearray", "bytes"} & calls and any(name.endswith(".append") for name in calls):
            self.add(node, Capability.MEMORY, "allocates memory in a loop")
        self.bounds.append(times)
        self.generic_visit(node)
        self.bounds.pop()

    def number(self, node: ast.expr) -> str | None:
        """The whole number an expression holds, where a literal or `int(...)` tells."""
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return str(node.value)
        if isinstance(node, ast.Call) and self.dotted(node.func) == "int" and node.args:
            text = self.path(node.args[0])
            return text if text is not None and text.isdigit() else None
        return None

    def visit_Assign(self, node: ast.Assign) -> None:
        path = self.path(node.value)
        if path is not None:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.paths[target.id] = path
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = self.dotted(node.func)
        first = node.args[0] if node.args else None
        literal = first.value if isinstance(first, ast.Constant) else None
        if _RUN_CALLS.match(name):
            self.add(node, Capability.SUBPROCESS, f"runs a command ({name})")
            if first is not None and "http.server" in ast.dump(first):
                self.add(node, Capability.SERVER, "starts a server (http.server)")
            for tool in self._tools(first):
                capability = Capability.NETWORK if tool in NETWORK_TOOLS else Capability.TOOL
                self.add(node, capability, f"runs {tool}", tool=tool)
        elif _NETWORK_CALLS.search(name):
            self._network(node, name, first)
        elif _SERVERS.search(name):
            self.add(node, Capability.SERVER, f"listens ({name})")
        elif name in ("os.getenv", "os.environ.get") and _is_outside_variable(literal):
            self.add(node, Capability.ENVIRONMENT, f"reads the environment variable {literal}",
                     target=literal)  # fmt: skip
        elif name in _DETACH_CALLS or any(k.arg == "start_new_session" for k in node.keywords):
            self.add(node, Capability.DAEMON, f"detaches a process ({name})")
        elif name in _HOME_CALLS:
            self.add(node, Capability.HOST_FILES, f"reads your home folder ({name})", target="~")
        self._files(node, name, first)
        if self.bounds and _FORK_CALLS.match(name):
            times = self.bounds[-1]
            detail = f"starts processes {f'{times} times' if times else 'in a loop'} ({name})"
            self.add(node, Capability.PROCESSES, detail, target=times)
        if name == "input":
            self.add(node, Capability.INPUT, "asks for input (input)")
        elif name in _PRIVILEGE_CALLS:
            self.add(node, Capability.PRIVILEGE, f"{name} needs root's privileges")
        elif name in _LIMIT_CALLS:
            self.add(node, Capability.LIMITS, f"sets its own resource limits ({name})")
        self.generic_visit(node)

    def _network(self, node: ast.Call, name: str, first: ast.expr | None) -> None:
        host = _host_of(first)
        if host is not None and is_loopback(host):
            self.add(node, Capability.LOOPBACK, f"connects to loopback ({name})", target=host)
        else:
            self.add(node, Capability.NETWORK, f"network call ({name})")

    def _files(self, node: ast.Call, name: str, first: ast.expr | None) -> None:
        """Files outside the workspace that the call opens, reads or writes."""
        if name in _OPEN_CALLS and first is not None:
            path = self.path(first)
            mode = node.args[1] if len(node.args) > 1 else None
            modes = mode.value if isinstance(mode, ast.Constant) else ""
            write = isinstance(modes, str) and bool(set(modes) & set("wax+"))
            self._report(node, path, write)
        elif name in _OS_WRITES and node.args:
            self._report(node, self.path(node.args[-1]), True)
        elif isinstance(node.func, ast.Attribute) and (
            node.func.attr in _PATH_WRITES or node.func.attr in _PATH_READS
        ):
            path = self.path(node.func.value)
            self._report(node, path, node.func.attr in _PATH_WRITES)

    def _report(self, node: ast.Call, path: str | None, write: bool) -> None:
        if path is None or not worth_reporting(path):
            return
        if write:
            self.add(node, Capability.WRITE_OUTSIDE, f"writes {path}", target=path)
        else:
            self.add(node, Capability.HOST_FILES, f"opens {path}", target=path)

    def path(self, node: ast.expr) -> str | None:
        """The path an expression holds, where simple assignments tell (None: unknown)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return self.paths.get(node.id)
        if isinstance(node, ast.Subscript) and self.dotted(node.value) == "sys.argv":
            index = node.slice.value if isinstance(node.slice, ast.Constant) else None
            if isinstance(index, int) and 0 < index <= len(self.args):
                return self.args[index - 1]
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = self.path(node.left), self.path(node.right)
            return None if left is None or right is None else f"{left.rstrip('/')}/{right}"
        if isinstance(node, ast.Call):
            name = self.dotted(node.func)
            if name in ("pathlib.Path.home", "Path.home"):
                return "~"
            if name in _PATH_TYPES | {"os.path.expanduser"} and node.args:
                return self.path(node.args[0])
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("expanduser", "resolve"):
                return self.path(node.func.value)
        return None

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = node.slice.value if isinstance(node.slice, ast.Constant) else None
        if self.dotted(node.value) == "os.environ" and _is_outside_variable(key):
            self.add(node, Capability.ENVIRONMENT, f"reads the environment variable {key}",
                     target=key)  # fmt: skip
        self.generic_visit(node)

    def _tools(self, first: ast.expr | None) -> list[str]:
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return [PurePosixPath(c.name).name for c in parse(first.value).commands if c.name]
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


def _host_of(first: ast.expr | None) -> str | None:
    """The host a network call's first argument names: a URL's, or an (address, port) pair's."""
    if isinstance(first, ast.Tuple) and first.elts:
        first = first.elts[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        match = re.match(r"^(?:[a-z]+://)?(\[[^\]]+\]|[^/:]+)", first.value)
        return match[1].strip("[]") if match else None
    return None


def _is_outside_variable(name: object) -> TypeGuard[str]:
    """True for an environment variable name the workbench does not set itself."""
    return isinstance(name, str) and name not in SAFE_VARS
