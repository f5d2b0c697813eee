"""Reading a skill's scripts for the capability preview: bounded, for hostile skills.

`read_scripts(folder)` returns every script of a skill folder (relative path, language, text)
and what it did not read, and why. At most `MAX_ENTRIES` folder entries are looked at,
`MAX_FILES` scripts and `MAX_FILE_BYTES` of each; regular files only, opened with O_NOFOLLOW
(links are never followed); binary files and junk folders are skipped. A script is known by
its suffix, else by its `#!` line.
"""

import itertools
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from workbench.authoring.package import is_excluded

MAX_FILES = 200
MAX_FILE_BYTES = 256 * 1024
MAX_ENTRIES = 20_000  # folder entries looked at in all
SCRIPT_SUFFIXES = {".py": "python", ".sh": "shell", ".bash": "shell", ".js": "javascript",
                   ".mjs": "javascript", ".cjs": "javascript"}  # fmt: skip
_SHEBANG = re.compile(
    rb"^#!\s*(?:\S*/)?(?:env\s+(?:-\S+\s+)*)?(python[0-9.]*|bash|sh|dash|node|nodejs)(?:\s|$)"
)
INTERPRETERS = {"python3": "python", "python": "python", "sh": "shell", "bash": "shell",
                "node": "javascript", "nodejs": "javascript"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class ScriptFile:
    """One script of a skill: its path relative to the skill folder, language and text."""

    relative: str
    language: str
    text: str


def read_scripts(folder: Path) -> tuple[list[ScriptFile], list[str]]:
    """The scripts under `folder` and what was not read, and why (see the module doc)."""
    scripts: list[ScriptFile] = []
    skipped: list[str] = []
    for path in _candidates(folder, skipped):
        relative = str(path.relative_to(folder))
        data = read_bounded(path, skipped, relative)
        if data is None or (language := _language(path, data)) is None:
            continue
        if len(scripts) >= MAX_FILES:
            skipped.append(f"{relative} and the rest: only {MAX_FILES} scripts are read")
            break
        scripts.append(ScriptFile(relative, language, data.decode("utf-8", errors="replace")))
    return scripts, skipped


def _candidates(folder: Path, skipped: list[str]) -> list[Path]:
    """Regular files under `folder` (links never followed, junk folders left out), bounded."""
    found: list[Path] = []
    pending = [folder]
    room = MAX_ENTRIES
    while pending and room > 0:
        current = pending.pop()
        try:
            with os.scandir(current) as scan:
                entries = sorted(itertools.islice(scan, room), key=lambda entry: entry.name)
        except OSError:
            continue
        room -= len(entries)
        if room <= 0:
            skipped.append(f"the rest: only {MAX_ENTRIES:,} folder entries are looked at")
        for entry in entries:
            if is_excluded(entry.name):
                continue
            if entry.is_symlink():
                if len(skipped) < MAX_FILES:
                    skipped.append(f"{Path(entry.path).relative_to(folder)}: a link, not followed")
            elif entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False) and entry.name != "SKILL.md":
                found.append(Path(entry.path))
    return sorted(found)


def read_bounded(path: Path, skipped: list[str], relative: str) -> bytes | None:
    """A regular text file's first `MAX_FILE_BYTES` (whole lines), never through a link; None
    for anything else (what and why appended to `skipped` when it is worth saying)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        with os.fdopen(os.open(path, flags), "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return None
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        skipped.append(f"{relative}: not readable ({error.strerror})")
        return None
    if b"\0" in data[:8192]:
        return None  # binary: assets, images, compiled code
    if len(data) > MAX_FILE_BYTES:
        skipped.append(f"{relative}: only the first {MAX_FILE_BYTES // 1024} KiB were read")
        data = data[: data.rfind(b"\n") + 1]
    return data


def _language(path: Path, data: bytes) -> str | None:
    if path.suffix in SCRIPT_SUFFIXES:
        return SCRIPT_SUFFIXES[path.suffix]
    match = _SHEBANG.match(data)
    if match is None:
        return None
    word = match.group(1).decode()
    return "python" if word.startswith("python") else INTERPRETERS.get(word, "shell")
