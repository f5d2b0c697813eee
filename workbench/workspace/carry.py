"""Carrying what a command did to a copy of the workspace back into the workspace.

`carry_back` takes `sent` (the snapshot of what was copied out) and `staged` (the copy as it came
back, unpacked into a staging folder) and makes the workspace the workspace as it is now with every
path the command added, changed or deleted taken from `staged` (paths in `keep` stay as they are),
through `restore_from` with the staged files as the contents: nothing is written before the whole
copy is back, each file is renamed into place, and what the user changed meanwhile is kept.
"""

import os
import shutil
import stat
from dataclasses import replace
from pathlib import Path

from workbench.errors import WorkspaceError
from workbench.workspace.changes import EntryType
from workbench.workspace.diff import diff_snapshots
from workbench.workspace.restore import RestoreReport, restore_from
from workbench.workspace.snapshot import (
    DEFAULT_SNAPSHOT_LIMITS,
    Snapshot,
    SnapshotLimits,
    take_snapshot,
    within,
)

_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class StagedFiles:
    """The files of a staged copy as restore `Contents`: each content hash read from the
    staged file that has it."""

    def __init__(self, root: Path, staged: Snapshot) -> None:
        self.root = root
        self.paths = {
            entry.digest: entry.path
            for entry in staged.entries.values()
            if entry.type is EntryType.FILE and entry.digest is not None
        }

    def has(self, digest: str) -> bool:
        return digest in self.paths

    def copy_to_fd(self, digest: str, out_fd: int) -> bool:
        if digest not in self.paths:
            return False
        fd = os.open(self.root / self.paths[digest], _FILE_FLAGS)
        with open(fd, "rb") as source:  # noqa: PTH123 - a descriptor, not a path
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return False
            with open(out_fd, "wb", closefd=False) as out:
                shutil.copyfileobj(source, out, 1 << 20)
        return True


def carry_back(
    root: Path,
    sent: Snapshot,
    staged: Snapshot,
    staged_root: Path,
    keep: frozenset[str] = frozenset(),
    limits: SnapshotLimits = DEFAULT_SNAPSHOT_LIMITS,
) -> RestoreReport:
    """Apply to the workspace at `root` what changed from `sent` to `staged` (see the module
    doc); `WorkspaceError` when the copy could not be listed whole."""
    if staged.truncated or "" in staged.unlisted:
        raise WorkspaceError("The copy of the workspace could not be listed whole.")
    current = take_snapshot(root, previous=sent, limits=limits)
    entries = dict(current.entries)
    for change in diff_snapshots(sent, staged):
        if within(change.path, keep):
            continue
        entry = staged.entries.get(change.path)
        if entry is None:
            entries.pop(change.path, None)
        else:
            entries[change.path] = entry
    wanted = replace(current, entries=entries)
    return restore_from(root, wanted, StagedFiles(staged_root, staged), limits)
