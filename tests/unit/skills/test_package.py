"""`.skill` packages: deterministic export, identical round trip, hostile zips refused."""

import io
import os
import re
import stat
import struct
import warnings
import zipfile
from pathlib import Path

import pytest

from workbench.authoring.package import (
    ImportLimits,
    PackageError,
    export_skill,
    import_skill,
)
from workbench.authoring.template import create_skill


def tree(folder: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every entry under `folder`: its permission bits and, for a file, its bytes."""
    found: dict[str, tuple[int, bytes | None]] = {}
    for path in sorted(folder.rglob("*")):
        mode = stat.S_IMODE(path.lstat().st_mode)
        found[str(path.relative_to(folder))] = (mode, path.read_bytes() if path.is_file() else None)
    return found


def make_zip(path: Path, entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate names we want
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for info, data in entries:
                archive.writestr(info, data)
    return path


def empty_dest(tmp_path: Path) -> Path:
    dest = tmp_path / "dest"
    dest.mkdir()
    return dest


SKILL_MD = b"---\nname: evil\ndescription: A skill.\n---\nBody.\n"


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    folder = create_skill(
        tmp_path / "src", "round-trip", "A skill to package.", {"scripts", "assets"}
    )
    (folder / "assets" / "data.bin").write_bytes(bytes(range(256)) * 10)
    (folder / "assets" / "private.txt").write_text("mode 600")
    (folder / "assets" / "private.txt").chmod(0o600)
    (folder / "references").mkdir(mode=0o750)
    (folder / "references").chmod(0o750)
    return folder


def test_round_trip_gives_an_identical_tree(skill: Path, tmp_path: Path) -> None:
    package = export_skill(skill, tmp_path)
    assert package == tmp_path / "round-trip.skill"
    imported = import_skill(package, tmp_path / "dest")
    assert imported == tmp_path / "dest" / "round-trip"
    assert tree(imported) == tree(skill)
    assert "references" in tree(imported)  # empty folders survive
    assert sorted(p.name for p in (tmp_path / "dest").iterdir()) == ["round-trip"]


def test_export_is_deterministic_and_leaves_out_junk(skill: Path, tmp_path: Path) -> None:
    first = export_skill(skill, tmp_path / "one.skill").read_bytes()
    for junk in ("__pycache__/x.pyc", "node_modules/a/b.js", ".git/HEAD", "scripts/run.py~"):
        (skill / junk).parent.mkdir(parents=True, exist_ok=True)
        (skill / junk).write_text("junk")
    for junk in (".DS_Store", "Thumbs.db", "scripts/.run.py.swp", "scripts/cache.pyc", ".env"):
        (skill / junk).write_text("junk")
    os.utime(skill / "SKILL.md", (1, 1))
    second = export_skill(skill, tmp_path / "two.skill")
    assert second.read_bytes() == first
    names = zipfile.ZipFile(second).namelist()
    assert names[0] == "round-trip/SKILL.md"
    assert not any("pycache" in n or "node_modules" in n or ".git/" in n for n in names)
    assert "round-trip/.env" not in names


def test_export_refuses_an_invalid_skill_unless_forced(skill: Path, tmp_path: Path) -> None:
    md = skill / "SKILL.md"
    md.write_text(md.read_text().replace("name: round-trip", "name: Round-Trip"))
    with pytest.raises(PackageError, match=r"the skill breaks the spec.*capital letters"):
        export_skill(skill, tmp_path)
    assert not list(tmp_path.glob("*.skill"))
    package = export_skill(skill, tmp_path, force=True)
    with pytest.raises(PackageError, match=r"the package.s SKILL\.md is not valid"):
        import_skill(package, tmp_path / "dest")


def test_export_refuses_links_and_a_destination_inside_the_skill(
    skill: Path, tmp_path: Path
) -> None:
    with pytest.raises(PackageError, match="is not a folder; choose where"):
        export_skill(skill, tmp_path / "missing" / "x.skill")
    with pytest.raises(PackageError, match="is inside the skill"):
        export_skill(skill, skill / "assets")
    (skill / "scripts" / "secrets").symlink_to("/etc")
    with pytest.raises(PackageError, match=r"scripts/secrets is a symbolic link"):
        export_skill(skill, tmp_path)
    assert not list(tmp_path.glob("*.skill")) and not list(tmp_path.glob(".*tmp"))


def symlink_entry() -> zipfile.ZipInfo:
    info = zipfile.ZipInfo("evil/link")
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([("evil/SKILL.md", SKILL_MD), ("evil/../../escape.txt", b"x")], "climbs out"),
        ([("evil/SKILL.md", SKILL_MD), ("/etc/evil.txt", b"x")], "absolute path"),
        ([("evil/SKILL.md", SKILL_MD), ("C:/evil.txt", b"x")], "absolute path"),
        ([("evil/SKILL.md", SKILL_MD), ("evil\\..\\x", b"x")], "backslash"),
        ([("evil/SKILL.md", SKILL_MD), (symlink_entry(), b"/etc/passwd")], "symbolic link"),
        ([("evil/SKILL.md", SKILL_MD), ("evil/SKILL.md", SKILL_MD)], "appears twice"),
        ([("evil/SKILL.md", SKILL_MD), ("other/SKILL.md", SKILL_MD)], "holds evil, other"),
        ([("SKILL.md", SKILL_MD)], "no SKILL.md/SKILL.md"),
        ([("evil/README.md", b"hi")], "no evil/SKILL.md"),
        ([("evil/SKILL.md", b"no front matter")], "SKILL.md is not valid: SKILL.md must start"),
        ([("evil/SKILL.md", SKILL_MD.replace(b"evil", b"Evil"))], "is not valid: The name"),
    ],
)
def test_hostile_or_broken_zips_are_refused_and_write_nothing(
    tmp_path: Path, entries: list[tuple[zipfile.ZipInfo | str, bytes]], message: str
) -> None:
    dest = empty_dest(tmp_path)
    package = make_zip(tmp_path / "hostile.skill", entries)
    with pytest.raises(PackageError, match=re.escape(message)):
        import_skill(package, dest)
    assert list(dest.iterdir()) == []
    assert not (tmp_path / "escape.txt").exists()


@pytest.mark.slow
def test_a_bomb_of_a_gigabyte_of_zeros_is_refused(tmp_path: Path) -> None:
    dest = empty_dest(tmp_path)
    package = tmp_path / "bomb.skill"
    with zipfile.ZipFile(package, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("evil/SKILL.md", SKILL_MD)
        with archive.open("evil/zeros.bin", "w", force_zip64=True) as out:
            chunk = bytes(1024 * 1024)
            for _ in range(1024):
                out.write(chunk)
    assert package.stat().st_size < 10 * 1024 * 1024
    with pytest.raises(PackageError, match="possible zip bomb: it would unpack to 1,024"):
        import_skill(package, dest)
    assert list(dest.iterdir()) == []


def test_a_high_ratio_entry_is_refused_by_its_ratio(tmp_path: Path) -> None:
    dest = empty_dest(tmp_path)
    package = make_zip(
        tmp_path / "ratio.skill", [("evil/SKILL.md", SKILL_MD), ("evil/z.bin", bytes(4 << 20))]
    )
    with pytest.raises(PackageError, match="expands over 200 times"):
        import_skill(package, dest)
    assert list(dest.iterdir()) == []


def test_a_header_that_lies_about_the_size_is_caught(tmp_path: Path) -> None:
    """The headers claim 10 bytes; the data inflates to 8 MiB: the stream check refuses it."""
    dest = empty_dest(tmp_path)
    package = make_zip(
        tmp_path / "liar.skill", [("evil/SKILL.md", SKILL_MD), ("evil/z.bin", bytes(8 << 20))]
    )
    data = bytearray(package.read_bytes())
    info = zipfile.ZipFile(package).getinfo("evil/z.bin")
    local = info.header_offset
    struct.pack_into("<I", data, local + 22, 10)  # local header: uncompressed size
    for offset in range(len(data) - 46):
        header = data[offset : offset + 4] == b"PK\x01\x02"
        if header and data[offset + 46 : offset + 56] == b"evil/z.bin":
            struct.pack_into("<I", data, offset + 24, 10)  # central: uncompressed size
    package.write_bytes(bytes(data))
    assert zipfile.ZipFile(package).getinfo("evil/z.bin").file_size == 10
    with pytest.raises(PackageError, match="corrupt or lies about its size"):
        import_skill(package, dest)
    assert list(dest.iterdir()) == []


def test_the_stream_is_counted_even_if_the_zip_reader_trusts_the_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CPython's zip reader stops at the header's size; a reader that did not is still caught."""
    dest = empty_dest(tmp_path)
    package = make_zip(
        tmp_path / "s.skill", [("evil/SKILL.md", SKILL_MD), ("evil/z.bin", b"small")]
    )
    real_open = zipfile.ZipFile.open

    def overflowing(self: zipfile.ZipFile, name: zipfile.ZipInfo, *args: object) -> object:
        if name.filename == "evil/z.bin":
            return io.BytesIO(bytes(3 << 20))
        return real_open(self, name)

    monkeypatch.setattr(zipfile.ZipFile, "open", overflowing)
    with pytest.raises(PackageError, match="holds more data than its header says"):
        import_skill(package, dest)
    assert list(dest.iterdir()) == []


def test_limits_on_entries_and_total_size(tmp_path: Path) -> None:
    entries: list[tuple[zipfile.ZipInfo | str, bytes]] = [("evil/SKILL.md", SKILL_MD)]
    entries += [(f"evil/f{i}.txt", os.urandom(2000)) for i in range(5)]
    package = make_zip(tmp_path / "many.skill", entries)
    dest = empty_dest(tmp_path)
    with pytest.raises(PackageError, match="has 6 entries; the limit is 5"):
        import_skill(package, dest, ImportLimits(max_entries=5))
    with pytest.raises(PackageError, match="possible zip bomb: it would unpack to"):
        import_skill(package, dest, ImportLimits(max_total_bytes=5000))
    assert list(dest.iterdir()) == []


def test_an_existing_destination_is_refused_and_kept(skill: Path, tmp_path: Path) -> None:
    package = export_skill(skill, tmp_path)
    (tmp_path / "dest" / "round-trip").mkdir(parents=True)
    (tmp_path / "dest" / "round-trip" / "mine.txt").write_text("keep")
    with pytest.raises(PackageError, match="already exists"):
        import_skill(package, tmp_path / "dest")
    assert [p.name for p in (tmp_path / "dest").iterdir()] == ["round-trip"]
    assert [p.name for p in (tmp_path / "dest" / "round-trip").iterdir()] == ["mine.txt"]


def test_not_a_zip_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plain.skill").write_text("hello")
    with pytest.raises(PackageError, match="not a readable zip file"):
        import_skill(tmp_path / "plain.skill", tmp_path / "dest")
