"""What the places a skill runs in have: the sandbox image, and this computer.

The container postures run the image's programs (`skills.scripts.IMAGE_TOOLS`) and its Python,
which has the standard library only; local and hardened run this computer's. `host_has_tool`
looks a program up on PATH; `host_modules` asks this computer's `python3` which top-level
modules it can import, by name only (`importlib.util.find_spec`, which imports nothing of the
skill and runs none of its code), once per set of names, within `HOST_QUERY_TIMEOUT_S`. A
name it cannot answer for (no python3, a timeout) counts as present: the preview never
predicts a failure it could not check.
"""

import functools
import json
import shutil
import subprocess

from workbench.skills.scripts import IMAGE_TOOLS, image_has_module

HOST_QUERY_TIMEOUT_S = 5.0
_FIND_SPECS = (
    "import importlib.util, json, sys\n"
    "print(json.dumps({n: importlib.util.find_spec(n) is not None for n in sys.argv[1:]}))"
)


def image_has_tool(tool: str) -> bool:
    """Whether the sandbox image has the program `tool`."""
    return tool in IMAGE_TOOLS


def host_has_tool(tool: str) -> bool:
    """Whether this computer has the program `tool` on PATH."""
    return shutil.which(tool) is not None


def image_modules(names: frozenset[str]) -> dict[str, bool]:
    """Which of the top-level module `names` the sandbox image's Python has."""
    return {name: image_has_module(name) for name in names}


@functools.lru_cache(maxsize=64)
def host_modules(names: frozenset[str]) -> dict[str, bool]:
    """Which of the top-level module `names` this computer's python3 can import."""
    valid = sorted(name for name in names if name.isidentifier())
    python = shutil.which("python3")
    if not valid or python is None:
        return dict.fromkeys(names, True)
    try:
        done = subprocess.run(
            [python, "-c", _FIND_SPECS, *valid],
            cwd="/",  # not a folder of the skill's: only installed modules count
            capture_output=True,
            text=True,
            timeout=HOST_QUERY_TIMEOUT_S,
            check=False,
        )
        answer = json.loads(done.stdout) if done.returncode == 0 else {}
    except (OSError, subprocess.TimeoutExpired, ValueError):
        answer = {}
    return {name: bool(answer.get(name, True)) for name in names}
