"""A failed run's cause when its stderr shows a dependency the environment lacks.

`missing_dependency(stderr, skill, posture)` reads the last sign of one in the command's
stderr: Python's `ModuleNotFoundError: No module named 'yaml'`, Node's `Cannot find module
'x'`, a shell's `soffice: not found` or `command not found`, Python's `FileNotFoundError` for a
program it tried to run. It returns the sentence that names it and the way out ("the script
imports yaml, which this environment lacks: add PyYAML to the skill's requirements.txt and
run `workbench env build ...`"), or "" when stderr shows none. Reads text only.
"""

import re
import sys

from workbench.environments.names import DEBIAN_PACKAGES, distribution_of

_PYTHON = re.compile(r"ModuleNotFoundError: No module named '([A-Za-z_][\w.]*)'")
_NODE = re.compile(r"Cannot find module '((?:@[\w.-]+/)?[\w.-]+)[^']*'")
_SHELL = re.compile(r"(?:^|\s|/)([\w.+-]+): (?:command )?not found\s*$", re.MULTILINE)
_EXEC = re.compile(r"FileNotFoundError: \[Errno 2\] No such file or directory: '([\w.+-]+)'")
_SIGNS = ((_PYTHON, "python"), (_NODE, "node"), (_SHELL, "tool"), (_EXEC, "tool"))


def missing_dependency(stderr: str, skill: str, posture: str) -> str:
    """The cause sentence for the dependency `stderr` shows missing, or "" (see above)."""
    build = f"`workbench env build --skill {skill} --posture {posture}`"
    found = _last(stderr)
    if found is None:
        return ""
    name, kind = found
    if kind == "python":
        top = name.split(".")[0]
        if top in sys.stdlib_module_names:
            return ""
        distribution = distribution_of(name)
        return (
            f"the script imports {top}, which this environment lacks: add {distribution} to "
            f"the skill's requirements.txt (or accept the proposal) and run {build}"
        )
    if kind == "node":
        if name.startswith(".") or name.startswith("/"):
            return ""
        return (
            f"the script requires the Node package {name}, which this environment lacks: add "
            f"it to the skill's package.json dependencies and run {build}"
        )
    package = DEBIAN_PACKAGES.get(name)
    if package is None:
        return f"the command {name} is not in this environment"
    return (
        f"the script runs {name}, which this environment lacks: it is in the Debian package "
        f"{package}; run {build} (docker and gvisor add it to an image) or install it on this "
        "computer"
    )


def _last(text: str) -> tuple[str, str] | None:
    """The name and kind of the sign that comes last in `text`."""
    best: tuple[int, str, str] | None = None
    for pattern, kind in _SIGNS:
        for match in pattern.finditer(text):
            if best is None or match.start() > best[0]:
                best = (match.start(), match.group(1), kind)
    return None if best is None else (best[1], best[2])
