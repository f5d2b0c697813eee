"""`.skill` packages: exporting a skill folder as a zip, and importing one safely.

A `.skill` file is a zip holding exactly one top-level folder named like the skill, with SKILL.md
directly inside. `export_skill` refuses a skill that breaks the spec unless forced (an import
would refuse it) and writes one reproducibly and atomically, leaving out caches, junk and local
secrets (`EXCLUDED`) and refusing links and special files; `import_skill` trusts nothing in the
zip (unsafe names, links, encrypted entries, duplicates, zip bombs against `ImportLimits`),
extracts into a staging folder, validates the skill and renames it into place, or raises
`PackageError` with nothing left written.
"""

import fnmatch
import os
import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from workbench.authoring.template import atomic_file, staged_folder
from workbench.errors import SkillError, UsageError
from workbench.skills.catalog import load_skill

SUFFIX = ".skill"
EXCLUDED = (
    "__pycache__",
    "*.pyc",
    "*.pyo",
    "node_modules",
    ".git",
    ".DS_Store",
    "Thumbs.db",
    "desktop.ini",
    "*~",
    ".*.swp",
    ".*.swo",
    ".*.swx",
    ".env",  # local secrets: a skill shared as a package must not carry them
    ".env.*",
    ".#*",
    "#*#",
)
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold: fixed for reproducibility
CHUNK = 64 * 1024
_DRIVE = re.compile(r"^[A-Za-z]:")


class PackageError(SkillError):
    """A skill could not be packaged, or a `.skill` file was refused on import."""


@dataclass(frozen=True, slots=True)
class ImportLimits:
    """Caps on what an import may write: entries, total bytes, and compression ratio per entry
    (checked only for entries over `ratio_floor` bytes, since tiny files compress oddly)."""

    max_entries: int = 10_000
    max_total_bytes: int = 256 * 1024 * 1024
    max_ratio: int = 200
    ratio_floor: int = 1024 * 1024


def export_skill(skill_dir: Path, dest: Path, force: bool = False) -> Path:
    """Write `skill_dir` as a `.skill` zip and return its path.

    `dest` is the file to write, or an existing folder to write `NAME.skill` into. An existing
    file is replaced atomically. Raises `PackageError` for a skill that breaks the spec (which
    `import_skill` would refuse) unless `force`, a link or special file in the skill, a skill
    over the import limits, or a destination inside the skill.
    """
    folder = skill_dir.absolute()
    if not (folder / "SKILL.md").is_file():
        raise PackageError(f"{folder} has no SKILL.md; only a skill folder can be packaged")
    target = (dest / f"{folder.name}{SUFFIX}" if dest.is_dir() else dest).absolute()
    if not target.parent.is_dir():
        raise PackageError(f"{target.parent} is not a folder; choose where to write the package")
    if target.resolve().is_relative_to(folder.resolve()):
        raise PackageError(f"{target} is inside the skill; write the package somewhere else")
    if not force:
        _require_valid(
            folder, "the skill breaks the spec, so importing the package would be refused"
        )
    entries = _entries(folder, ImportLimits())
    with atomic_file(target) as file, zipfile.ZipFile(file, "w") as archive:
        for relative in entries:
            _add(archive, folder, relative)
    return target


def import_skill(zip_path: Path, root: Path, limits: ImportLimits = ImportLimits()) -> Path:
    """Extract the `.skill` file `zip_path` into `root`; return the new skill folder (absolute).

    Raises `PackageError` (see the module docstring for every refusal); nothing is written then.
    """
    try:
        archive = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as error:
        raise PackageError(f"{zip_path} is not a readable zip file ({error})") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_entries:
            raise PackageError(
                f"{zip_path.name} has {len(infos):,} entries; the limit is {limits.max_entries:,}"
            )
        paths = _checked_paths(infos)
        top = _top_folder(paths)
        claimed = sum(info.file_size for info in infos)
        if claimed > limits.max_total_bytes:
            raise PackageError(_bomb(f"it would unpack to {_mib(claimed)}", limits))
        for info in infos:
            _check_ratio(info, info.file_size, limits)
        target = root.absolute() / top
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with staged_folder(target) as staging:
                _extract(archive, infos, paths, staging, limits)
                _require_valid(staging, "the package's SKILL.md is not valid")
        except UsageError as error:  # the destination exists
            raise PackageError(str(error)) from None
    return target


