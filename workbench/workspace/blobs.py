"""`BlobStore`: the content-addressed copies of workspace files that make restore possible.

A blob is stored once under `ROOT/<first two hex digits>/<sha256 hex>`, read-only, whatever
run or workspace it came from, so taking the "before" copy of an unchanged workspace again
costs a hash per file and no writes. Files are copied (never hard-linked: a run may modify a
file in place, which would change the "copy" too). Blobs are written to a temporary name and
renamed into place, so a crash never leaves a half-written blob under a valid name.
"""

import contextlib
import hashlib
import os
import stat
import tempfile
from pathlib import Path

HASH_NAME = "sha256"
CHUNK_BYTES = 1024 * 1024


def hash_fd(fd: int) -> str:
    """The hex digest of everything readable from `fd`, from offset 0 (streamed)."""
    digest = hashlib.new(HASH_NAME)
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, CHUNK_BYTES):
        digest.update(chunk)
    return digest.hexdigest()


class BlobStore:
    """The folder of content-addressed blobs shared by every run (see the module doc)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, digest: str) -> Path:
        """Where the blob with `digest` lives (whether or not it exists)."""
        return self.root / digest[:2] / digest

    def has(self, digest: str) -> bool:
        """True when the blob with `digest` is stored."""
        return self.path(digest).is_file()

    def put_fd(self, fd: int) -> str:
        """Copy the whole of `fd` (from offset 0) into the store; returns its digest.

        The digest is computed from the bytes actually copied, so a file that changes while
        it is being read is stored consistently under the hash of what was stored.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        digest = hashlib.new(HASH_NAME)
        os.lseek(fd, 0, os.SEEK_SET)
        out_fd, tmp_name = tempfile.mkstemp(prefix=".tmp-", dir=self.root)
        try:
            while chunk := os.read(fd, CHUNK_BYTES):
                digest.update(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out_fd, view) :]
            os.fchmod(out_fd, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        except BaseException:
            os.close(out_fd)
            Path(tmp_name).unlink(missing_ok=True)
            raise
        os.close(out_fd)
        hexdigest = digest.hexdigest()
        final = self.path(hexdigest)
        if final.is_file():
            Path(tmp_name).unlink()
        else:
            final.parent.mkdir(exist_ok=True)
            Path(tmp_name).replace(final)
        return hexdigest

    def read(self, digest: str, max_bytes: int) -> bytes | None:
        """The blob's bytes, or None when it is not stored or larger than `max_bytes`."""
        try:
            with self.path(digest).open("rb") as blob:
                data = blob.read(max_bytes + 1)
        except FileNotFoundError:
            return None
        return None if len(data) > max_bytes else data

    def copy_to_fd(self, digest: str, out_fd: int) -> bool:
        """Write the blob into `out_fd`; False when the blob is not stored."""
        with contextlib.suppress(FileNotFoundError), self.path(digest).open("rb") as blob:
            while chunk := blob.read(CHUNK_BYTES):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out_fd, view) :]
            return True
        return False
