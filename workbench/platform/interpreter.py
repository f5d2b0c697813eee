"""How the workbench starts one of its own modules as a child process, from source or frozen.

From source (a wheel or the checkout) a child runs on the app's interpreter, `sys.executable`,
in isolated mode (`-I`: no user site, no PYTHON* variables, the working folder not on the path).
In a frozen build (PyInstaller) `sys.executable` is the app itself, which has neither `-m` nor a
script mode: the child is the app with `INTERNAL_FLAG MODULE`, and the frozen entry script calls
`run_internal()` before anything else, which runs MODULE as `__main__` and exits. It also
calls `clean_frozen_environment()`, so the bootloader's variables never reach a user's command.
"""

import functools
import runpy
import site
import sys
from collections.abc import MutableMapping
from importlib.machinery import PathFinder
from pathlib import Path

INTERNAL_FLAG = "--workbench-internal-module"


def child_argv(module: str) -> tuple[str, ...]:
    """The argv prefix that runs `module` as `__main__`, isolated (a frozen build through
    itself); the module's own arguments follow."""
    if getattr(sys, "frozen", False):
        return (sys.executable, INTERNAL_FLAG, module)
    return (sys.executable, "-I", "-m", module)


def child_call_argv(module: str, function: str, needs: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Like `child_argv`, for a child whose start is on a run's path: from source it imports
    `module` and exits (`os._exit`) with what `function(sys.argv)` returns. It starts without
    `-m`, whose runpy cost about 3 ms of each start, and without `site` (`-S`), whose `.pth`
    files took 2 ms of a bare 8 ms start here: its path is the standard library's, then the
    folders of the installed modules `needs` names and the folder this process imported the
    workbench from. A frozen build runs `module` as `__main__`, whose own guard must do the
    same."""
    if getattr(sys, "frozen", False):
        return child_argv(module)
    folders = list(_import_folders(needs))
    code = (
        f"import os, sys\nsys.path += {folders!r}\n"
        f"from {module} import {function}\nos._exit({function}(sys.argv))"
    )
    return (sys.executable, "-I", "-S", "-c", code)


@functools.cache
def _import_folders(needs: tuple[str, ...]) -> tuple[str, ...]:
    """The folders that hold the top-level modules `needs` names (a name not found has none),
    then the one holding the workbench package this process runs, without repeats: a module
    `needs` names is found first where this process finds it, not in the workbench's folder (a
    checkout, which may hold a workspace). `needs` are found as a child with `site` would find
    them: on the path from its first installed packages' folder (`site.getsitepackages()`) on,
    which the `.pth` files there extend; never in the working folder, PYTHONPATH or a user's
    site, which come before it."""
    installed = site.getsitepackages()
    first = next((i for i, entry in enumerate(sys.path) if entry in installed), None)
    search = installed if first is None else [e for e in sys.path[first:] if Path(e).is_absolute()]
    folders: list[str] = []
    for spec in (PathFinder.find_spec(name, search) for name in needs):
        if spec is not None and spec.origin is not None:
            found = Path(spec.origin).parent  # a module's folder, or a package's own
            folders.append(str(found.parent if spec.submodule_search_locations else found))
    folders.append(str(Path(__file__).parents[2]))  # workbench/platform/interpreter.py
    return tuple(dict.fromkeys(folders))


def run_internal(argv: list[str]) -> None:
    """If `argv` is `[app, INTERNAL_FLAG, MODULE, ARG...]`, run MODULE with `ARG...` and exit."""
    if len(argv) < 3 or argv[1] != INTERNAL_FLAG:
        return
    sys.argv = [argv[0], *argv[3:]]
    runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    sys.exit(0)


def clean_frozen_environment(environ: MutableMapping[str, str]) -> None:
    """Undo what PyInstaller's bootloader added to `environ` for itself.

    The bootloader points `LD_LIBRARY_PATH` at the bundle (keeping the user's value in
    `LD_LIBRARY_PATH_ORIG`) and sets `_PYI_*` variables; left in place, every command the local
    posture runs and every program the app opens would load the bundle's libraries. The
    running app keeps working: the dynamic loader read `LD_LIBRARY_PATH` when it started.
    """
    original = environ.pop("LD_LIBRARY_PATH_ORIG", None)
    if original is None:
        environ.pop("LD_LIBRARY_PATH", None)
    else:
        environ["LD_LIBRARY_PATH"] = original
    for name in [name for name in environ if name.startswith("_PYI_")]:
        del environ[name]
