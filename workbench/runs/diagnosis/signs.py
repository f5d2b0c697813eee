"""The signs the diagnosis rules look for in a run's output, and what they name.

An errno is matched three ways at once (`errno_sign`): its name (`EROFS`, as Node and many
tools print it), Python's `[Errno 30]`, and the C library's own message for it
(`os.strerror`, which shells, coreutils and Python print), case-insensitively. The other signs
are the well-known forms of shells, Python and Node: a command not found, a module not found,
a refused fork, a name lookup that failed. The helpers pull out what a line names: a path, a
program, a module, a host. Everything here reads text; nothing here touches the run.
"""

import errno
import os
import re

from workbench.runs.diagnosis.model import Evidence


def errno_sign(*codes: int) -> re.Pattern[str]:
    """A pattern for any of the errnos `codes`: name, `[Errno N]` or the C library's message."""
    parts = []
    for code in codes:
        parts += [
            rf"\b{errno.errorcode[code]}\b",
            rf"\[Errno {code}\]",
            re.escape(os.strerror(code)),
        ]
    return re.compile("|".join(parts), re.IGNORECASE)


READ_ONLY = errno_sign(errno.EROFS)
ACCESS = errno_sign(errno.EACCES)
NOT_PERMITTED = errno_sign(errno.EPERM)
NO_ENTRY = errno_sign(errno.ENOENT)
TOO_LARGE = errno_sign(errno.EFBIG)
TRY_AGAIN = errno_sign(errno.EAGAIN)
NO_MEMORY = errno_sign(errno.ENOMEM)
INVALID = errno_sign(errno.EINVAL)
OWNERSHIP = re.compile(r"\bchown|\bchgrp|ownership|setuid|setgid", re.IGNORECASE)
UNREACHABLE = errno_sign(errno.ENETUNREACH, errno.EHOSTUNREACH)
# getaddrinfo's failures: Python gives their negative numbers, Node and curl their names.
NAME_LOOKUP = re.compile(
    r"\[Errno -[235]\]|\bEAI_(AGAIN|NONAME|NODATA|FAIL)\b|\bENOTFOUND\b|getaddrinfo|"
    r"name resolution|resolve host|Failed to resolve|NameResolutionError|"
    r"Name or service not known|No address associated with hostname",
    re.IGNORECASE,
)
HOST = re.compile(
    r"(?:getaddrinfo \w+ |resolve host(?: address)?:? |Failed to resolve |hostname: |host=)"
    r"['\"‘]?(?P<host>[A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z0-9])"
)
MEMORY = re.compile(
    r"MemoryError|out of memory|Fatal process OOM|bad_alloc|heap limit", re.IGNORECASE
)
# dash `sh: 1: X: not found`, bash `bash: line 1: X: command not found`, `bash: X: command...`
SHELL_NOT_FOUND = re.compile(
    r"^(?:\S+: )?(?:line )?(?:\d+: )?(?P<tool>[^\s:]+): (?:command not found|not found)$"
)
# The shell's own complaint when every PATH entry it may search refused it (exit 127).
SHELL_REFUSED = re.compile(r"^\S+: (?:line )?\d+: (?P<tool>[^\s:/]+): ")
# The shell's complaint about the file it was to execute (exit 126): `sh: 1: ./x.js: ...`.
SHELL_EXECUTING = re.compile(r"^\S+: (?:line )?\d+: (?P<program>[^:]+): ")
SPAWN_MISSING = re.compile(r"\bspawn(?:Sync)? (?P<tool>\S+) ENOENT\b")
RUN_MISSING = re.compile(
    r"^(?:env|xargs|nohup|timeout|nice|exec)\b.*?['‘\"]?(?P<tool>[^\s'’\"]+)['’\"]?: "
    + NO_ENTRY.pattern,
    re.IGNORECASE,
)
PYTHON_MODULE = re.compile(r"No module named ['\"]?(?P<module>[A-Za-z_][\w.]*)")
NODE_MODULE = re.compile(r"Cannot find (?:module|package) ['\"](?P<module>[^./'\"][^'\"]*)['\"]")
QUOTED_NAME = re.compile(r"['\"‘](?P<name>[^'\"’/\s]+)['\"’]\s*$")
FORK = re.compile(
    r"Cannot fork|can't fork|fork: retry|fork: .*temporarily unavailable|spawn\w* EAGAIN|"
    r"\bfork\b.*(\bEAGAIN\b|\[Errno 11\])",
    re.IGNORECASE,
)
INPUT_ENDED = re.compile(r"EOFError|EOF when reading|unexpected end of input|read: .*EOF")
PRIVILEGE = re.compile(
    r"effective uid is not 0|no new privileges|must be (?:run as )?root|are you root|"
    r"only root can|requires root|superuser",
    re.IGNORECASE,
)
_QUOTED_PATH = re.compile(r"""['"‘“`](?P<path>(?:/|~/)[^'"’”`\n]*)['"’”`]""")
_BARE_PATH = re.compile(r"(?:^|[\s(=])(?P<path>(?:/|~/)[^\s:'\",()]+)")
_WRITES = re.compile(
    r"cannot (?:create|touch|make|remove|move|write|overwrite)|for writing|\bwrite|mkdir|"
    r"makedirs|rename|\bcopy|\btouch|unlink|rmdir|creat|\bopen\(.*['\"][wax]b?\+?['\"]",
    re.IGNORECASE,
)
_ERROR_LINE = re.compile(
    r"^(?:[\w.]+(?:Error|Exception|Exit|Interrupt|Warning)\b|Uncaught|error\b|fatal\b)|"
    r"\b(?:error|failed|fatal|denied|cannot|can't|not found|no such|invalid)\b",
    re.IGNORECASE,
)
_TRACEBACK = "Traceback (most recent call last):"


def path_in(line: str) -> str | None:
    """The first absolute (or `~/`) path a line names, quoted or bare."""
    match = _QUOTED_PATH.search(line) or _BARE_PATH.search(line)
    return match["path"] if match else None


def writes(line: Evidence, lines: list[Evidence]) -> bool:
    """Whether the error on `line` was a write: its words, or its neighbours' (the last frame
    and source line above a Python error, the stack below a Node one)."""
    index = lines.index(line)
    near = lines[max(0, index - 2) : index + 3]
    return any(_WRITES.search(other.text) for other in near if other.stream == line.stream)


def last_error(lines: list[Evidence]) -> Evidence | None:
    """The line that best says how a failing command ended: a Python traceback's exception,
    else the last line of stderr that reads as an error, else the last line of output."""
    stderr = [line for line in lines if line.stream == "stderr"]
    starts = [i for i, line in enumerate(stderr) if line.text == _TRACEBACK]
    if starts:
        after = stderr[starts[-1] + 1 :]
        raised = [line for line in after if not line.text.startswith(("File ", "^", "~"))]
        exceptions = [line for line in raised if re.match(r"^[\w.]+(:|$)", line.text)]
        if exceptions:
            return exceptions[-1]
    errors = [line for line in stderr if _ERROR_LINE.search(line.text)]
    if errors:
        return errors[-1]
    last = stderr or lines
    return last[-1] if last else None


def near_text(line: Evidence, lines: list[Evidence], before: int, after: int) -> str:
    """The text of `line` and its neighbours in the same stream, as one string."""
    index = lines.index(line)
    near = lines[max(0, index - before) : index + after + 1]
    return "\n".join(other.text for other in near if other.stream == line.stream)
