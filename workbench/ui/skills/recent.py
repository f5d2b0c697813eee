"""Open Recent: the skill folders the user opened, newest first, kept in `QSettings`, and the
menu that offers them again; plus the folders a drag and drop carries."""

from pathlib import Path

from PySide6.QtCore import QObject, QSettings, QUrl, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QWidget

MAX_RECENT = 10
SETTINGS_KEY = "recent/folders"


class RecentFolders(QObject):
    """The Open Recent menu.

    Signals:
        folder_chosen(Path): the user picked a remembered folder.
    """

    folder_chosen = Signal(Path)

    def __init__(self, settings: QSettings, parent: QWidget) -> None:
        super().__init__(parent)
        self._settings = settings
        self.menu = QMenu("Open &Recent", parent)
        self.menu.triggered.connect(self.on_menu_triggered)
        self._rebuild()

    def remember(self, folder: Path) -> None:
        """Put `folder` first in the list (once), keeping at most `MAX_RECENT`."""
        recent = [str(folder)] + [item for item in self._recent() if item != str(folder)]
        self._settings.setValue(SETTINGS_KEY, recent[:MAX_RECENT])
        self._rebuild()

    def on_menu_triggered(self, action: QAction) -> None:
        folder = action.data()
        if isinstance(folder, str):
            self.folder_chosen.emit(Path(folder))
        else:  # "Clear Recent"
            self._settings.setValue(SETTINGS_KEY, [])
            self._rebuild()

    def _recent(self) -> list[str]:
        value = self._settings.value(SETTINGS_KEY, [])
        if isinstance(value, str):
            return [value]
        return [str(item) for item in value] if isinstance(value, list) else []

    def _rebuild(self) -> None:
        self.menu.clear()
        recent = self._recent()
        for folder in recent:
            action = self.menu.addAction(folder.replace("&", "&&"))
            action.setData(folder)
        if recent:
            self.menu.addSeparator()
            self.menu.addAction("Clear Recent")
        self.menu.setEnabled(bool(recent))


def dropped_folders(urls: list[QUrl]) -> list[Path]:
    """The local folders among dropped `urls`."""
    paths = [Path(url.toLocalFile()) for url in urls if url.isLocalFile()]
    return [path for path in paths if path.is_dir()]
