"""Removing what a hardened run's throwaway uid left outside the workspace (root only).

The uid lives for one session and owns nothing else on the machine, so what it owns directly
in the shared temporary folders (/tmp, /var/tmp, /dev/shm) or in SysV IPC (shared memory,
semaphore sets, message queues) was left there by the command. `sweep()` removes it, never
following a symlink and never touching an entry another uid owns, and says what it removed.
Deeper entries (in another user's world-writable folder inside /tmp, say) are not looked for.
"""

import ctypes
import os
from pathlib import Path

from workbench.workspace.safe_walk import remove_tree

TEMP_FOLDERS = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))
IPC_RMID = 0
# /proc/sysvipc file, what it holds, its remover (semctl takes a semaphore number first)
SYSV_KINDS = (
    ("shm", "SysV shared memory segment", "shmctl"),
    ("sem", "SysV semaphore set", "semctl"),
    ("msg", "SysV message queue", "msgctl"),
)


def sweep(uid: int) -> list[str]:
    """Remove what `uid` left; one phrase per place, e.g. "3 entries in /tmp" (files,
    folders or links). Never raises."""
    removed = []
    for folder in TEMP_FOLDERS:
        if count := _sweep_folder(folder, uid):
            removed.append(f"{count} {'entries' if count != 1 else 'entry'} in {folder}")
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, noun, remover in SYSV_KINDS:
        ids = _sysv_ids(kind, uid)
        remove = getattr(libc, remover)
        args = (0, IPC_RMID) if kind == "sem" else (IPC_RMID, None)
        if count := sum(remove(ipc_id, *args) == 0 for ipc_id in ids):
            removed.append(f"{count} {noun}{'s' if count != 1 else ''}")
    return removed


def _sweep_folder(folder: Path, uid: int) -> int:
    """Remove what `uid` owns directly in `folder`; how many entries. Every entry is looked at
    (lstat), so this reads names and inodes only: a shared /tmp may hold thousands."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    count = 0
    for entry in entries:
        try:
            if entry.stat(follow_symlinks=False).st_uid != uid:
                continue
            if entry.is_dir(follow_symlinks=False):
                count += remove_tree(Path(entry.path), owned_by=uid)
            else:
                Path(entry.path).unlink()
                count += 1
        except OSError:
            continue
    return count


def _sysv_ids(kind: str, uid: int) -> list[int]:
    """The ids of the SysV IPC objects of `kind` that `uid` owns or created."""
    try:
        header, *rows = Path(f"/proc/sysvipc/{kind}").read_text(encoding="ascii").splitlines()
    except OSError:
        return []
    columns = header.split()
    owner, creator = columns.index("uid"), columns.index("cuid")
    return [
        int(fields[1])
        for fields in (row.split() for row in rows)
        if str(uid) in (fields[owner], fields[creator])
    ]
