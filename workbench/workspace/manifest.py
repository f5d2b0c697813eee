"""Saving a `Snapshot` to a file in the run's folder and loading it back (gzip'd JSON).

Paths that are not valid UTF-8 survive the round trip: they are held as surrogate-escaped
strings and written with `ensure_ascii`, which JSON reads back unchanged.
"""

import gzip
import json
from pathlib import Path
from typing import Any

from workbench.errors import WorkspaceError
from workbench.workspace.changes import EntryType
from workbench.workspace.snapshot import Entry, Snapshot

FORMAT = "skill-workbench/snapshot/1"


def save_snapshot(snapshot: Snapshot, path: Path) -> None:
    """Write `snapshot` to `path` (atomically: a temporary file renamed into place)."""
    document: dict[str, Any] = {
        "format": FORMAT,
        "root": str(snapshot.root),
        "taken_ns": snapshot.taken_ns,
        "notes": list(snapshot.notes),
        "truncated": snapshot.truncated,
        "unlisted": list(snapshot.unlisted),
        "unstored": list(snapshot.unstored),
        "excluded": list(snapshot.excluded),
        "entries": [_entry_row(e) for e in snapshot.entries.values()],
    }
    tmp = path.with_name(path.name + ".tmp")
    # One `dumps` and one write: `json.dump` encodes in Python, a piece per value, each
    # written through the text layer into gzip (ten times as slow for a 10k-file workspace).
    text = json.dumps(document, ensure_ascii=True, separators=(",", ":"))
    with gzip.open(tmp, "wb", compresslevel=1) as out:
        out.write(text.encode("ascii"))
    tmp.replace(path)


def load_snapshot(path: Path) -> Snapshot:
    """Read a snapshot written by `save_snapshot`; a `WorkspaceError` if it is missing or bad."""
    try:
        with gzip.open(path, "rt", encoding="ascii") as source:
            document = json.load(source)
        if document.get("format") != FORMAT:
            raise ValueError(f"unknown format {document.get('format')!r}")
        entries = {row[0]: _entry_from_row(row) for row in document["entries"]}
        return Snapshot(
            root=Path(document["root"]),
            taken_ns=document["taken_ns"],
            entries=entries,
            notes=tuple(document["notes"]),
            truncated=document["truncated"],
            unlisted=tuple(document["unlisted"]),
            unstored=tuple(document["unstored"]),
            excluded=tuple(document.get("excluded", ())),
        )
    except (OSError, ValueError, KeyError, IndexError, TypeError, EOFError) as error:
        raise WorkspaceError(f"Cannot read the workspace record {path}: {error}") from None


def _entry_row(e: Entry) -> list[Any]:
    return [e.path, e.type.value, *_stat_fields(e), e.digest, e.target]


def _stat_fields(e: Entry) -> tuple[int, ...]:
    return (e.size, e.mode, e.mtime_ns, e.ctime_ns, e.inode, e.device)


def _entry_from_row(row: list[Any]) -> Entry:
    path, kind, *rest = row
    return Entry(path, EntryType(kind), *rest)
