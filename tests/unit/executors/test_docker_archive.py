"""The archive streams: a workspace survives the round trip, a hostile archive writes nothing
outside the staging folder and is named in the answer."""

import io
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.workspace.conftest import _listing as tree_listing
from workbench.executors.docker.archive import ArchiveTooLarge, Packer, unpack
from workbench.workspace.snapshot import take_snapshot

ODD_NAMES = ["line\nbreak", "tab\there", "back\\slash", "-dash", "spa ce", "bad\udcffbyte", "é"]


def _in_chunks(data: bytes, size: int = 777) -> Iterator[bytes]:
    return (data[i : i + size] for i in range(0, len(data), size))


def _as_engine_sends(root: Path, top: str = "workspace") -> bytes:
    """The tar an engine's archive API sends for a folder: entries under its base name."""
    out = io.BytesIO()
    with tarfile.open(
        fileobj=out, mode="w", format=tarfile.GNU_FORMAT, errors="surrogateescape"
    ) as tar:
        tar.add(root, arcname=top)
    return out.getvalue()


def test_a_packed_workspace_unpacks_the_same(tmp_path: Path) -> None:
    workspace, staging = tmp_path / "ws", tmp_path / "staging"
    (workspace / "sub" / "deeper").mkdir(parents=True)
    staging.mkdir()
    for name in ODD_NAMES:
        (workspace / os.fsdecode(os.fsencode(name))).write_bytes(
            name.encode(errors="surrogateescape")
        )
    (workspace / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024 + 5))
    (workspace / "run.sh").write_text("#!/bin/sh\n")
    (workspace / "run.sh").chmod(0o750)
    (workspace / "sub" / "link").symlink_to("../run.sh")
    (workspace / "sub" / "out").symlink_to("/etc/passwd")  # kept as a link, never followed
    (workspace / "sub" / "deeper").chmod(0o500)
    os.mkfifo(workspace / "fifo")
    sent: list[int] = []
    packer = Packer(
        workspace, list(take_snapshot(workspace).entries.values()), (1000, 1000), sent.append
    )
    tar = b"".join(packer.chunks())
    assert packer.skipped == ["fifo"]
    assert sent[-1] == packer.sent_bytes > 3 * 1024 * 1024

    with tarfile.open(fileobj=io.BytesIO(tar)) as members:  # as the engine unpacks it
        owners = {(m.uid, m.gid) for m in members}
        assert owners == {(1000, 1000)}
        if hasattr(tarfile, "fully_trusted_filter"):  # filters came with Python 3.11.4
            members.extraction_filter = tarfile.fully_trusted_filter  # as the engine unpacks
        members.extractall(staging / "workspace")
    (workspace / "fifo").unlink()
    assert tree_listing(staging / "workspace") == tree_listing(workspace)

    back = tmp_path / "back"
    back.mkdir()
    unpacked = unpack(_in_chunks(_as_engine_sends(workspace)), back, "workspace", 1 << 30)
    assert unpacked.refused == {}
    assert tree_listing(back) == tree_listing(workspace)


def _hostile(members: list[tarfile.TarInfo]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for info in members:
            data = b"x" * info.size
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return out.getvalue()


def _member(
    name: str, kind: bytes = tarfile.REGTYPE, size: int = 1, link: str = ""
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname, info.mode = (
        kind,
        size if kind == tarfile.REGTYPE else 0,
        link,
        0o644,
    )
    return info


def test_hostile_entries_are_refused_and_named(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    staging = tmp_path / "staging"
    staging.mkdir()
    members = [
        _member("workspace", tarfile.DIRTYPE),
        _member("/etc/cron.d/evil"),
        _member(f"workspace/../../{outside.name}/escaped"),
        _member("other-top/file"),
        _member("workspace/out", tarfile.SYMTYPE, link=str(outside)),
        _member("workspace/out/through-the-link"),
        _member("workspace/hard", tarfile.LNKTYPE, link="/etc/passwd"),
        _member("workspace/hard2", tarfile.LNKTYPE, link="workspace/../x"),
        _member("workspace/dev", tarfile.CHRTYPE),
        _member("workspace/fifo", tarfile.FIFOTYPE),
        _member("workspace/ok.txt"),
        _member("workspace/ok.txt"),
        _member("workspace/suid"),
        _member("workspace/same", tarfile.LNKTYPE, link="workspace/ok.txt"),
    ]
    members[-2].mode = 0o4755

    unpacked = unpack(_in_chunks(_hostile(members)), staging, "workspace", 1 << 20)

    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in staging.iterdir()) == ["ok.txt", "out", "same", "suid"]
    assert (staging / "out").readlink() == outside  # a link, as the command left it
    assert (staging / "suid").stat().st_mode & 0o7777 == 0o755
    assert (staging / "same").read_bytes() == b"x"
    assert set(unpacked.refused) == {
        "/etc/cron.d/evil",
        f"workspace/../../{outside.name}/escaped",
        "other-top/file",
        "out/through-the-link",
        "hard",
        "hard2",
        "dev",
        "fifo",
        "ok.txt",
    }
    assert "'dev' (a device, FIFO or other special file)" in unpacked.notes(most=20)


def test_more_content_than_the_limit_stops_the_unpacking(tmp_path: Path) -> None:
    members = [_member("workspace/a", size=600), _member("workspace/b", size=600)]
    with pytest.raises(ArchiveTooLarge):
        unpack(_in_chunks(_hostile(members)), tmp_path, "workspace", 1000)


def test_a_cut_archive_is_an_error_not_a_short_copy(tmp_path: Path) -> None:
    data = _hostile([_member("workspace/a", size=5000)])
    with pytest.raises((tarfile.TarError, EOFError)):
        unpack(_in_chunks(data[:3000]), tmp_path, "workspace", 1 << 20)
