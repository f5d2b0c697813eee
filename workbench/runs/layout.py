"""`DataLayout`: where the run history, kept file contents, run folders and workspaces live."""

from dataclasses import dataclass
from pathlib import Path

from workbench.paths import data_dir
from workbench.workspace.blobs import BlobStore

BEFORE_SNAPSHOT = "workspace-before.json.gz"
AFTER_SNAPSHOT = "workspace-after.json.gz"


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

    def fresh_workspace(self, run_id: str) -> Path:
        """The workspace folder made for a run that was not given one."""
        return self.root / "workspaces" / run_id
