"""Snapshots and diffs: every kind of change is reported exactly, and nothing hangs or escapes."""

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from workbench.workspace import snapshot as snapshot_module
from workbench.workspace.blobs import BlobStore, hash_fd
from workbench.workspace.changes import ChangeKind, EntryType, path_text
from workbench.workspace.diff import diff_snapshots, text_diff
from workbench.workspace.manifest import load_snapshot, save_snapshot
from workbench.workspace.snapshot import RACY_NS, SnapshotLimits, take_snapshot


def _settle() -> None:
    """Wait out the racy window so unchanged files can reuse their hash."""
    time.sleep(RACY_NS / 1e9 + 0.05)


def _make_tree(root: Path) -> None:
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "keep.txt").write_text("unchanged\n")
    (root / "edit.txt").write_text("line one\nline two\n")
    (root / "gone.txt").write_text("deleted by the run\n")
    (root / "tool.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "tool.sh").chmod(0o644)
    (root / "replaced.txt").write_text("becomes a link\n")
    (root / "sub" / "deeper" / "data.bin").write_bytes(b"\0\1\2" * 100)


def _kinds(changes: tuple[object, ...]) -> dict[str, ChangeKind]:
    return {c.path: c.kind for c in changes}  # type: ignore[attr-defined]


def test_diff_reports_add_modify_delete_chmod_and_symlink_swap(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    _make_tree(root)
    store = BlobStore(tmp_path / "blobs")
    before = take_snapshot(root, store=store)

    (root / "new.txt").write_text("added\n")
    (root / "edit.txt").write_text("line one\nline 2!\n")
    (root / "gone.txt").unlink()
    (root / "tool.sh").chmod(0o755)
    (root / "replaced.txt").unlink()
    (root / "replaced.txt").symlink_to("keep.txt")
    after = take_snapshot(root, previous=before, store=store)

    changes = diff_snapshots(before, after)
    assert _kinds(changes) == {
        "edit.txt": ChangeKind.MODIFIED,
        "gone.txt": ChangeKind.DELETED,
        "new.txt": ChangeKind.ADDED,
        "replaced.txt": ChangeKind.TYPE_CHANGED,
        "tool.sh": ChangeKind.MODE_CHANGED,
    }
    by_path = {c.path: c for c in changes}
    swap = by_path["replaced.txt"]
    assert (swap.before_type, swap.after_type) == (EntryType.FILE, EntryType.SYMLINK)
    assert swap.after_target == "keep.txt"
    assert (by_path["tool.sh"].before_mode, by_path["tool.sh"].after_mode) == (0o644, 0o755)
    assert [c.path for c in changes] == sorted(c.path for c in changes)

    edit = text_diff(by_path["edit.txt"], store)
    assert edit.placeholder is None
    assert "-line two\n" in edit.text and "+line 2!\n" in edit.text
    assert "+added\n" in text_diff(by_path["new.txt"], store).text
    assert "-deleted by the run\n" in text_diff(by_path["gone.txt"], store).text


def test_unchanged_files_reuse_their_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _make_tree(tmp_path)
    _settle()
    before = take_snapshot(tmp_path)
    hashed: list[int] = []

    def counting_hash(fd: int) -> str:
        hashed.append(fd)
        return hash_fd(fd)

    monkeypatch.setattr(snapshot_module, "hash_fd", counting_hash)
    (tmp_path / "edit.txt").write_text("changed\n")
    after = take_snapshot(tmp_path, previous=before)
    assert len(hashed) == 1
    assert _kinds(diff_snapshots(before, after)) == {"edit.txt": ChangeKind.MODIFIED}


def test_same_size_edit_with_mtime_reset_is_still_modified(tmp_path: Path) -> None:
    target = tmp_path / "same.txt"
    target.write_text("AAAA")
    _settle()
    before = take_snapshot(tmp_path)
    stat_before = target.stat()
    target.write_text("BBBB")
    os.utime(target, ns=(stat_before.st_atime_ns, stat_before.st_mtime_ns))
    after = take_snapshot(tmp_path, previous=before)
    assert _kinds(diff_snapshots(before, after)) == {"same.txt": ChangeKind.MODIFIED}


def test_symlinks_out_of_the_workspace_are_recorded_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("host secret")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "to_dir").symlink_to(outside)
    (root / "to_file").symlink_to(outside / "secret.txt")
    (root / "loop_a").symlink_to("loop_b")
    (root / "loop_b").symlink_to("loop_a")
    (root / "self").symlink_to("self")
    store = BlobStore(tmp_path / "blobs")

    snap = take_snapshot(root, store=store)

    assert set(snap.entries) == {"to_dir", "to_file", "loop_a", "loop_b", "self"}
    assert all(e.type is EntryType.SYMLINK for e in snap.entries.values())
    assert snap.entries["to_dir"].target == str(outside)
    secret_digest = hashlib.sha256(b"host secret").hexdigest()
    assert store.read(secret_digest, 1000) is None


@pytest.mark.timeout(10)
def test_fifo_and_socket_are_recorded_as_other_without_hanging(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with socket.socket(socket.AF_UNIX) as server:
        short = Path(tempfile.mkdtemp(dir="/tmp"))
        try:
            server.bind(str(short / "s"))
            snap = take_snapshot(short)
        finally:
            (short / "s").unlink()
            short.rmdir()
    assert snap.entries["s"].type is EntryType.OTHER
    before = take_snapshot(tmp_path, store=BlobStore(tmp_path.parent / "blobs"))
    assert before.entries["pipe"].type is EntryType.OTHER
    assert before.entries["pipe"].digest is None


def test_sparse_file_is_hashed(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.img"
    with sparse.open("wb") as out:
        out.truncate(64 * 1024 * 1024)
        out.seek(32 * 1024 * 1024)
        out.write(b"middle")
    expected = hashlib.sha256()
    with sparse.open("rb") as source:
        while chunk := source.read(1 << 20):
            expected.update(chunk)
    snap = take_snapshot(tmp_path)
    assert snap.entries["sparse.img"].digest == expected.hexdigest()


def test_entry_cap_truncates_with_a_note(tmp_path: Path) -> None:
    for i in range(50):
        (tmp_path / f"f{i:02}").write_text(str(i))
    snap = take_snapshot(tmp_path, limits=SnapshotLimits(max_entries=10))
    assert snap.truncated
    assert len(snap.entries) == 10
    assert "more than 10 entries" in snap.notes[0]


def test_too_deep_tree_is_cut_with_a_note(tmp_path: Path) -> None:
    deep = tmp_path / "/".join(["d"] * 8)
    deep.mkdir(parents=True)
    (deep / "leaf").write_text("x")
    snap = take_snapshot(tmp_path, limits=SnapshotLimits(max_depth=3))
    assert "d/d/d/d" in snap.entries
    assert "d/d/d/d/d" not in snap.entries
    assert any("nested too deeply" in note for note in snap.notes)


_UNREADABLE_SCRIPT = """
import json, sys
from pathlib import Path
from workbench.workspace.snapshot import take_snapshot
snap = take_snapshot(Path(sys.argv[1]))
print(json.dumps({"entries": sorted(snap.entries), "notes": list(snap.notes)}))
"""


def test_unreadable_folder_becomes_a_note(tmp_path: Path) -> None:
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("root reads every folder, and setpriv is missing to drop that power")
    (tmp_path / "open.txt").write_text("fine")
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "hidden.txt").write_text("x")
    locked.chmod(0)
    # root reads everything: drop the capabilities that bypass permission bits
    script = _UNREADABLE_SCRIPT
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]
    try:
        done = subprocess.run(
            [*(prefix if os.geteuid() == 0 else []), sys.executable, "-c", script, str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
    finally:
        locked.chmod(0o700)
    result = json.loads(done.stdout)
    assert result["entries"] == ["locked", "open.txt"]
    assert any("Cannot read folder 'locked'" in note for note in result["notes"])


def test_snapshot_survives_a_save_and_load_with_odd_names(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    odd = os.fsdecode(b"bad-\xff-name\nwith newline")
    (root / odd).write_text("odd")
    (root / "link").symlink_to(odd)
    snap = take_snapshot(root)
    save_snapshot(snap, tmp_path / "snap.json.gz")
    loaded = load_snapshot(tmp_path / "snap.json.gz")
    assert loaded.entries == snap.entries
    assert (loaded.root, loaded.taken_ns) == (snap.root, snap.taken_ns)


def test_text_diff_placeholders(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "bin").write_bytes(b"abc\0def")
    (root / "big.txt").write_text("x\n" * 1000)
    (root / "many.txt").write_text("y\n" * 50)
    before = take_snapshot(root, store=store)
    (root / "bin").write_bytes(b"abc\0xyz!")
    (root / "big.txt").write_text("z\n" * 1000)
    (root / "many.txt").write_text("w\n" * 50)
    changes = {c.path: c for c in diff_snapshots(before, take_snapshot(root, store=store))}
    assert text_diff(changes["bin"], store).placeholder == "Binary file: 7 bytes -> 8 bytes."
    too_big = text_diff(changes["big.txt"], store, max_bytes=100).placeholder
    assert too_big is not None and too_big.startswith("Too large")
    too_long = text_diff(changes["many.txt"], store, max_lines=10).placeholder
    assert too_long is not None and too_long.startswith("Too many lines")
    not_kept = text_diff(changes["many.txt"], BlobStore(tmp_path / "empty")).placeholder
    assert not_kept == "The content was not kept, so no diff can be shown."


def test_long_text_diff_uses_diff_u_with_the_same_hunks_as_difflib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = BlobStore(tmp_path / "blobs")
    root = tmp_path / "ws"
    root.mkdir()
    lines = [f"line {i}\n" for i in range(3000)]
    (root / "long.txt").write_text("".join(lines))
    before = take_snapshot(root, store=store)
    lines[5], lines[2500] = "changed 5\n", "changed 2500\n"
    (root / "long.txt").write_text("".join(lines[:-1]))
    (change,) = diff_snapshots(before, take_snapshot(root, store=store))
    external = text_diff(change, store).text
    monkeypatch.setattr(shutil, "which", lambda name: None)
    internal = text_diff(change, store).text
    assert external == internal
    assert external.startswith("--- a/long.txt\n+++ b/long.txt\n@@ -3,7 +3,7 @@")
    assert "-line 2999\n" in external and "+changed 2500\n" in external


def test_unchanged_entries_are_kept_as_the_same_objects(tmp_path: Path) -> None:
    _make_tree(tmp_path)
    _settle()
    before = take_snapshot(tmp_path)
    (tmp_path / "edit.txt").write_text("changed\n")
    (tmp_path / "tool.sh").chmod(0o755)
    after = take_snapshot(tmp_path, previous=before)
    kept = {path for path, entry in after.entries.items() if entry is before.entries[path]}
    assert kept == set(before.entries) - {"edit.txt", "tool.sh"}
    assert after.entries["tool.sh"].digest == before.entries["tool.sh"].digest
    assert _kinds(diff_snapshots(before, after)) == {
        "edit.txt": ChangeKind.MODIFIED,
        "tool.sh": ChangeKind.MODE_CHANGED,
    }


def test_files_written_just_before_a_snapshot_are_hashed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fresh.txt").write_text("AAAA")
    before = take_snapshot(tmp_path)  # within the racy window: its clock may hide a write
    hashed: list[int] = []

    def counting_hash(fd: int) -> str:
        hashed.append(fd)
        return hash_fd(fd)

    monkeypatch.setattr(snapshot_module, "hash_fd", counting_hash)
    after = take_snapshot(tmp_path, previous=before)
    assert len(hashed) == 1
    assert after.entries["fresh.txt"] is not before.entries["fresh.txt"]
    assert after.entries["fresh.txt"] == before.entries["fresh.txt"]
    assert diff_snapshots(before, after) == ()


def test_two_paths_never_read_alike(tmp_path: Path) -> None:
    stray_byte, backslash = os.fsdecode(b"c\xff"), "c\\xff"  # c+0xff, and c, \, x, f, f
    (tmp_path / stray_byte).write_text("one")
    (tmp_path / backslash).write_text("two")
    (tmp_path / "new\nline").write_text("three")
    before = take_snapshot(tmp_path)
    (tmp_path / stray_byte).write_text("changed")
    (tmp_path / backslash).unlink()

    changes = diff_snapshots(before, take_snapshot(tmp_path, previous=before))

    shown = {path_text(change.path): change.kind for change in changes}
    assert shown == {"c\\xff": ChangeKind.MODIFIED, "c\\\\xff": ChangeKind.DELETED}
    assert path_text("new\nline") == "new\\nline"
    assert path_text("plain/é.txt") == "plain/é.txt"


AWKWARD_NAMES = (
    "a\\b", "a\\\\b", "new\nline", "new\\nline", "tab\there", "cr\rhere", "esc\x1b[2J",
    "esc\\x1b[2J", "del\x7f", "c1\x9b", os.fsdecode(b"byte\x9b"), os.fsdecode(b"c\xff"), "c\\xff",
    "evil\u202etxt.exe", "line\u2028break", "no\xa0break", "tag\U000e0041", "plain/é.txt",
)  # fmt: skip


def test_a_shown_path_is_one_printable_line_that_names_one_path() -> None:
    shown = [path_text(name) for name in AWKWARD_NAMES]

    assert len(set(shown)) == len(AWKWARD_NAMES)
    assert all(text.isprintable() for text in shown)  # no newline, control or bidi character
    forged = path_text("notes.txt\n  deleted      important.txt")
    assert forged == "notes.txt\\n  deleted      important.txt"
    assert shown[:7] == [
        "a\\\\b", "a\\\\\\\\b", "new\\nline", "new\\\\nline", "tab\\there", "cr\\rhere",
        "esc\\x1b[2J",
    ]  # fmt: skip
    assert shown[9:12] == ["c1\\u009b", "byte\\x9b", "c\\xff"]
    assert shown[13:] == [
        "evil\\u202etxt.exe", "line\\u2028break", "no\\u00a0break", "tag\\U000e0041",
        "plain/é.txt",
    ]  # fmt: skip
