"""The main window: composes the skill browser, skill view, run panel and posture picker.

It owns the menus, drag and drop of skill folders and the saved window layout (in the injected
`QSettings`; Open Recent is `RecentFolders`, the status bar's labels `StatusLine`), and wires
its parts together in `_connect_signals()` (the Compare and Lab pages, built when first shown,
in `_join_page()`): the parts never call each other. Every part starts its background work
through its own `Tasks`, whose errors this window shows in the message bar; `shutdown()` ends
them all.
"""

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QSettings, QSize, Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QMainWindow,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.ansi import reveal_bidi
from workbench.postures.model import Availability, PostureId
from workbench.runs.service import CompletedRun
from workbench.skills import Skill
from workbench.ui.authoring.editor import SkillEditor
from workbench.ui.authoring.newskill import AuthoringActions
from workbench.ui.common.deferred import DeferredPage
from workbench.ui.common.messagebar import MessageBar
from workbench.ui.common.tasks import Tasks, loop_running
from workbench.ui.history.view import HistoryView
from workbench.ui.postures.picker import PosturePicker
from workbench.ui.run.panel import RunPanel
from workbench.ui.services import PostureProbe, Services
from workbench.ui.skills.browser import SkillBrowser
from workbench.ui.skills.recent import RecentFolders, dropped_folders
from workbench.ui.skills.view import SkillView
from workbench.ui.statusline import StatusLine
from workbench.ui.theme import icon

if TYPE_CHECKING:  # built when first shown (`DeferredPage`): their modules load then
    from workbench.ui.compare.view import CompareView
    from workbench.ui.lab.view import LabView

STATE_VERSION = 2  # the layout of this version: older saved sizes do not apply
TITLE = "Skill Workbench"
FIRST_SIZE = QSize(1400, 860)  # the first launch's size, cut to the screen's free area


