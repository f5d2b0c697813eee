#!/usr/bin/env python3
"""Set up the development environment, then open the app or run the whole test suite.

    python3 dev.py app     # set everything up and open the app on the bundled example skills
    python3 dev.py test    # set everything up and run ruff, mypy, import-linter and pytest

Works on a fresh Debian/Ubuntu machine that has only python3 and pip: it makes `.venv`
beside this file (without ensurepip if Debian's python3-venv is missing), installs the project
and its test tools into it, and installs the system libraries Qt needs when it may (as root, or
through sudo). A second call reuses everything and only reinstalls when pyproject.toml changed.
Extra arguments after `test` go to pytest (e.g. `python3 dev.py test -k catalog`). pytest first
runs the tests that time something (marked `timing`) alone, then the others in two worker
processes (pytest-xdist, `PYTEST_WORKERS`), the tests that use one container engine all in one
of them (see tests/conftest.py), and lists the slowest; arguments with `-n` (`-n 0`: one
process) or `-m` get one run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
VENV_PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".workbench-installed"

# Shared libraries Qt's widgets and its xcb platform plugin load (Debian/Ubuntu package names).
QT_SYSTEM_PACKAGES = [
    *("libgl1", "libegl1", "libglib2.0-0", "libfontconfig1", "libdbus-1-3"),
    *("libxkbcommon0", "libxkbcommon-x11-0", "libx11-xcb1", "libxrender1", "libxcb-cursor0"),
    *("libxcb-icccm4", "libxcb-keysyms1", "libxcb-image0", "libxcb-render-util0"),
    *("libxcb-xinerama0", "libxcb-randr0", "libxcb-shape0", "libxcb-xkb1", "libxcb-xfixes0"),
    *("libwayland-cursor0", "libwayland-egl1"),
]

CHECKS = (
    ("ruff check", ["ruff", "check", "."]),
    ("ruff format", ["ruff", "format", "--check", "."]),
    ("mypy", ["mypy"]),
    ("import-linter", ["lint-imports", "--no-logo"]),
)


def say(text: str) -> None:
    print(f"[dev] {text}", flush=True)


def run(argv: list[str], env: dict[str, str] | None = None, quiet: bool = False) -> None:
    """Run a setup step; with `quiet`, its output is shown only if it fails."""
    done = subprocess.run(argv, env=env, capture_output=quiet, text=True)
    if done.returncode != 0:
        if quiet:
            print(done.stdout + done.stderr, file=sys.stderr)
        raise subprocess.CalledProcessError(done.returncode, argv)


def ensure_venv() -> list[str]:
    """Create .venv if needed; return the pip command that installs into it."""
    if not VENV_PYTHON.exists():
        say(f"creating {VENV}")
        made = subprocess.run([sys.executable, "-m", "venv", str(VENV)], capture_output=True)
        if made.returncode != 0:
            # Debian without python3-venv has no ensurepip: use the system pip from outside.
            shutil.rmtree(VENV, ignore_errors=True)
            run([sys.executable, "-m", "venv", "--without-pip", str(VENV)])
    if subprocess.run([str(VENV_PYTHON), "-m", "pip", "--version"], capture_output=True).returncode:
        # Give the venv a pip of its own, so `.venv/bin/pip` works for the developer too.
        run([sys.executable, "-m", "pip", "--python", str(VENV_PYTHON), "install", "-q", "pip"])
    return [str(VENV_PYTHON), "-m", "pip"]


def ensure_installed(pip: list[str]) -> None:
    """Install the project (editable) with its dev tools when pyproject.toml changed."""
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    say("installing the workbench and its test tools into .venv (first time takes a minute)")
    run([*pip, "install", "--quiet", "--disable-pip-version-check", "-e", f"{ROOT}[dev]"])
    STAMP.write_text(wanted)


def missing_system_packages() -> list[str]:
    if not shutil.which("dpkg-query"):
        return []
    listed = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n", *QT_SYSTEM_PACKAGES],
        capture_output=True,
        text=True,
    ).stdout
    installed = {line.split()[0] for line in listed.splitlines() if line.endswith(" installed")}
    # Package names carry an architecture suffix on some systems (libgl1:amd64).
    installed |= {name.split(":")[0] for name in installed}
    return [name for name in QT_SYSTEM_PACKAGES if name not in installed]


def ensure_qt_libraries() -> None:
    """Install the system libraries Qt needs, when this user may; otherwise say how."""
    missing = missing_system_packages()
    if not missing:
        return
    command = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]
    if os.geteuid() == 0:
        prefix: list[str] = []
    elif shutil.which("sudo"):
        prefix = ["sudo"]
    else:
        say("Qt needs these system packages; ask an administrator to run:")
        say("  apt-get install " + " ".join(missing))
        return
    say("installing the system libraries Qt needs: " + " ".join(missing))
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run([*prefix, "apt-get", "update", "-qq"], env=env, capture_output=True)
    run([*prefix, *command], env=env, quiet=True)


def venv_tool(name: str) -> str:
    return str(VENV / "bin" / name)


def setup() -> None:
    ensure_installed(ensure_venv())
    ensure_qt_libraries()


def open_app() -> int:
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        say("no display found (DISPLAY/WAYLAND_DISPLAY unset): run this in a desktop session,")
        say("or take a picture of the window instead:")
        say("  QT_QPA_PLATFORM=offscreen .venv/bin/workbench gui --screenshot workbench.png")
        return 1
    # Become the app rather than wait for it: no process holding this environment stays
    # alive as the app's parent, where a command could read it from /proc.
    os.execv(venv_tool("workbench"), [venv_tool("workbench"), "gui"])


NO_TESTS = 5  # pytest's exit code when the selection holds no test
SLOWEST_SHOWN = 15  # the whole suite's slowest tests, listed after it: where its time goes


def pytest_runs(pytest_args: list[str]) -> list[list[str]]:
    """The pytest runs of `dev.py test ARGS`: the tests marked `timing` alone, then the others in
    worker processes; arguments that choose the workers (-n) or the marks (-m) get one run."""
    if any(arg.startswith(("-n", "--numprocesses", "-m")) for arg in pytest_args):
        return [pytest_args]
    workers = ["-n", os.environ.get("PYTEST_WORKERS", "2"), "--dist", "loadgroup"]
    slowest = ["--durations", str(SLOWEST_SHOWN)]
    return [["-m", "timing", *pytest_args], [*workers, *slowest, "-m", "not timing", *pytest_args]]


def run_tests(pytest_args: list[str]) -> int:
    failed = []
    for label, argv in CHECKS:
        say(f"running {label}")
        if subprocess.run([venv_tool(argv[0]), *argv[1:]], cwd=ROOT).returncode != 0:
            failed.append(label)
    say("running pytest")
    # Write back what was written before (a fresh venv is about 450 MB, CI's loaded images
    # gigabytes): under the kernel's writeback the machine stalls for hundreds of milliseconds,
    # and the timing tests come first.
    os.sync()
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    codes = [
        subprocess.run([venv_tool("pytest"), *args], cwd=ROOT, env=env).returncode
        for args in pytest_runs(pytest_args)
    ]
    if any(code not in (0, NO_TESTS) for code in codes) or set(codes) == {NO_TESTS}:
        failed.append("pytest")
    if failed:
        say("FAILED: " + ", ".join(failed))
        return 1
    say("all checks passed")
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("app", "test"):
        print(__doc__, file=sys.stderr)
        return 2
    # dev.py itself runs on older Pythons, to say this instead of failing in pip.
    if not (3, 11) <= sys.version_info < (3, 14):
        say("the workbench needs Python 3.11 to 3.13 (e.g. Debian 12, Ubuntu 24.04)")
        return 1
    try:
        setup()
    except subprocess.CalledProcessError as error:
        say(f"setup failed: {' '.join(map(str, error.cmd))} exited with {error.returncode}")
        return 1
    return open_app() if argv[0] == "app" else run_tests(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
