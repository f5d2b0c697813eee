"""Lending a folder tree to another uid for one run, and giving it back afterwards.

When the workbench runs as root, the hardened posture runs the command as a throwaway uid,
which must be able to write the workspace and its private HOME. `FolderLoan.lend()` records the
owner of every entry and chowns the tree to that uid; `give_back()` restores the recorded
owners and gives entries the command created to the owner of the folder itself. Only owners
change (the kernel clears set-uid bits on chown); contents and modes are left alone. Symlinks
are never followed, and regular files with more than one hard link are not lent: the inode may
also be a file outside the folder (a root-only one, say), and lending it would lend that file.
The command sees such files as before, with the permissions they give other users (read-only,
or not at all). If the app dies mid-run the files keep the throwaway owner: nothing is lost,
and root can still read and fix them.
"""

import asyncio
import os
import stat
from pathlib import Path


class FolderLoan:
    """Ownership of one folder tree lent to `uid`:`gid`."""

    def __init__(self, root: Path, uid: int, gid: int) -> None:
        self.root = root
        self._uid = uid
        self._gid = gid
        self._owners: dict[str, tuple[int, int]] = {}

    def _entries(self) -> list[str]:
        paths = [str(self.root)]
        for dirpath, dirnames, filenames in os.walk(self.root):
            paths.extend(os.path.join(dirpath, name) for name in (*dirnames, *filenames))  # noqa: PTH118 - many entries, str is cheaper
        return paths

    def lend(self) -> None:
        """Chown the tree to the borrower, remembering every owner. Raises OSError.

        Regular files with several hard links are skipped (see the module docstring).
        """
        for path in self._entries():
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                continue  # the same file may be outside the folder: never lend it
            self._owners[path] = (st.st_uid, st.st_gid)
            os.lchown(path, self._uid, self._gid)

    def give_back(self) -> None:
        """Restore the recorded owners; new entries get the folder's own owner.

        Only entries the borrower owns are touched: a hard link it made to someone else's
        file keeps that owner.
        """
        default = self._owners.get(str(self.root))
        if default is None:
            return
        for path in self._entries():
            try:
                st = os.lstat(path)
                if st.st_uid == self._uid:
                    os.lchown(path, *self._owners.get(path, default))
            except FileNotFoundError:
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

    async def release(self) -> None:
        """Leave the loan; the last one out gives the folder back."""
        async with self._lock:
            self._users -= 1
            if self._users == 0:
                await asyncio.to_thread(self.loan.give_back)


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
