"""`BlobStore`: the content-addressed copies of workspace files that make restore possible.

Each content is kept once, keyed by its sha256: small blobs in one sqlite3 database, larger ones as
files renamed into place, always copied, never hard-linked. Use a `session()` (one sqlite
connection, one thread) for many operations in a row; the store's own `read` opens a session for a
single call; `sweep` removes the blobs no snapshot names any more (retention).
"""

import contextlib
import hashlib
import os
import sqlite3
import stat
import tempfile
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from workbench.errors import WorkspaceError
from workbench.platform.sqlite_wal import set_up_wal

HASH_NAME = "sha256"
CHUNK_BYTES = 1024 * 1024
SMALL_BLOB_BYTES = 256 * 1024
_COMMIT_EVERY_BYTES = 32 * 1024 * 1024
_SCHEMA = "CREATE TABLE IF NOT EXISTS blobs (digest TEXT PRIMARY KEY, data BLOB);"


def hash_fd(fd: int) -> str:
    """The hex digest of everything readable from `fd`, from offset 0 (streamed)."""
    digest = hashlib.new(HASH_NAME)
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, CHUNK_BYTES):
        digest.update(chunk)
    return digest.hexdigest()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class BlobStore:
    """The store of kept file contents under `root`, shared by every run."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @contextmanager
    def session(self) -> Iterator["BlobSession"]:
        """A connection to the store for one thread; commits what it added on exit."""
        db = self._connect()
        try:
            yield BlobSession(self.root, db)
            db.commit()
        except sqlite3.Error as error:  # the caller's own OSErrors stay theirs
            raise WorkspaceError(f"The kept files at {self.root} failed: {error}") from None
        finally:
            db.close()

    def _connect(self) -> sqlite3.Connection:
        """The store's database, open and set up."""
        path = self.root / "small.sqlite3"
        db = None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=30)
            set_up_wal(db, path, _SCHEMA)
            db.execute("PRAGMA synchronous=NORMAL")
        except (OSError, sqlite3.Error) as error:
            if db is not None:
                db.close()
            raise WorkspaceError(f"Cannot open the kept files at {self.root}: {error}") from None
        return db

    def read(self, digest: str, max_bytes: int) -> bytes | None:
        """The blob's bytes, or None when it is not kept or larger than `max_bytes`."""
        with self.session() as blobs:
            return blobs.read(digest, max_bytes)

    def sweep(self, keep: Collection[str]) -> int:
        """Remove every blob whose digest is not in `keep`; returns the bytes freed. The
        caller makes sure nothing is being kept meanwhile (see `runs.retention`)."""
        freed: int = 0
        with self.session() as blobs:
            rows = blobs.db.execute("SELECT digest, length(data) FROM blobs").fetchall()
            gone: list[tuple[str, int]] = [(d, n) for d, n in rows if d not in keep]
            blobs.db.executemany("DELETE FROM blobs WHERE digest = ?", [(d,) for d, _ in gone])
            freed += sum(size for _, size in gone)
        for path in self.root.glob("??/*"):
            if path.name not in keep and not path.name.startswith("."):
                with contextlib.suppress(OSError):
                    size = path.stat().st_size
                    path.unlink()
                    freed += size
        return freed


class BlobSession:
    """Operations on the store over one open connection (see `BlobStore.session`)."""

    def __init__(self, root: Path, db: sqlite3.Connection) -> None:
        self.root = root
        self.db = db
        self._uncommitted = 0

    def _path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def _small(self, digest: str) -> bytes | None:
        row = self.db.execute("SELECT data FROM blobs WHERE digest = ?", (digest,)).fetchone()
        return None if row is None else bytes(row[0])

    def has(self, digest: str) -> bool:
        """True when the blob with `digest` is kept."""
        found = self.db.execute("SELECT 1 FROM blobs WHERE digest = ?", (digest,)).fetchone()
        return found is not None or self._path(digest).is_file()

    def put_fd(self, fd: int, size: int) -> tuple[str, int]:
        """Keep the whole content of `fd` (about `size` bytes); returns (digest, bytes added).

        The digest is of the bytes actually kept, so a file that changes while it is read is
        kept consistently under the hash of what was kept. Nothing is added if it is known.
        """
        if size <= SMALL_BLOB_BYTES:
            os.lseek(fd, 0, os.SEEK_SET)
            chunks = []
            while chunk := os.read(fd, CHUNK_BYTES):
                chunks.append(chunk)
            data = b"".join(chunks)
            digest = hashlib.new(HASH_NAME, data).hexdigest()
            inserted = self.db.execute(
                "INSERT OR IGNORE INTO blobs (digest, data) VALUES (?, ?)", (digest, data)
            ).rowcount
            self._count(len(data) if inserted else 0)
            return digest, len(data) if inserted else 0
        known = hash_fd(fd)
        if self.has(known):
            return known, 0
        return self._put_file(fd)

    def _count(self, added: int) -> None:
        self._uncommitted += added
        if self._uncommitted > _COMMIT_EVERY_BYTES:  # keep write locks short
            self.db.commit()
            self._uncommitted = 0

    def _put_file(self, fd: int) -> tuple[str, int]:
        digest = hashlib.new(HASH_NAME)
        os.lseek(fd, 0, os.SEEK_SET)
        out_fd, tmp_name = tempfile.mkstemp(prefix=".tmp-", dir=self.root)
        copied = 0
        try:
            while chunk := os.read(fd, CHUNK_BYTES):
                digest.update(chunk)
                _write_all(out_fd, chunk)
                copied += len(chunk)
            os.fchmod(out_fd, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        except BaseException:
            os.close(out_fd)
            Path(tmp_name).unlink(missing_ok=True)
            raise
        os.close(out_fd)
        hexdigest = digest.hexdigest()
        final = self._path(hexdigest)
        if final.is_file():
            Path(tmp_name).unlink()
            return hexdigest, 0
        final.parent.mkdir(exist_ok=True)
        Path(tmp_name).replace(final)
        return hexdigest, copied

    def read(self, digest: str, max_bytes: int) -> bytes | None:
        """The blob's bytes, or None when it is not kept or larger than `max_bytes`."""
        data = self._small(digest)
        if data is None:
            try:
                with self._path(digest).open("rb") as blob:
                    data = blob.read(max_bytes + 1)
            except FileNotFoundError:
                return None
        return None if len(data) > max_bytes else data

    def copy_to_fd(self, digest: str, out_fd: int) -> bool:
        """Write the blob into `out_fd`; False when it is not kept."""
        data = self._small(digest)
        if data is not None:
            _write_all(out_fd, data)
            return True
        try:
            with self._path(digest).open("rb") as blob:
                while chunk := blob.read(CHUNK_BYTES):
                    _write_all(out_fd, chunk)
        except FileNotFoundError:
            return False
        return True
