"""Comparing two snapshots into `FileChange`s, and unified text diffs of one change on demand.

`diff_snapshots` lists what was added, deleted, modified, `type_changed` or only `mode_changed`
(folders are never "modified"; paths below a folder either snapshot could not list are left out);
`text_diff` renders one change from the blob store with caps, a placeholder sentence for binary,
oversized or unkept content, using the system's `diff -u` for long texts when there is one.
"""

import difflib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from workbench.workspace.blobs import BlobStore
from workbench.workspace.changes import ChangeKind, EntryType, FileChange, path_text
from workbench.workspace.snapshot import Entry, Snapshot, iter_ancestors

MIB = 1024 * 1024
HARD_MAX_BYTES = 20 * MIB  # never diff more than this, whatever the caller asks
BINARY_PROBE_BYTES = 8192
EXTERNAL_DIFF_LINES = 2000  # above this, `diff -u` when the system has it


def diff_snapshots(before: Snapshot, after: Snapshot) -> tuple[FileChange, ...]:
    """Every difference between `before` and `after`, sorted by path."""
    blind = set(before.unlisted) | set(after.unlisted)
    old_entries, new_entries = before.entries, after.entries
    changes = []
    for path, old in old_entries.items():
        new = new_entries.get(path)
        if new is old or new == old:  # the common case: the very same entry, kept unchanged
            continue
        kind = _change_kind(old, new)
        if kind is not None:
            changes.append(_file_change(path, kind, old, new))
    for path in new_entries.keys() - old_entries.keys():
        changes.append(_file_change(path, ChangeKind.ADDED, None, new_entries[path]))
    if blind:
        changes = [c for c in changes if not any(f in blind for f in iter_ancestors(c.path))]
    return tuple(sorted(changes, key=lambda change: change.path))


def _change_kind(old: Entry | None, new: Entry | None) -> ChangeKind | None:
    if old is None:
        return ChangeKind.ADDED
    if new is None:
        return ChangeKind.DELETED
    if old.type is not new.type:
        return ChangeKind.TYPE_CHANGED
    if old.type is EntryType.FILE:
        if old.digest is not None and new.digest is not None:
            content_differs = old.digest != new.digest
        else:
            content_differs = (old.size, old.mtime_ns) != (new.size, new.mtime_ns)
        if content_differs:
            return ChangeKind.MODIFIED
    if old.type is EntryType.SYMLINK and old.target != new.target:
        return ChangeKind.MODIFIED
    if old.mode != new.mode:
        return ChangeKind.MODE_CHANGED
    return None


def _file_change(path: str, kind: ChangeKind, old: Entry | None, new: Entry | None) -> FileChange:
    return FileChange(
        path=path,
        kind=kind,
        before_type=old.type if old else None,
        after_type=new.type if new else None,
        before_size=old.size if old else None,
        after_size=new.size if new else None,
        before_mode=old.mode if old else None,
        after_mode=new.mode if new else None,
        before_digest=old.digest if old else None,
        after_digest=new.digest if new else None,
        before_target=old.target if old else None,
        after_target=new.target if new else None,
    )


@dataclass(frozen=True, slots=True)
class TextDiff:
    """A unified diff (`text`), or a `placeholder` sentence saying why there is none."""

    text: str = ""
    placeholder: str | None = None


def text_diff(
    change: FileChange,
    store: BlobStore,
    *,
    max_bytes: int = MIB,
    max_lines: int = 20_000,
) -> TextDiff:
    """The unified diff of one change, from the kept contents (see the module doc)."""
    max_bytes = min(max_bytes, HARD_MAX_BYTES)
    sides: list[bytes] = []
    for kind, size, digest, target in (
        (change.before_type, change.before_size, change.before_digest, change.before_target),
        (change.after_type, change.after_size, change.after_digest, change.after_target),
    ):
        if kind is None or kind is EntryType.DIR:
            sides.append(b"")
        elif kind is EntryType.SYMLINK:
            sides.append(os.fsencode(f"symlink -> {target}\n"))
        elif kind is EntryType.OTHER:
            return TextDiff(placeholder="Special file (FIFO, socket or device): no content.")
        elif size is not None and size > max_bytes:
            return TextDiff(placeholder=f"Too large to diff ({size:,} bytes).")
        elif digest is None or (data := store.read(digest, max_bytes)) is None:
            return TextDiff(placeholder="The content was not kept, so no diff can be shown.")
        elif b"\0" in data[:BINARY_PROBE_BYTES]:
            return TextDiff(placeholder=_binary_sentence(change))
        else:
            sides.append(data)
    before, after = sides
    lines = max(before.count(b"\n"), after.count(b"\n"))
    if lines > max_lines:
        return TextDiff(placeholder=f"Too many lines to diff (over {max_lines:,}).")
    label = path_text(change.path)  # the header names it as people see it: on one line
    text = _unified(before, after, label, external=lines > EXTERNAL_DIFF_LINES)
    if not text:
        same = change.kind is ChangeKind.MODE_CHANGED
        return TextDiff(placeholder="Same content." if same else "Empty file.")
    return TextDiff(text=text)


def _unified(before: bytes, after: bytes, path: str, *, external: bool) -> str:
    """A unified diff; long inputs go to `diff -u` (difflib is 10-50x slower there)."""
    tool = shutil.which("diff") if external else None
    if tool:
        with tempfile.TemporaryDirectory(prefix="workbench-diff-") as folder:
            old, new = Path(folder) / "a", Path(folder) / "b"
            old.write_bytes(before)
            new.write_bytes(after)
            labels = ["--label", f"a/{path}", "--label", f"b/{path}"]
            done = subprocess.run([tool, "-u", *labels, old, new], capture_output=True, check=False)
        if done.returncode in (0, 1):
            return done.stdout.decode("utf-8", errors="replace")
    old_lines = before.decode("utf-8", errors="replace").splitlines(keepends=True)
    new_lines = after.decode("utf-8", errors="replace").splitlines(keepends=True)
    diff = difflib.unified_diff(old_lines, new_lines, f"a/{path}", f"b/{path}")
    return "".join(line if line.endswith("\n") else line + "\n" for line in diff)


def _binary_sentence(change: FileChange) -> str:
    sizes = [f"{s:,} bytes" for s in (change.before_size, change.after_size) if s is not None]
    return "Binary file: " + " -> ".join(sizes) + "."
