"""Setting up the workbench's sqlite3 databases in WAL mode, one process at a time: sqlite
answers a concurrent switch to WAL with "database is locked" at once, without waiting for its
busy timeout, so runs that open a new database together would fail."""

import fcntl
import os
import sqlite3
from pathlib import Path


def set_up_wal(db: sqlite3.Connection, path: Path, schema: str) -> None:
    """Put the database at `path` (open as `db`) in WAL mode and run `schema` on it, holding
    an exclusive lock on a file beside it meanwhile. Raises OSError or sqlite3.Error."""
    lock = os.open(
        path.with_name(f".{path.name}.setup-lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
    )
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(schema)
    finally:
        os.close(lock)
