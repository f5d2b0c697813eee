"""`DataLayout`: where the run history, kept file contents, run folders and workspaces live."""

import os
from dataclasses import dataclass
from pathlib import Path

from workbench.executors.process.ownership import can_reach
from workbench.platform.paths import data_dir
from workbench.workspace.blobs import BlobStore

BEFORE_SNAPSHOT = "workspace-before.json.gz"
AFTER_SNAPSHOT = "workspace-after.json.gz"
RESULT_FILE = "result.json"  # a run's result, when the history could not record it
RESTORED_SNAPSHOT = "workspace-restored.json.gz"  # as the last restore of the run left it
SHARED_WORKSPACES = Path("/var/tmp/skill-workbench/workspaces")
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

    @property
    def fresh_workspaces(self) -> Path:
        """The folder of the workspaces made for runs that were not given one (and of a
        container pool's spare folders).

        It sits in the data folder, except when the app runs as root and other users cannot
        enter the data folder (root's home is private): the hardened posture then runs the
        command as a throwaway uid, which must reach the workspace, so it is
        /var/tmp/skill-workbench/workspaces instead.
        """
        if os.geteuid() == 0 and not can_reach(_existing(self.root), NOBODY, NOBODY):
            return SHARED_WORKSPACES
        return self.root / "workspaces"

    def fresh_workspace(self, run_id: str) -> Path:
        """The workspace folder made for a run that was not given one."""
        return self.fresh_workspaces / run_id


def _existing(path: Path) -> Path:
    """`path`, or its nearest ancestor that exists."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
