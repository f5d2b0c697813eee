"""`FileChange`: one difference between two snapshots of a workspace.

The run engine puts a list of these into every `RunResult`; the diff module computes them and
the UI and reports show them.
"""

from dataclasses import dataclass
from enum import StrEnum


class ChangeKind(StrEnum):
    """What happened to one path between the snapshot before and the one after a run."""

    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"
    TYPE_CHANGED = "type_changed"  # e.g. a file replaced by a symlink or a folder
    MODE_CHANGED = "mode_changed"  # same content, different permission bits


class EntryType(StrEnum):
    """The kind of a filesystem entry as a snapshot records it."""

    FILE = "file"
    DIR = "dir"
    SYMLINK = "symlink"
    OTHER = "other"  # FIFO, socket, device: recorded, never opened


@dataclass(frozen=True, slots=True)
class FileChange:
    """A changed path, relative to the workspace root, with POSIX separators.

    `before_*` fields are None for an added path, `after_*` fields None for a deleted one.
    `*_digest` is a file's content hash (the key of its kept copy in the blob store), and
    `*_target` a symlink's target text.
    """

    path: str
    kind: ChangeKind
    before_type: EntryType | None = None
    after_type: EntryType | None = None
    before_size: int | None = None
    after_size: int | None = None
    before_mode: int | None = None
    after_mode: int | None = None
    before_digest: str | None = None
    after_digest: str | None = None
    before_target: str | None = None
    after_target: str | None = None
