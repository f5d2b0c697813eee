"""Watching skills on disk: the catalog roots and the selected skill's folder, debounced.

A `QFileSystemWatcher` watches each root (a skill appearing or going away), and the selected
skill's folder, its SKILL.md and its direct subfolders (an edit, a new script). Editors save
by replacing the file, which ends a watch on it, so every event re-arms the watches. Bursts of
events are gathered for `DEBOUNCE_MS` and reported once. A `Fingerprint` (modification time,
size, content hash) tells whether a file really differs from what was last read.
"""

import contextlib
import hashlib
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal

from workbench.skills.reading import SKILL_MD_NAMES

DEBOUNCE_MS = 300


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What SKILL.md looked like on disk: modification time, size and content hash."""

    mtime_ns: int
    size: int
    sha256: str


def fingerprint(path: Path) -> Fingerprint | None:
    """The fingerprint of the file at `path`, or None when it cannot be read."""
    try:
        status = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
    return Fingerprint(status.st_mtime_ns, status.st_size, digest)


class SkillWatcher(QObject):
    """Reports changes under the catalog roots and in one skill folder.

    Signals:
        roots_changed(): a root gained or lost an entry (a skill may have come or gone).
        skill_changed(object): the watched skill folder (a `Path`) or a file in it changed.
    """

    roots_changed = Signal()
    skill_changed = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._watcher = QFileSystemWatcher(self)
        self._roots: list[Path] = []
        self._skill: Path | None = None
        self._root_hit = False
        self._skill_hit = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._connect_signals()

    def _connect_signals(self) -> None:
        self._watcher.directoryChanged.connect(self.on_watcher_changed)
        self._watcher.fileChanged.connect(self.on_watcher_changed)
        self._timer.timeout.connect(self.on_timer_timeout)

    def set_roots(self, roots: list[Path]) -> None:
        """Watch these catalog roots (missing ones are skipped)."""
        self._roots = list(roots)
        self._rearm()

    def set_skill(self, folder: Path | None) -> None:
        """Watch this skill folder instead of the previous one (None: no skill)."""
        self._skill = folder
        self._rearm()

    def watched(self) -> list[str]:
        """Every path under watch (folders and files)."""
        return self._watcher.directories() + self._watcher.files()

    def on_watcher_changed(self, path: str) -> None:
        changed = Path(path)
        if self._skill is not None and changed.is_relative_to(self._skill):
            self._skill_hit = True
        if changed in self._roots:
            self._root_hit = True
        self._timer.start()

    def on_timer_timeout(self) -> None:
        self._rearm()
        root_hit, skill_hit = self._root_hit, self._skill_hit
        self._root_hit = self._skill_hit = False
        if root_hit:
            self.roots_changed.emit()
        if skill_hit and self._skill is not None:
            self.skill_changed.emit(self._skill)

    def _rearm(self) -> None:
        wanted = {str(root) for root in self._roots if root.is_dir()}
        if self._skill is not None and self._skill.is_dir():
            wanted.add(str(self._skill))
            wanted.update(str(self._skill / name) for name in SKILL_MD_NAMES)
            with contextlib.suppress(OSError):
                wanted.update(str(p) for p in self._skill.iterdir() if p.is_dir())
        wanted = {path for path in wanted if Path(path).exists()}
        if files := self._watcher.files():  # a replaced file leaves a watch on the old inode
            self._watcher.removePaths(files)
        current = set(self._watcher.directories())
        if stale := sorted(current - wanted):
            self._watcher.removePaths(stale)
        if fresh := sorted(wanted - current):
            self._watcher.addPaths(fresh)
