"""`DataLayout`: where the run history, kept file contents, run folders and workspaces live,
and the lock that keeps a sweep of the kept files from meeting a run in progress."""

import fcntl
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.executors.process.ownership import can_reach
from workbench.platform.paths import data_dir
from workbench.workspace.blobs import BlobStore

if TYPE_CHECKING:
    from workbench.environments.store import EnvironmentStore

BEFORE_SNAPSHOT = "workspace-before.json.gz"
AFTER_SNAPSHOT = "workspace-after.json.gz"
SHARED = Path("/var/tmp/skill-workbench")  # for what a throwaway uid must reach, when root
RESULT_FILE = "result.json"  # a run's result, when the history could not record it
RESTORED_SNAPSHOT = "workspace-restored.json.gz"  # as the last restore of the run left it
NOBODY = 65534  # any uid other than the folders' owners: only the "other" bits count


@dataclass(frozen=True, slots=True)
class DataLayout:
    """The folders under one data root (the user's data folder, or a test's tmp folder)."""

    root: Path

    @classmethod
    def default(cls) -> "DataLayout":
        """The layout under the user's data folder."""
        return cls(data_dir())

    @property
    def history_path(self) -> Path:
        """The sqlite3 run history."""
        return self.root / "history.sqlite3"

    @property
    def blobs(self) -> BlobStore:
        """The content-addressed copies of workspace files, shared by every run."""
        return BlobStore(self.root / "blobs")

    @property
    def runs_root(self) -> Path:
        """The parent of every run's folder."""
        return self.root / "runs"

    def run_dir(self, run_id: str) -> Path:
        """One run's folder: its workspace snapshots and the executor's logs and home."""
        return self.runs_root / run_id

    def hold_run_lock(self) -> int:
        """Share the data folder's run lock for a run in progress (waits while a sweep of the
        kept files holds it); returns the descriptor that holds it: closing it lets go."""
        fd = self._lock_fd()
        fcntl.flock(fd, fcntl.LOCK_SH)
        return fd

    def try_sweep_lock(self) -> int | None:
        """Take the run lock alone, for sweeping the kept files; None at once when a run in
        progress (of any process) holds it."""
        fd = self._lock_fd()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    def _lock_fd(self) -> int:
        self.root.mkdir(parents=True, exist_ok=True)
        return os.open(self.root / "runs.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def is_fresh_workspace(self, run_id: str, workspace: Path) -> bool:
        """Whether `workspace` is the folder `fresh_workspace` made for the run `run_id` (the
        workbench's own, to remove with the run; never a folder of the user's)."""
        return workspace in (self.root / "workspaces" / run_id, SHARED / "workspaces" / run_id)

    @property
    def fresh_workspaces(self) -> Path:
        """The folder of the workspaces made for runs that were not given one (and of a
        container pool's spare folders).

        It sits in the data folder, except when the app runs as root and other users cannot
        enter the data folder (root's home is private): the hardened posture then runs the
        command as a throwaway uid, which must reach the workspace, so it is
        /var/tmp/skill-workbench/workspaces instead.
        """
        if self._private():
            return SHARED / "workspaces"
        return self.root / "workspaces"

    def fresh_workspace(self, run_id: str) -> Path:
        """The workspace folder made for a run that was not given one."""
        return self.fresh_workspaces / run_id

    @property
    def environments(self) -> Path:
        """The built skill environments (`workbench.environments.store`).

        Commands read them, so when the hardened posture's throwaway uid could not enter the
        data folder (root's) they go under /var/tmp/skill-workbench instead, in a folder named
        after the data folder (each data folder keeps its own).
        """
        if self._private():
            digest = hashlib.sha256(os.fsencode(self.root.absolute())).hexdigest()[:12]
            return SHARED / f"environments-{digest}"
        return self.root / "environments"

    def environment_store(self) -> "EnvironmentStore":
        """The store of `environments`; what each image's Python is is remembered in the data
        folder itself (a look-up before a run writes nothing where environments live)."""
        from workbench.environments.store import EnvironmentStore  # it imports docker-py

        return EnvironmentStore(self.environments, self.root / "image-pythons.json")

    def _private(self) -> bool:
        """True when the app runs as root and other users cannot enter the data folder."""
        return os.geteuid() == 0 and not can_reach(_existing(self.root), NOBODY, NOBODY)


def _existing(path: Path) -> Path:
    """`path`, or its nearest ancestor that exists."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
