"""Reading a skill's SKILL.md safely: bounded in size, never blocking, never leaving the skill.

A hostile skill may make SKILL.md a FIFO, a device, a link to /dev/zero or to a file outside the
skill, or a gigabyte of zeros. `read_skill_md` checks the file type with `stat` before opening,
opens with O_NONBLOCK and O_NOFOLLOW, checks again on the open descriptor, reads at most
`MAX_SKILL_MD_BYTES`, and decodes invalid UTF-8 with replacement characters. Whatever goes wrong
becomes a diagnostic; nothing here raises for bad content.
"""

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from workbench.skills.diagnostics import Code, Diagnostic, diagnostic

MAX_SKILL_MD_BYTES = 1024 * 1024
SKILL_MD_NAMES = ("SKILL.md", "skill.md")  # skills-ref also accepts the lower-case name


@dataclass(frozen=True, slots=True)
class SkillText:
    """What reading SKILL.md gave: its path, its text (None if unreadable) and the problems."""

    path: Path
    text: str | None
    diagnostics: tuple[Diagnostic, ...]


class _Refused(Exception):
    """SKILL.md is not something the catalog will read; carries the diagnostic saying why."""

    def __init__(self, problem: Diagnostic) -> None:
        super().__init__(problem.message)
        self.problem = problem


def find_skill_md(folder: Path) -> Path | None:
    """The SKILL.md of `folder` (even a dangling link or a FIFO counts as present), or None."""
    for name in SKILL_MD_NAMES:
        try:
            os.lstat(folder / name)
        except OSError:
            continue
        return folder / name
    return None


def read_skill_md(folder: Path) -> SkillText:
    """Read the SKILL.md of `folder` within the size cap, turning every problem into diagnostics."""
    path = find_skill_md(folder)
    if path is None:
        missing = folder / SKILL_MD_NAMES[0]
        if not folder.is_dir():
            message = f"{folder} is not a folder; a skill is a folder holding a SKILL.md."
            return SkillText(missing, None, (diagnostic(Code.NOT_A_FOLDER, message, folder),))
        message = "The folder has no SKILL.md, so it is not a skill."
        return SkillText(missing, None, (diagnostic(Code.MISSING_SKILL_MD, message, missing),))
    try:
        data, size = _read_capped(_target_inside(folder, path), path)
    except _Refused as refused:
        return SkillText(path, None, (refused.problem,))
    except OSError as error:
        message = f"SKILL.md could not be read: {error.strerror or error}."
        return SkillText(path, None, (diagnostic(Code.UNREADABLE, message, path),))
    problems: list[Diagnostic] = []
    if path.name != SKILL_MD_NAMES[0]:
        message = f"The file is named {path.name}; the spec names it SKILL.md, in capitals."
        problems.append(diagnostic(Code.LOWERCASE_FILENAME, message, path))
    if size > MAX_SKILL_MD_BYTES:
        message = (
            f"SKILL.md is {_mib(size)}; only its first {_mib(MAX_SKILL_MD_BYTES)} were read. "
            "An agent loads the whole file into its context, so keep it small."
        )
        problems.append(diagnostic(Code.SKILL_MD_TOO_LARGE, message, path))
        cut = data.rfind(b"\n", 0, MAX_SKILL_MD_BYTES)
        data = data[: cut + 1] if cut >= 0 else data[:MAX_SKILL_MD_BYTES]
    text, bad_utf8 = _decode(data, path)
    problems.extend(bad_utf8)
    return SkillText(path, text, tuple(problems))


def _target_inside(folder: Path, path: Path) -> Path:
    """The regular file `path` names, following a link only if it stays inside the skill."""
    target = path
    if stat.S_ISLNK(os.lstat(path).st_mode):
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError) as error:  # RuntimeError: a link loop on Python 3.11
            message = f"{path.name} is a broken or looping symbolic link ({error})."
            raise _Refused(diagnostic(Code.SKILL_MD_LINK, message, path)) from None
        if not target.is_relative_to(folder.resolve()):
            message = (
                f"{path.name} is a symbolic link to {target}, outside the skill folder; "
                "the workbench never follows links out of a skill."
            )
            raise _Refused(diagnostic(Code.SKILL_MD_LINK, message, path))
    _require_regular(target.stat().st_mode, path)
    return target


def _require_regular(mode: int, path: Path) -> None:
    if not stat.S_ISREG(mode):
        message = (
            f"{path.name} is {_file_type(mode)}, not a regular file; "
            "the workbench does not open it."
        )
        raise _Refused(diagnostic(Code.NOT_A_REGULAR_FILE, message, path))


def _read_capped(target: Path, path: Path) -> tuple[bytes, int]:
    """Up to MAX_SKILL_MD_BYTES + 1 bytes of `target`, and the file's full size."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(target, flags), "rb") as file:
        status = os.fstat(file.fileno())
        _require_regular(status.st_mode, path)  # it may have been swapped since the stat
        return file.read(MAX_SKILL_MD_BYTES + 1), status.st_size


def _decode(data: bytes, path: Path) -> tuple[str, list[Diagnostic]]:
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        message = (
            f"SKILL.md is not valid UTF-8 (first bad byte at offset {error.start}); "
            "the bad bytes are shown as \N{REPLACEMENT CHARACTER}. Save the file as UTF-8."
        )
        text = data.decode("utf-8", errors="replace")
        return text, [diagnostic(Code.INVALID_UTF8, message, path, line)]


def _file_type(mode: int) -> str:
    kinds = {
        stat.S_ISDIR: "a folder",
        stat.S_ISFIFO: "a FIFO (named pipe)",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISSOCK: "a socket",
    }
    return next((text for test, text in kinds.items() if test(mode)), "a special file")


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):,.1f} MiB"