class MainWindow(QMainWindow):
    """Skill list on the left, the selected skill above its run panel in the middle, postures
    on the right.

    Signals:
        closed(): the user closed the window (the app's main coroutine ends on it).
    """

    closed = Signal()

    def __init__(self, services: Services, settings: QSettings) -> None:
        super().__init__()
        self._services = services
        self._settings = settings
        self._roots: list[Path] = list(services.roots)
        self.tasks = Tasks(self)
        self.setWindowTitle(TITLE)
        self.setWindowIcon(icon("workbench"))
        self.setAcceptDrops(True)

        self.message_bar = MessageBar(self)
        self.browser = SkillBrowser(self)
        self.view = SkillView(self)
        self.view.environment.set_store(services.runs.layout.environment_store())
        self.editor = SkillEditor(self)
        self.view.tabs().insertTab(1, self.editor, "Edit")
        self.run_panel = RunPanel(services.runs, settings, self)
        self.postures = PosturePicker(self)
        self.history = HistoryView(services.runs, settings, self)
        self._availability: dict[PostureId, Availability] | None = None  # once probed
        self.pages = QTabWidget(self)
        self.pages.setDocumentMode(True)
        self.pages.setAccessibleName("Views: run, history, compare, lab")
        self._splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self._splitter.setObjectName("mainSplitter")
        self._splitter.setChildrenCollapsible(False)
        self._center = QSplitter(Qt.Orientation.Vertical, self)
        self._center.setChildrenCollapsible(False)
        self._center.addWidget(self.view)
        self._center.addWidget(self.run_panel)
        self._center.setStretchFactor(0, 2)
        self._center.setStretchFactor(1, 3)
        self._center.setSizes([270, 430])  # SKILL.md readable, and the run the larger part
        for widget, stretch in ((self.browser, 0), (self._center, 1), (self.postures, 0)):
            self._splitter.addWidget(widget)
            self._splitter.setStretchFactor(self._splitter.indexOf(widget), stretch)
        self._splitter.setSizes([230, 750, 300])  # the center gets what a wider window adds
        central = QWidget(self)
        layout = QVBoxLayout(central)
        layout.setContentsMargins(8, 8, 8, 4)
        layout.setSpacing(6)
        layout.addWidget(self.message_bar)
        self.pages.addTab(self._splitter, "Run")
        self.pages.addTab(self.history, "History")
        self._compare = DeferredPage(self.pages, "Compare", self._build_compare)
        self._lab = DeferredPage(self.pages, "Lab", self._build_lab)
        layout.addWidget(self.pages, 1)
        self.setCentralWidget(central)

        self.status_line = StatusLine(self.statusBar())
        self.recent = RecentFolders(settings, self)
        self.authoring = AuthoringActions(self.editor, self)
        self._build_actions()
        self._connect_signals()

    def _build_actions(self) -> None:
        self.open_action = QAction("&Open Skill Folder…", self)
        self.open_action.setShortcut(QKeySequence.StandardKey.Open)
        self.reload_action = QAction("&Reload Skills", self)
        self.reload_action.setShortcut(QKeySequence.StandardKey.Refresh)
        self.find_action = QAction("&Find Skill", self)
        self.find_action.setShortcut(QKeySequence.StandardKey.Find)
        self.quit_action = QAction("&Quit", self)
        self.quit_action.setShortcut(QKeySequence.StandardKey.Quit)

        file_menu = self.menuBar().addMenu("&File")
        file_menu.addActions(self.authoring.actions())
        file_menu.addSeparator()
        file_menu.addAction(self.open_action)
        file_menu.addMenu(self.recent.menu)
        file_menu.addAction(self.reload_action)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)
        edit_menu = self.menuBar().addMenu("&Edit")
        edit_menu.addAction(self.find_action)
        view_menu = self.menuBar().addMenu("&View")
        for index in range(self.pages.count()):
            action = view_menu.addAction(self.pages.tabText(index))
            action.setShortcut(QKeySequence(f"Ctrl+{index + 1}"))
            action.triggered.connect(lambda _=False, i=index: self.pages.setCurrentIndex(i))

    def _connect_signals(self) -> None:
        # Menus
        self.open_action.triggered.connect(self.on_open_action_triggered)
        self.reload_action.triggered.connect(self.on_reload_action_triggered)
        self.find_action.triggered.connect(self.on_find_action_triggered)
        self.quit_action.triggered.connect(self.close)
        self.recent.folder_chosen.connect(self.on_recent_folder_chosen)
        # Errors
        for tasks in (
            self.tasks,
            self.authoring.tasks,
            self.run_panel.tasks,
            self.postures.tasks,
            self.history.tasks,
            self.view.environment.tasks,
        ):
            tasks.failed.connect(self.message_bar.show_error)
        self.browser.skill_gone.connect(self.message_bar.show_error)
        self.authoring.refused.connect(self.message_bar.show_error)
        # Authoring
        self.authoring.skill_written.connect(self.on_authoring_skill_written)
        self.authoring.skill_changed.connect(self.on_authoring_skill_changed)
        self.authoring.catalog_changed.connect(self.on_authoring_catalog_changed)
        self.authoring.select_requested.connect(self.browser.select_path)
        self.authoring.close_requested.connect(self.close)
        self.authoring.status_message.connect(self.on_view_status_message)
        self.editor.status_message.connect(self.on_view_status_message)
        self.editor.modified_changed.connect(self.on_editor_modified_changed)
        # Panes
        self.browser.skill_selected.connect(self.on_browser_skill_selected)
        self.view.status_message.connect(self.on_view_status_message)
        self.postures.posture_changed.connect(self.on_postures_posture_changed)
        self.run_panel.run_finished.connect(self.on_run_panel_run_finished)
        self.run_panel.run_refused.connect(self.on_engine_check_requested)
        self.status_line.check_again.clicked.connect(self.on_engine_check_requested)
        self.run_panel.limits.changed.connect(self.on_run_panel_limits_changed)
        self.pages.currentChanged.connect(self.on_pages_current_changed)

    @property
    def compare(self) -> "CompareView":
        """The Compare page (built the first time it is shown or asked for)."""
        return self._compare.page()

    @property
    def lab(self) -> "LabView":
        """The Lab page (built the first time it is shown or asked for)."""
        return self._lab.page()

    def _build_compare(self) -> "CompareView":
        from workbench.ui.compare.view import CompareView

        compare = CompareView(self._services.runs, self)
        compare.set_skill(self.browser.current_skill())
        self._join_page(compare)
        return compare

    def _build_lab(self) -> "LabView":
        from workbench.ui.lab.view import LabView

        lab = LabView(self._services.runs, self)
        self._join_page(lab)
        return lab

    def _join_page(self, page: "CompareView | LabView") -> None:
        """Wire a page built late as the others were at the start."""
        page.tasks.failed.connect(self.message_bar.show_error)
        page.run_activated.connect(self.on_compare_run_activated)
        if self._availability is not None:
            page.set_availability(self._availability)

    # Start-up and state -----------------------------------------------------------------

    async def load(self) -> None:
        """Load the catalog, probe the postures, open the warm pools and prune the history as
        its Keep setting says, all off the GUI thread; a failure of one shows in the message
        bar and leaves the others working."""
        results = await asyncio.gather(
            self.reload_catalog(),
            self._probe_postures(),
            self._open_pools(),
            self.history.apply_retention(),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, Exception):
                self.tasks.report(result)

    async def reload_catalog(self) -> None:
        """Discover every skill under the current roots again."""
        self.reload_action.setEnabled(False)
        try:
            skills = await asyncio.to_thread(self._services.discover, list(self._roots))
        finally:
            self.reload_action.setEnabled(True)
        self.browser.set_skills(skills)
        self.authoring.watch_roots(self._roots)
        if self.browser.current_skill() is None:
            self.browser.select_first()
        self._update_count()

    async def open_folders(self, folders: list[Path]) -> None:
        """Add skill folders (or folders holding skills) to the list and to Open Recent."""
        found: list[Skill] = []
        for folder in folders:
            skills = await asyncio.to_thread(self._load_folder, folder)
            if not skills:
                self.message_bar.show_error(
                    f"No skill found in {folder}: a skill is a folder with a SKILL.md file."
                    if folder.is_dir()
                    else f"There is no folder {folder}."
                )
                continue
            found.extend(skills)
            self.recent.remember(folder)
            if folder not in self._roots:
                self._roots.append(folder)
        self.browser.add_skills(found)
        self.authoring.watch_roots(self._roots)
        self._update_count()

    async def open_new_skill(self, root: Path, folder: Path) -> None:
        """List the skill just written into `folder` under `root`, select it and edit it."""
        if root in self._roots:
            self.browser.add_skills([await asyncio.to_thread(self._services.load_skill, folder)])
        else:
            await self.open_folders([root])
        self.browser.select_path(folder)
        self.view.tabs().setCurrentWidget(self.editor)

    async def refresh_skill(self, folder: Path) -> None:
        """Load the skill `folder` again and show it wherever it is shown."""
        skill = await asyncio.to_thread(self._services.load_skill, folder)
        self.browser.add_skills([skill], select=False)
        current = self.browser.current_skill()
        if current is not None and current.path == folder:
            tabs = self.view.tabs()
            index = tabs.currentIndex()
            self.on_browser_skill_selected(skill)
            tabs.setCurrentIndex(index)
        self.editor.on_disk_changed()

    async def shutdown(self) -> None:
        """Stop the run in progress and end every background task (after the window closed)."""
        built = [page.built for page in (self._compare, self._lab) if page.built is not None]
        await asyncio.gather(self.run_panel.shutdown(), *(page.shutdown() for page in built))
        await self.history.shutdown()
        await self.postures.shutdown()
        await self.view.environment.tasks.close()
        await self.authoring.tasks.close()
        await self.tasks.close()

    def restore_state(self) -> None:
        """Restore the window geometry, splitter sizes and page saved by the last session; the
        first launch fills at most the screen's free area."""
        if self._settings.value("window/version") != str(STATE_VERSION):
            self.resize(FIRST_SIZE.boundedTo(self.screen().availableGeometry().size()))
            return
        for key, restore in (
            ("window/geometry", self.restoreGeometry),
            ("window/state", self.restoreState),
            ("window/splitter", self._splitter.restoreState),
            ("window/center", self._center.restoreState),
        ):
            value = self._settings.value(key)
            if isinstance(value, QByteArray):
                restore(value)
        page = self._settings.value("window/page", 0, type=int)
        self.pages.setCurrentIndex(page if isinstance(page, int) else 0)

    def show_error(self, message: str) -> None:
        """Show an error in the message bar (never a modal dialog)."""
        self.message_bar.show_error(message)

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.authoring.holds_close():
            event.ignore()
            return
        self._settings.setValue("window/version", str(STATE_VERSION))
        self._settings.setValue("window/geometry", self.saveGeometry())
        self._settings.setValue("window/state", self.saveState())
        self._settings.setValue("window/splitter", self._splitter.saveState())
        self._settings.setValue("window/center", self._center.saveState())
        self._settings.setValue("window/page", self.pages.currentIndex())
        self.run_panel.stop()
        super().closeEvent(event)
        self.closed.emit()

    # Drag and drop ----------------------------------------------------------------------

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if dropped_folders(event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        folders = dropped_folders(event.mimeData().urls())
        if folders:
            event.acceptProposedAction()
            self.tasks.spawn(self.open_folders(folders))

    # Slots ------------------------------------------------------------------------------

    def on_open_action_triggered(self) -> None:
        dialog = QFileDialog(self, "Open Skill Folder")
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        dialog.fileSelected.connect(self.on_open_dialog_file_selected)
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()

    def on_open_dialog_file_selected(self, path: str) -> None:
        self.tasks.spawn(self.open_folders([Path(path)]))

    def on_recent_folder_chosen(self, folder: Path) -> None:
        self.tasks.spawn(self.open_folders([folder]))

    def on_reload_action_triggered(self) -> None:
        self.tasks.spawn(self.reload_catalog())

    def on_find_action_triggered(self) -> None:
        self.browser.focus_search()

    def on_browser_skill_selected(self, skill: Skill | None) -> None:
        if not self.authoring.switch_to(skill):
            return
        self.view.show_skill(skill)
        self.run_panel.set_skill(skill)
        if self._compare.built is not None:
            self._compare.built.set_skill(skill)
        self.postures.set_skill(skill)
        title = f"{reveal_bidi(skill.name)} — {TITLE}" if skill is not None else TITLE
        self.setWindowTitle(title)
        self._prime_pool()

    def on_view_status_message(self, message: str) -> None:
        self.statusBar().showMessage(message, 6000)

    def on_authoring_skill_written(self, root: Path, folder: Path) -> None:
        self.tasks.spawn(self.open_new_skill(root, folder))

    def on_authoring_skill_changed(self, folder: Path) -> None:
        if loop_running():
            self.tasks.spawn(self.refresh_skill(folder))

    def on_authoring_catalog_changed(self) -> None:
        if loop_running():
            self.tasks.spawn(self.reload_catalog())

    def on_editor_modified_changed(self, modified: bool) -> None:
        tabs = self.view.tabs()
        tabs.setTabText(tabs.indexOf(self.editor), "Edit •" if modified else "Edit")

    def on_run_panel_run_finished(self, done: CompletedRun) -> None:
        QApplication.alert(self)
        self.statusBar().showMessage(f"Run {done.record.run_id}: {done.result.status}", 8000)
        self._prime_pool()
        self.tasks.spawn(self.history.apply_retention())

    def on_engine_check_requested(self) -> None:
        """Probe anew on "Check again", or after a refused run (its engine may have gone)."""
        self.status_line.show_engine_checking()
        self.tasks.spawn(self._probe_postures())

    def on_run_panel_limits_changed(self) -> None:
        self._prime_pool()

    def on_pages_current_changed(self, index: int) -> None:
        if self.pages.widget(index) is self.history:
            self.tasks.spawn(self.history.refresh())

    def on_compare_run_activated(self, run_id: str) -> None:
        self.pages.setCurrentWidget(self.history)
        self.tasks.spawn(self.history.show_run(run_id))

    def on_postures_posture_changed(self, posture_id: PostureId) -> None:
        self.run_panel.set_posture(posture_id)
        self.status_line.show_posture(posture_id)
        self.view.environment.set_posture(self.run_panel.limits.posture(posture_id))
        self._prime_pool()

    # Internals --------------------------------------------------------------------------

    def _prime_pool(self) -> None:
        """Get the chosen posture's warm pool (if any) ready for the next run."""
        skill, posture_id = self.browser.current_skill(), self.postures.chosen()
        if skill is not None and posture_id is not None:
            posture = self.run_panel.limits.posture(posture_id)
            self.postures.prime(skill, posture, self._services.runs.layout)

    async def _open_pools(self) -> None:
        pools = await asyncio.to_thread(self._services.open_pools)
        self.postures.set_pools(pools, self._settings)
        self._prime_pool()  # a skill and posture chosen while the pools opened

    async def _probe_postures(self) -> None:
        probe: PostureProbe = await asyncio.to_thread(self._services.probe_postures)
        self._availability = probe.availability
        self.postures.set_availability(probe.availability)
        for page in (self._compare.built, self._lab.built):
            if page is not None:
                page.set_availability(probe.availability)
        self.status_line.show_engine(probe)

    def _load_folder(self, folder: Path) -> list[Skill]:
        if (folder / "SKILL.md").is_file() or (folder / "skill.md").is_file():
            return [self._services.load_skill(folder)]
        return self._services.discover([folder])

    def _update_count(self) -> None:
        self.status_line.show_skills(self.browser.skills())
