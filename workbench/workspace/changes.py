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


def path_text(path: str) -> str:
    r"""`path` as text that names exactly one path: a backslash doubled, a byte that is not
    UTF-8 (held as a surrogate escape) as `\xNN`.

    Without the doubled backslash, a file named `c` + byte 0xff and one literally named
    `c\xff` would read the same. Control characters are kept: whoever shows the text to a
    person escapes them (`plain_text`), and the `\` they start with cannot be confused either.
    """
    if "\\" not in path and path.isascii():
        return path
    escaped = path.replace("\\", "\\\\")
    return escaped.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def quoted(path: str) -> str:
    """A workspace path as notes show it: `path_text` in single quotes."""
    return f"'{path_text(path)}'"