def is_excluded(name: str) -> bool:
    """True when a file or folder of this name is left out of packages (`EXCLUDED`)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in EXCLUDED)


def _entries(folder: Path, limits: ImportLimits) -> list[PurePosixPath]:
    """Every folder and file to package, relative to `folder`, in name order; refuses a skill
    that could not be imported again (over the entry or size limits)."""
    found = []
    total = 0
    pending = [PurePosixPath()]
    while pending:
        relative = pending.pop()
        with os.scandir(folder / relative) as scan:
            children = sorted(scan, key=lambda entry: entry.name)
        for entry in children:
            if is_excluded(entry.name):
                continue
            path = relative / entry.name
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                raise PackageError(
                    f"{path} is a symbolic link; a package holds no links. "
                    "Replace it with the file it points to, or remove it."
                )
            if stat.S_ISDIR(mode):
                pending.append(path)
            elif stat.S_ISREG(mode):
                total += entry.stat(follow_symlinks=False).st_size
            else:
                raise PackageError(f"{path} is not a regular file; remove it to package the skill")
            found.append(path)
            if len(found) > limits.max_entries or total > limits.max_total_bytes:
                raise PackageError(
                    f"the skill is over {limits.max_entries:,} files or "
                    f"{_mib(limits.max_total_bytes)}; too large to package"
                )
    return sorted(found)


def _add(archive: zipfile.ZipFile, folder: Path, relative: PurePosixPath) -> None:
    path = folder / relative
    mode = path.stat().st_mode
    is_dir = stat.S_ISDIR(mode)
    name = f"{folder.name}/{relative}" + ("/" if is_dir else "")
    info = zipfile.ZipInfo(name, ZIP_TIME)
    info.create_system = 3  # Unix, so external_attr carries the mode
    info.external_attr = (stat.S_IFMT(mode) | stat.S_IMODE(mode) & 0o777) << 16
    if is_dir:
        info.external_attr |= 0x10  # the MS-DOS directory flag
        archive.writestr(info, b"")
        return
    info.compress_type = zipfile.ZIP_DEFLATED
    with path.open("rb") as source, archive.open(info, "w") as target:
        while chunk := source.read(CHUNK):
            target.write(chunk)


def _checked_paths(infos: list[zipfile.ZipInfo]) -> list[PurePosixPath]:
    """Each entry's safe relative path; refuses unsafe names, links, duplicates, encryption."""
    paths = []
    seen: set[PurePosixPath] = set()
    for info in infos:
        name = info.filename
        if "\\" in name or "\0" in name:
            raise PackageError(f"entry {name!r} has a backslash or NUL in its name; refused")
        if name.startswith("/") or _DRIVE.match(name):
            raise PackageError(f"entry {name!r} has an absolute path; refused")
        parts = name.rstrip("/").split("/")
        if any(part in ("", ".", "..") for part in parts):
            raise PackageError(f"entry {name!r} climbs out of its folder (.. or an empty part)")
        kind = stat.S_IFMT(info.external_attr >> 16)
        if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
            what = "a symbolic link" if kind == stat.S_IFLNK else "a special file"
            raise PackageError(f"entry {name!r} is {what}; packages may hold only files")
        if info.flag_bits & 0x1:
            raise PackageError(f"entry {name!r} is encrypted; refused")
        path = PurePosixPath(*parts)
        if path in seen:
            raise PackageError(f"entry {name!r} appears twice; refused")
        seen.add(path)
        paths.append(path)
    files = {path for path, info in zip(paths, infos, strict=True) if not info.is_dir()}
    for path in paths:  # a file may not also be the parent of another entry
        if any(parent in files for parent in path.parents):
            raise PackageError(f"entry {path} lies inside a file entry; refused")
    return paths


def _top_folder(paths: list[PurePosixPath]) -> str:
    tops = sorted({path.parts[0] for path in paths})
    if len(tops) != 1:
        shown = ", ".join(tops[:5]) or "nothing"
        raise PackageError(
            f"a .skill file holds one folder with SKILL.md inside; this one holds {shown}"
        )
    if PurePosixPath(tops[0], "SKILL.md") not in paths:
        raise PackageError(f"the package has no {tops[0]}/SKILL.md, so it is not a skill")
    return tops[0]


def _extract(
    archive: zipfile.ZipFile,
    infos: list[zipfile.ZipInfo],
    paths: list[PurePosixPath],
    staging: Path,
    limits: ImportLimits,
) -> None:
    """Write every entry under `staging`, counting real bytes as they stream."""
    total = 0
    folder_modes: list[tuple[Path, int]] = []
    for info, path in sorted(zip(infos, paths, strict=True), key=lambda pair: pair[1]):
        target = staging.joinpath(*path.parts[1:])
        mode = stat.S_IMODE(info.external_attr >> 16) & 0o777
        if info.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            folder_modes.append((target, (mode or 0o755) | 0o700))
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        written = 0
        try:
            with (
                archive.open(info) as source,
                os.fdopen(os.open(target, flags, 0o600), "wb") as out,
            ):
                while chunk := source.read(CHUNK):
                    written += len(chunk)
                    total += len(chunk)
                    _check_stream(info, written, total, limits)
                    out.write(chunk)
        except zipfile.BadZipFile as error:
            raise PackageError(
                f"entry {info.filename!r} is corrupt or lies about its size ({error})"
            ) from None
        target.chmod(mode or 0o644)
    for folder, mode in sorted(folder_modes, reverse=True):
        folder.chmod(mode)


def _check_stream(info: zipfile.ZipInfo, written: int, total: int, limits: ImportLimits) -> None:
    if written > info.file_size:
        raise PackageError(f"entry {info.filename!r} holds more data than its header says")
    if total > limits.max_total_bytes:
        raise PackageError(_bomb(f"it unpacks to over {_mib(limits.max_total_bytes)}", limits))
    _check_ratio(info, written, limits)


def _check_ratio(info: zipfile.ZipInfo, size: int, limits: ImportLimits) -> None:
    if size > limits.ratio_floor and size > limits.max_ratio * max(info.compress_size, 1):
        raise PackageError(
            _bomb(f"entry {info.filename!r} expands over {limits.max_ratio} times", limits)
        )


def _require_valid(folder: Path, refusal: str) -> None:
    skill = load_skill(folder)
    if not skill.valid:
        problems = "; ".join(d.message for d in skill.diagnostics if d.is_error)
        raise PackageError(f"{refusal}: {problems}")


def _bomb(reason: str, limits: ImportLimits) -> str:
    return (
        f"refused as a possible zip bomb: {reason} (limits: {_mib(limits.max_total_bytes)} "
        f"in all, {limits.max_ratio}:1 compression per entry)"
    )


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):,.1f} MiB"
