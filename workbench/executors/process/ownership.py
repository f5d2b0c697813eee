"""Lending a folder tree to another uid for one run, and giving it back afterwards.

`FolderLoan.lend()` records the owner of every entry and chowns the tree to the throwaway uid a root
workbench runs the hardened and bubblewrap postures as (`unreachable()` says when that uid cannot
reach a session's folders); `give_back()` restores the recorded owners and gives new
entries the folder's owner. Only owners change; symlinks are never followed, and files with more
than one hard link are not lent, since their inode may be a file outside the folder.
"""

import asyncio
import os
import stat
from pathlib import Path

from workbench.executors.types import SessionSpec
from workbench.workspace.safe_walk import walk


class FolderLoan:
    """Ownership of one folder tree lent to `uid`:`gid`."""

    def __init__(self, root: Path, uid: int, gid: int) -> None:
        self.root = root
        self._uid = uid
        self._gid = gid
        self._owners: dict[str, tuple[int, int]] = {}  # by path below the root ("" for it)

    def lend(self) -> None:
        """Chown the tree to the borrower, remembering every owner. Raises OSError.

        Regular files with several hard links are skipped (see the module docstring).
        """
        st = self.root.stat()
        self._owners[""] = (st.st_uid, st.st_gid)
        os.chown(self.root, self._uid, self._gid)
        for entry in walk(self.root, follow_root=True):
            st = entry.stat
            if entry.leaving or (stat.S_ISREG(st.st_mode) and st.st_nlink > 1):
                continue  # a hard-linked file may also be outside the folder: never lend it
            self._owners[entry.rel] = (st.st_uid, st.st_gid)
            os.chown(entry.name, self._uid, self._gid, dir_fd=entry.dir_fd, follow_symlinks=False)

    def give_back(self) -> None:
        """Restore the recorded owners; new entries get the folder's own owner. Never raises
        for what the borrower did to the tree (see `safe_walk`).

        Only entries the borrower owns are touched: a hard link it made to someone else's
        file keeps that owner.
        """
        default = self._owners.get("")
        if default is None:
            return
        try:
            if self.root.stat().st_uid == self._uid:
                os.chown(self.root, *default)
        except OSError:
            pass
        for entry in walk(self.root, follow_root=True):
            if entry.leaving or entry.stat.st_uid != self._uid:
                continue
            owner = self._owners.get(entry.rel, default)
            try:
                os.chown(entry.name, *owner, dir_fd=entry.dir_fd, follow_symlinks=False)
            except OSError:
                continue
        self._owners.clear()


class SharedLoan:
    """A `FolderLoan` shared by overlapping runs: lent by the first, given back by the last."""

    def __init__(self, loan: FolderLoan) -> None:
        self.loan = loan
        self._users = 0
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        """Join the loan, lending the folder if nobody holds it yet. Raises OSError."""
        async with self._lock:
            if self._users == 0:
                try:
                    await asyncio.to_thread(self.loan.lend)
                except OSError:
                    await asyncio.to_thread(self.loan.give_back)
                    raise
            self._users += 1

    async def release(self) -> bool:
        """Leave the loan; the last one out gives the folder back (and gets True)."""
        async with self._lock:
            self._users -= 1
            if self._users == 0:
                await asyncio.to_thread(self.loan.give_back)
            return self._users == 0


def can_reach(path: Path, uid: int, gid: int, need_read: bool = False) -> bool:
    """True when `uid`:`gid` can traverse every folder down to `path` (and list it)."""
    path = path.resolve()
    for part in (*reversed(path.parents), path):
        try:
            st = part.stat()
        except OSError:
            return False
        if st.st_uid == uid:
            shift = 6
        elif st.st_gid == gid:
            shift = 3
        else:
            shift = 0
        wanted = 0o5 if need_read and part == path else 0o1
        if (st.st_mode >> shift) & wanted != wanted:
            return False
    return True


def unreachable(session: SessionSpec, run_uid: int, posture: str) -> str:
    """Why `run_uid`, the throwaway user `posture` runs commands as, cannot reach the session's
    workspace, skill folder or skill environment; "" when it can."""
    environment = () if session.environment is None else (session.environment.root,)
    for path, what, read in (
        (session.workspace, "workspace", False),
        (session.skill_dir, "skill folder", True),
        *((root, "skill environment", True) for root in environment),
    ):
        if not can_reach(path, run_uid, run_uid, read):
            return (
                f"the {what} {path} is out of reach of uid {run_uid}, the throwaway user the "
                f"{posture} posture runs commands as: a folder above it is closed to other "
                f"users; open it to them (chmod o+x) or use a {what} elsewhere"
            )
    return ""
