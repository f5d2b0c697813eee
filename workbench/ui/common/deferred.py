"""`DeferredPage`: a tab page built the first time it becomes current or is asked for, so a
window whose other pages show first does not pay for it (its modules and widgets) at start."""

from collections.abc import Callable
from typing import Generic, TypeVar

from PySide6.QtWidgets import QTabWidget, QWidget

Page = TypeVar("Page", bound=QWidget)


class DeferredPage(Generic[Page]):
    """The tab `title` of `tabs`: an empty placeholder until `page()` (or the tab becoming
    current) builds the page with `build`, which then takes the placeholder's place."""

    def __init__(self, tabs: QTabWidget, title: str, build: Callable[[], Page]) -> None:
        self._tabs = tabs
        self._title = title
        self._build = build
        self._placeholder = QWidget(tabs)
        self.built: Page | None = None
        tabs.addTab(self._placeholder, title)
        tabs.currentChanged.connect(self._on_current_changed)

    def page(self) -> Page:
        """The page, built now if it was not yet."""
        if self.built is None:
            self.built = self._build()
            tabs, placeholder = self._tabs, self._placeholder
            index, current = tabs.indexOf(placeholder), tabs.currentIndex()
            blocked = tabs.blockSignals(True)  # the same tab stays current: nothing changed
            tabs.removeTab(index)
            tabs.insertTab(index, self.built, self._title)
            tabs.setCurrentIndex(current)
            tabs.blockSignals(blocked)
            placeholder.deleteLater()
        return self.built

    def _on_current_changed(self, index: int) -> None:
        if self.built is None and self._tabs.widget(index) is self._placeholder:
            self.page()
