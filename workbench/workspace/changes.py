"""`FileChange`: one difference between two snapshots of a workspace; `path_text`: the one way
a path is shown to people.

The run engine puts a list of these into every `RunResult`; the diff module computes them and
the UI and reports show them, each path through `path_text`.
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


_NAMED = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_BYTE_ESCAPES = range(0xDC80, 0xDD00)  # how a str holds a byte that is not UTF-8


def path_text(path: str) -> str:
    r"""`path` as people see it (CLI, reports, GUI lists): one line that names exactly one path.

    A backslash is shown as `\\`, a newline, tab or carriage return as `\n`, `\t`, `\r`, a byte
    that is not UTF-8 as `\xNN`, and every other character that is not printable (control
    characters, bidi controls, line separators) by its code point: `\x1b`, `\u202e`. So no name
    can start a new line or reorder what is read, and two names never read alike. Records and
    JSON keep the real path; this is only for showing it.
    """
    if path.isprintable() and "\\" not in path:
        return path
    return "".join(_char_text(char) for char in path)


def _char_text(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    if char.isprintable():
        return char
    code = ord(char)
    if code in _BYTE_ESCAPES:
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def quoted(path: str) -> str:
    """A workspace path as notes show it: `path_text` in single quotes."""
    return f"'{path_text(path)}'"
