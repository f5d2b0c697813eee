"""The shell scanner: what a shell script does, read from its commands as a shell finds them.

`scan_shell(text, file, args=...)` parses the script (`workbench.skills.shell`) and reports,
per command, the programs it runs (never a builtin, a keyword, a function the script defines,
a quoted string or a word of a heredoc), the network it reaches (the host's loopback apart from
the outside, a server it starts apart from both), the environment variables it reads, the
files outside the workspace it reads or writes (redirections, and the path arguments of the
usual file commands), privilege, the processes it detaches or starts in a loop, and loops
that spin the CPU or grow memory. Code handed to `sh -c`, `python3 -c` (or `python3 -` with a
heredoc) and `node -e` is scanned as its own language, and a script it runs by path is named
(`Capability.RUNTIME` with the path as `target`). `args` are the command line's arguments, so
`$1`... and variables set from them resolve to the paths they name; `values` are variables
known before the script starts (`SKILL_DIR`). `command_tools(line)` is the programs a one-line
command runs.
"""

import re
from pathlib import PurePosixPath

from workbench.skills.pyscan import scan_python
from workbench.skills.scripts import (
    NETWORK_TOOLS,
    PRIVILEGE_TOOLS,
    SAFE_VARS,
    Capability,
    Finding,
    is_loopback,
    scan_javascript,
    worth_reporting,
)
from workbench.skills.shell import Command, Script, Word, parse

MAX_CANDIDATES = 8  # values a variable may have (one per assignment seen)
_BUILTIN_WORDS = (
    "exec command time cd echo printf read exit return export local set unset shift source . "
    "eval trap wait break continue declare typeset true false test [ pwd alias type umask "
    "getopts let readonly : ulimit shopt hash disown jobs bg fg readarray mapfile"
)
_BUILTINS = frozenset(_BUILTIN_WORDS.split())
_WRAPPERS = {"sudo", "doas", "env", "nohup", "nice", "time", "exec", "command", "xargs",
             "timeout", "setsid", "stdbuf", "ionice", "chrt"}  # fmt: skip
_OPTION_VALUES = {"nice": {"-n"}, "sudo": {"-u", "-g", "-C"}, "ionice": {"-c", "-n"},
                  "timeout": {"-s", "-k"}, "stdbuf": {"-i", "-o", "-e"}}  # fmt: skip
_DETACHING = {"setsid", "nohup", "disown", "daemonize"}
_CHECKS = {"-v", "-V"}  # `command -v X` asks whether X exists; it runs nothing
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "busybox"}
_PYTHONS = re.compile(r"^python[0-9.]*$")
_NODES = {"node", "nodejs"}
_WRITERS = {"touch", "mkdir", "rm", "rmdir", "tee", "truncate", "chmod", "chown", "chgrp"}
_LAST_WRITTEN = {"cp", "mv", "ln", "install", "rsync"}
_READERS = {"cat", "head", "tail", "less", "more", "wc", "sort", "uniq", "cut", "grep", "egrep",
            "fgrep", "awk", "gawk", "sed", "diff", "cmp", "md5sum", "sha1sum", "sha256sum",
            "base64", "file", "stat", "ls", "find", "jq", "tac", "nl", "od", "xxd", "strings",
            "source", ".", "cp", "mv", "tar", "zip", "unzip"}  # fmt: skip
_PRIVILEGED = {"chown", "chgrp", "mount", "umount", "chroot", "setcap"}
_BOUND = re.compile(r"-l[te]\s+(\S+)")
_NETWORK_FILES = ("/proc/net/", "/etc/resolv.conf", "/etc/hosts")
_WAITS = {"sleep", "read", "wait", "nc", "curl", "wget"}  # a loop that calls these waits, not spins
_ENDLESS = {":", "true", "[ 1 ]", "1"}
_NETWORK_VERBS = {"git": {"clone", "fetch", "pull", "push", "ls-remote", "submodule"},
                  "pip": {"install", "download"}, "pip3": {"install", "download"},
                  "npm": {"install", "i", "ci", "publish", "view"}}  # fmt: skip
_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*|[0-9])")
_URL_HOST = re.compile(r"^(?:[a-z]+://)?(?:[^@/]*@)?(\[[^\]]+\]|[^/:]+)")


def command_tools(line: str) -> list[str]:
    """The programs a one-line shell command runs, in order (builtins and keywords left out)."""
    found = scan_shell(line, "", line_offset=None)
    return [f.tool for f in found if f.tool and f.capability is not Capability.RUNTIME]


