"""An unprivileged user that runs the workbench in tests, for the code paths root never takes.

This machine and CI run as root, so without this the non-root paths of the host postures would
never run. `find_user()` picks a uid for the test session: a random one no process uses and
no account has, so nothing is added to the system and concurrent test sessions never see each
other's processes. It then looks for an interpreter that uid can run with this checkout and
its dependencies importable: the venv's own, else the system's of the same version with the
venv's site-packages on PYTHONPATH (a venv made from an interpreter under a closed folder, such
as /root, is out of that user's reach). Nothing is copied. `OrdinaryUser.workbench()` runs
`python -m workbench` as that user with HOME and the XDG folders in a folder it owns.
"""

import grp
import os
import pwd
import secrets
import site
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

import workbench

UID_BASE = 0x50000000  # below the hardened posture's throwaway uids (0x60000000 and up)
CHECKOUT = Path(workbench.__file__).resolve().parent.parent
_XDG = ("DATA", "CONFIG", "STATE", "CACHE")


@dataclass(frozen=True)
class OrdinaryUser:
    """The unprivileged user and the interpreter it runs the workbench with."""

    uid: int
    gid: int
    python: str
    pythonpath: str

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        """A clean environment for the user: PATH, HOME and XDG folders in `home`, `extra`."""
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "PYTHONPATH": self.pythonpath,
            **{f"XDG_{kind}_HOME": str(home / kind.lower()) for kind in _XDG},
        }
        return {**env, **extra}

    def popen(self, argv: Sequence[str], env: dict[str, str]) -> "subprocess.Popen[str]":
        """Start `argv` as the user (no supplementary groups), from /."""
        return subprocess.Popen(
            argv,
            env=env,
            cwd="/",
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def workbench(
        self, env: dict[str, str], *args: str, prefix: Sequence[str] = ()
    ) -> tuple["subprocess.Popen[str]", str, str]:
        """Run `[*prefix] python -m workbench ARGS...` as the user; the process, stdout, stderr."""
        process = self.popen([*prefix, self.python, "-m", "workbench", *args], env)
        out, err = process.communicate(timeout=90)
        return process, out, err

    def processes(self) -> list[psutil.Process]:
        """Every live process of the user (a full scan)."""
        found = []
        for process in psutil.process_iter(["uids", "status"]):
            uids, status = process.info["uids"], process.info["status"]
            if uids is not None and uids.real == self.uid and status != psutil.STATUS_ZOMBIE:
                found.append(process)
        return found


def _unused_uid() -> int:
    """A uid (also free as a gid) that no account, group or process has."""
    taken = {entry.pw_uid for entry in pwd.getpwall()} | {entry.gr_gid for entry in grp.getgrall()}
    while True:
        uid = UID_BASE + secrets.randbelow(1 << 24)
        if uid not in taken and not OrdinaryUser(uid, uid, "", "").processes():
            return uid


def find_user() -> OrdinaryUser | str:
    """The user, or why there is none (as root only: it switches uid)."""
    uid = _unused_uid()
    pythonpath = os.pathsep.join([str(CHECKOUT), *site.getsitepackages()])
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    tried = []
    for python in dict.fromkeys((sys.executable, f"/usr/bin/python{version}")):
        user = OrdinaryUser(uid, uid, python, pythonpath)
        if not (problem := _import_problem(user)):
            return user
        tried.append(f"{python}: {problem}")
    return f"uid {uid} cannot run an interpreter that imports {CHECKOUT}: " + "; ".join(tried)


def _import_problem(user: OrdinaryUser) -> str:
    """Why the user's interpreter cannot import the workbench ("" when it can)."""
    argv = [user.python, "-c", "import workbench, psutil"]
    try:
        probe = user.popen(argv, {"PYTHONPATH": user.pythonpath})
    except OSError as error:
        return str(error)
    _, err = probe.communicate(timeout=60)
    return "" if probe.returncode == 0 else (err.strip().splitlines() or ["failed"])[-1]