def scan_shell(
    text: str,
    file: str,
    line_offset: int | None = 0,
    args: tuple[str, ...] = (),
    values: dict[str, str] | None = None,
) -> list[Finding]:
    """Findings of a shell script (or, with `line_offset` None, a one-line command) run with
    `args`; see the module doc."""
    script = parse(text)
    scan = _ShellScan(file, line_offset, script, args, values or {})
    found = [] if line_offset is None else [_runtime_of_shell(text, file)]
    for command in script.commands:
        found += scan.command(command)
    return found + scan.loops()


def _runtime_of_shell(text: str, file: str) -> Finding:
    tool = "bash" if re.match(r"#!\S*(/env\s+)?\S*bash", text) or file.endswith(".bash") else "sh"
    return Finding(file, None, Capability.RUNTIME, f"a shell script for {tool}", tool, "shell")


class _ShellScan:
    """The findings of one script's commands, with the variables it has set so far."""

    def __init__(
        self,
        file: str,
        line_offset: int | None,
        script: Script,
        args: tuple[str, ...],
        values: dict[str, str],
    ) -> None:
        self.file = file
        self.offset = line_offset
        self.script = script
        self.values: dict[str, list[str]] = {name: [value] for name, value in values.items()}
        for number, arg in enumerate(args, 1):
            self.values[str(number)] = [arg]
        self.assigned = {name for c in script.commands for name, _ in c.assignments}
        self.assigned |= {w.text for c in script.commands if c.name in ("read", "local", "export")
                          for w in c.words[1:]}  # fmt: skip
        self.waits = {c.line for c in script.commands if c.name in _WAITS}
        self.checked = {  # programs the script looks for before it uses them
            PurePosixPath(c.words[-1].text).name
            for c in script.commands
            if len(c.words) > 1
            and (c.name in ("which", "type", "hash") or c.words[1].text in _CHECKS)
        }
        self.background = [c for c in script.commands if c.background]
        self.has_wait = any(c.name == "wait" for c in script.commands)

    def finding(
        self,
        command: Command,
        capability: Capability,
        detail: str,
        tool: str | None = None,
        target: str | None = None,
    ) -> Finding:
        line = None if self.offset is None else command.line + self.offset
        optional = tool in self.checked
        return Finding(self.file, line, capability, detail, tool, target=target, optional=optional)

    def command(self, command: Command) -> list[Finding]:
        found = [*self._assign(command), *self._environment(command)]
        found += self._redirections(command)
        wrappers, words = self._program(command)
        found += [self._tool(command, name, []) for name in wrappers if name not in _BUILTINS]
        if not words:
            return found
        name = words[0]
        tool = PurePosixPath(name).name
        if tool in self.script.functions or tool in _BUILTINS:
            if tool in ("source", "."):
                found += self._paths(command, words[1:], write=False)
            if tool == "read" and not command.redirections and not self._loop(command.line):
                found.append(self.finding(command, Capability.INPUT, "asks for input (read)"))
            if (
                tool == "ulimit"
                and any(w.startswith("-") for w in words[1:])
                and any(w.isdigit() or w == "unlimited" or "$" in w for w in words[1:])
            ):
                detail = "sets its own resource limits (ulimit)"
                found.append(self.finding(command, Capability.LIMITS, detail))
            return found
        if "$" in name or not re.fullmatch(r"[A-Za-z0-9_.+-]+", tool):
            return found  # a word no program is called, or one the script computes
        if "/" in name and not name.startswith(("/usr/", "/bin/", "/sbin/", "/opt/")):
            runs = self.finding(command, Capability.RUNTIME, f"runs {name}", target=name)
            return [*found, runs]
        found.append(self._tool(command, tool, words[1:]))
        found += self._inline(command, tool, words[1:])
        found += self._effects(command, tool, words[1:])
        return found

    def _assign(self, command: Command) -> list[Finding]:
        for name, value in command.assignments:
            known = self.values.setdefault(name, [])
            for candidate in self._expand(value):
                if candidate not in known and len(known) < MAX_CANDIDATES:
                    known.append(candidate)
        return []

    def _expand(self, word: str) -> list[str]:
        """The values `word` may have: known variables replaced (each of their candidates),
        unknown ones kept as written."""
        results = [word]
        for name in dict.fromkeys(_VARIABLE.findall(word)):
            options = self.values.get(name)
            if not options:
                continue
            pattern = re.compile(
                r"\$\{" + name + r"(?::?[-=][^}]*)?\}|\$" + name + r"(?![A-Za-z0-9_])"
            )
            results = [
                pattern.sub(value.replace("\\", "\\\\"), result)
                for result in results
                for value in options
            ][:MAX_CANDIDATES]
        return results

    def _program(self, command: Command) -> tuple[list[str], list[str]]:
        """The wrappers a command goes through (`sudo`, `env`, `nohup`, ...) and the words of
        the program it runs in the end; ([], []) for a check such as `command -v X` or a word
        no program is called (a quoted string with spaces)."""
        if not command.words or (command.words[0].quoted and " " in command.words[0].text):
            return [], []
        words = [self._first(w) for w in command.words]
        wrappers: list[str] = []
        while words and PurePosixPath(words[0]).name in _WRAPPERS:
            name = PurePosixPath(words[0]).name
            if name == "command" and words[1:2] and words[1] in _CHECKS:
                return [], []
            rest = words[1:]
            while rest and (rest[0].startswith("-") or "=" in rest[0]):
                rest = rest[2:] if rest[0] in _OPTION_VALUES.get(name, ()) else rest[1:]
            if name == "timeout" and rest:
                rest = rest[1:]
            wrappers.append(name)
            if not rest:
                return wrappers, []
            words = rest
        return wrappers, words

    def _first(self, word: Word) -> str:
        return self._expand(word.text)[0]

    def _tool(self, command: Command, tool: str, rest: list[str]) -> Finding:
        verbs = _NETWORK_VERBS.get(tool)
        if tool in NETWORK_TOOLS and (verbs is None or verbs & set(rest[:3])):
            hosts = [_host(w) for w in rest if not w.startswith("-")]
            if any(is_loopback(h) for h in hosts if h):
                if tool in ("nc", "ncat", "netcat") and any(w.startswith("-l") for w in rest):
                    return self.finding(command, Capability.SERVER, f"listens ({tool})", tool=tool)
                return self.finding(
                    command, Capability.LOOPBACK, f"connects to loopback ({tool})", tool=tool
                )
            return self.finding(command, Capability.NETWORK, f"network command {tool}", tool=tool)
        if tool in PRIVILEGE_TOOLS:
            return self.finding(command, Capability.PRIVILEGE, f"{tool} asks for more privilege",
                                tool=tool)  # fmt: skip
        return self.finding(command, Capability.TOOL, f"runs {tool}", tool=tool)

    def _inline(self, command: Command, tool: str, rest: list[str]) -> list[Finding]:
        """Code the command hands to an interpreter, scanned as that language, and a script it
        runs by path."""
        line = None if self.offset is None else command.line + self.offset - 1
        option = {"-c"} if tool in _SHELLS or _PYTHONS.match(tool) else {"-e", "-p", "--eval"}
        for index, word in enumerate(rest[:-1]):
            if word in option and tool in _SHELLS:
                inner_args = tuple(rest[index + 3 :])
                offset = None if line is None else line
                return scan_shell(rest[index + 1], self.file, offset, inner_args)
            if word in option and _PYTHONS.match(tool):
                return _relined(scan_python(rest[index + 1], self.file), line)
            if word in option and tool in _NODES:
                return _relined(scan_javascript(rest[index + 1], self.file), line)
        if command.stdin is not None and (not rest or rest[0] == "-"):
            if _PYTHONS.match(tool):
                return _relined(scan_python(command.stdin, self.file), line)
            if tool in _NODES:
                return _relined(scan_javascript(command.stdin, self.file), line)
        if _PYTHONS.match(tool) and "-m" in rest[:-1]:
            module = rest[rest.index("-m") + 1]
            if module == "http.server":
                return [self.finding(command, Capability.SERVER, "serves files (http.server)")]
            return []
        scripts = [w for w in rest if not w.startswith("-")][:1]
        if (tool in _SHELLS or _PYTHONS.match(tool) or tool in _NODES) and scripts:
            runs = f"runs {scripts[0]}"
            return [self.finding(command, Capability.RUNTIME, runs, tool, target=scripts[0])]
        return []

    def _effects(self, command: Command, tool: str, rest: list[str]) -> list[Finding]:
        found: list[Finding] = []
        if tool in _DETACHING or command.name in _DETACHING:
            found.append(self.finding(command, Capability.DAEMON, f"detaches a process ({tool})"))
        elif command.background and (loop := self._loop(command.line)):
            count = self._bound(loop)
            times = f"{count} times" if count else "in a loop"
            detail = f"starts {tool} {times}, in the background"
            found.append(self.finding(command, Capability.PROCESSES, detail, target=count))
        elif command.background and not self.has_wait:
            found.append(self.finding(command, Capability.DAEMON, f"leaves {tool} running"))
        arguments = [_home(w) for w in rest if not w.startswith("-")]
        if (
            tool == "rm"
            and any(w in ("/", "/*", "~", "~/") for w in arguments)
            and any("r" in w.lower() for w in rest if w.startswith("-"))
        ):
            found.append(self.finding(command, Capability.DESTRUCTIVE,
                                      "recursive delete of / or your home folder"))  # fmt: skip
        if tool in _PRIVILEGED:
            detail = f"{tool} needs root's privileges"
            found.append(self.finding(command, Capability.PRIVILEGE, detail, tool))
        if tool in _WRITERS:
            found += self._paths(command, arguments, write=True)
        elif tool in _LAST_WRITTEN and len(arguments) > 1:
            found += self._paths(command, arguments[:-1], write=False)
            found += self._paths(command, arguments[-1:], write=True)
        elif tool == "dd":
            found += self._paths(command, [w[3:] for w in rest if w.startswith("of=")], True)
            found += self._paths(command, [w[3:] for w in rest if w.startswith("if=")], False)
        elif tool in _READERS:
            found += self._paths(command, arguments, write=False)
        return found

    def _redirections(self, command: Command) -> list[Finding]:
        found = []
        for operator, target in command.redirections:
            if operator in ("<&", ">&"):
                continue
            found += self._paths(command, [target.text], write=operator != "<")
        writes = any(op not in ("<", "<&", ">&") for op, _ in command.redirections)
        if (writes or command.name == "dd") and self._loop(command.line):
            found.append(self.finding(command, Capability.DISK, "writes files in a loop"))
        return found

    def _paths(self, command: Command, words: list[str], write: bool) -> list[Finding]:
        """A finding for each path outside the workspace that `words` may name."""
        found = []
        for word in words:
            for path in self._expand(word):
                path = _home(path)
                if "$" in path or not worth_reporting(path):
                    continue
                if not write and path.startswith(_NETWORK_FILES):
                    detail = f"looks at the network's routes ({path})"
                    found.append(self.finding(command, Capability.NETWORK, detail, target=path))
                elif write:
                    found.append(self.finding(command, Capability.WRITE_OUTSIDE, f"writes {path}",
                                              target=path))  # fmt: skip
                else:
                    found.append(self.finding(command, Capability.HOST_FILES, f"reads {path}",
                                              target=path))  # fmt: skip
        return found

    def _environment(self, command: Command, words: list[str] | None = None) -> list[Finding]:
        """Environment variables the command reads that neither it nor the workbench sets."""
        texts = words if words is not None else [w.text for w in command.words]
        texts += [value for _, value in command.assignments]
        texts += [target.text for _, target in command.redirections]
        names: set[str] = set()
        for text in texts:
            for expanded in self._expand(text):
                names |= set(_VARIABLE.findall(expanded))
        found = []
        for name in sorted(names - SAFE_VARS - self.assigned):
            if name.isupper() and not name.isdigit():
                detail = f"reads the environment variable {name}"
                found.append(self.finding(command, Capability.ENVIRONMENT, detail, target=name))
        return found

    def _loop(self, line: int) -> str | None:
        """The head of the innermost loop around `line` (None outside loops)."""
        around = [(start, head) for start, end, head in self.script.loops if start <= line <= end]
        return max(around)[1] if around else None

    def _bound(self, head: str) -> str | None:
        """The number a loop head `[ $n -lt N ]` counts up to, when it resolves."""
        match = _BOUND.search(head)
        if match is None:
            return None
        return next((value for value in self._expand(match[1]) if value.isdigit()), None)

    def loops(self) -> list[Finding]:
        """Loops that spin (endless, never waiting) and loops that double a value (memory)."""
        found = []
        for start, end, head in self.script.loops:
            where = None if self.offset is None else start + self.offset
            waits = any(start <= line <= end for line in self.waits)
            if head.strip() in _ENDLESS and not waits:
                detail = "spins the CPU in an endless loop"
                found.append(Finding(self.file, where, Capability.CPU, detail))
            for command in self.script.commands:
                if start <= command.line <= end and any(
                    value.count(f"${name}") + value.count(f"${{{name}}}") >= 2
                    for name, value in command.assignments
                ):
                    size = self._bound(head)
                    detail = f"doubles a value up to {size} bytes" if size else "doubles a value"
                    finding = Finding(self.file, where, Capability.MEMORY, detail, target=size)
                    found.append(finding)
                    break
        return found


def _home(word: str) -> str:
    """`word` with `$HOME` written as `~`."""
    return word.replace("${HOME}", "~").replace("$HOME", "~")


def _host(word: str) -> str:
    match = _URL_HOST.match(word)
    return match[1].strip("[]") if match else ""


def _relined(findings: list[Finding], line: int | None) -> list[Finding]:
    """Findings of inline code, placed on the line of the command that holds it."""
    return [
        Finding(
            f.file,
            None if line is None else (f.line or 1) + line,
            f.capability,
            f.detail,
            f.tool,
            f.language,
            f.target,
        )
        for f in findings
        if f.capability is not Capability.RUNTIME
    ]
