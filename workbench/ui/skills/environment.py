"""The environment panel: what a skill needs beyond the sandbox image, and its built environment.

For the selected skill and the posture chosen in the posture picker, the panel shows the
state of the skill's environment (built, out of date, missing, not needed) and what it is built
for, what the skill declares and what its scripts were found to import and run (each with where),
and the proposal to build: Python requirements one a line and Debian packages, which the user
may edit (kept for the skill) or reset to the skill's own. Build installs them
(`workbench.environments.build`, in a thread) with a progress bar and the tool's last line;
the installed packages and the environment's folder and image follow. Everything shown comes
from the skill's files and is plain text.
"""

import asyncio
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.environments.resolve import EnvState, EnvStatus, status
from workbench.environments.store import EnvironmentStore
from workbench.environments.targets import target_kind
from workbench.errors import WorkbenchError
from workbench.postures.description import POSTURE_INFO
from workbench.postures.model import Posture, PostureId
from workbench.skills import Skill
from workbench.ui.common.tasks import Tasks
from workbench.ui.common.text import tooltip
from workbench.ui.common.widgets import plain_label, set_status

if TYPE_CHECKING:
    from workbench.environments.build import BuildStep

STATE_LOOK = {
    EnvState.BUILT: "ok",
    EnvState.OUT_OF_DATE: "warning",
    EnvState.MISSING: "danger",
    EnvState.NOT_NEEDED: "muted",
}


class EnvironmentPanel(QWidget):
    """See the module docstring.

    Signals:
        built(str): an environment was built (its id).
    """

    built = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._store: EnvironmentStore | None = None
        self._skill: Skill | None = None
        self._posture = Posture(PostureId.DOCKER)
        self._status: EnvStatus | None = None
        self.tasks = Tasks(self)  # look-ups and builds; each explains its own failure
        self._generation = 0  # which selection a finished look-up belongs to
        self._stale = True  # the selection changed while the panel was hidden
        self._building = False  # a build is under way: Build and Reset wait for it

        self.state = plain_label("", self)
        self.state.setAccessibleName("Environment state")
        font = self.state.font()
        font.setBold(True)
        self.state.setFont(font)
        self.target = plain_label("", self, wrap=True)
        self.target.setAccessibleName("Built for")
        self.target.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.build_button = QPushButton("Build", self)
        self.build_button.setToolTip(
            "Install the requirements for the Python this posture runs (network for the "
            "package registries only during the build)"
        )
        self.progress = QProgressBar(self)
        self.progress.setTextVisible(False)
        self.progress.setMaximumHeight(12)
        self.progress.setAccessibleName("Build progress")
        self.needs = QTreeWidget(self)
        self.needs.setHeaderHidden(True)
        self.needs.setAccessibleName("What the skill needs")
        self.python = QPlainTextEdit(self)
        self.python.setAccessibleName("Python requirements")
        self.python.setPlaceholderText("Python requirements, one a line (PyYAML>=6)")
        self.system = QLineEdit(self)
        self.system.setAccessibleName("Debian packages")
        self.system.setPlaceholderText("Debian packages for docker and gvisor (poppler-utils)")
        self.reset_button = QPushButton("Reset", self)
        self.reset_button.setToolTip("Forget your edits: build what the skill declares or imports")
        self.reset_button.setAccessibleName("Reset to the skill's requirements")
        self.message = plain_label("", self, wrap=True)
        self.message.setAccessibleName("Environment details")
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._build_layout()
        self._connect_signals()
        self._show_empty("Select a skill to see what it needs.")

    def _build_layout(self) -> None:
        top = QHBoxLayout()
        top.setSpacing(8)
        top.addWidget(self.state)
        top.addWidget(self.target, 1)
        top.addWidget(self.progress, 0)
        top.addWidget(self.build_button)
        right = QVBoxLayout()
        right.setSpacing(4)
        edit_title = QHBoxLayout()
        edit_title.addWidget(_caption("Requirements to build", self), 1)
        edit_title.addWidget(self.reset_button)
        right.addLayout(edit_title)
        right.addWidget(self.python, 1)
        right.addWidget(self.system)
        columns = QHBoxLayout()
        columns.setSpacing(10)
        left = QVBoxLayout()
        left.setSpacing(4)
        left.addWidget(_caption("What the skill needs", self))
        left.addWidget(self.needs, 1)
        columns.addLayout(left, 3)
        columns.addLayout(right, 2)
        body = QWidget(self)
        layout = QVBoxLayout(body)
        layout.setContentsMargins(4, 6, 4, 4)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addWidget(self.message)
        layout.addLayout(columns, 1)
        self.progress.setFixedWidth(140)
        for grows in (self.needs, self.python):
            grows.setMinimumHeight(48)
        # Scrolled when the tab is short, so the panel never makes the window taller.
        scroll = QScrollArea(self)
        scroll.setAccessibleName("Skill environment")
        scroll.setWidget(body)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)

    def _connect_signals(self) -> None:
        self.build_button.clicked.connect(self.on_build_button_clicked)
        self.reset_button.clicked.connect(self.on_reset_button_clicked)

    # Public API -------------------------------------------------------------------------

    def set_store(self, store: EnvironmentStore) -> None:
        """Where environments are kept (the data folder's)."""
        self._store = store

    def show_skill(self, skill: Skill | None) -> None:
        """Show the environment of `skill` (looked up off the GUI thread, once on show)."""
        self._skill = skill
        self._changed()

    def set_posture(self, posture: Posture) -> None:
        """Show the environment for `posture` (the one the picker chose)."""
        self._posture = posture
        self._changed()

    def refresh(self) -> None:
        """Look the state up again (after a build, a run, an edit elsewhere)."""
        self._stale = False
        self._generation += 1
        if self._skill is None or self._store is None:
            self._show_empty("Select a skill to see what it needs.")
            return
        if target_kind(self._posture.id) is None:
            self._show_empty(
                f"{POSTURE_INFO[self._posture.id].title} runs JavaScript in its own engine: it "
                "has no environment. Choose another posture to see one."
            )
            return
        self.state.setText("Looking…")
        set_status(self.state, "muted")
        self.message.setText(f"Reading what {self._skill.name} needs…")
        set_status(self.message, "muted")
        self.tasks.spawn(self._look(self._skill, self._posture, self._store, self._generation))

    def status(self) -> EnvStatus | None:
        """The state on show (None while looking, or for no skill)."""
        return self._status

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._stale:
            self.refresh()

    # Slots ------------------------------------------------------------------------------

    def on_build_button_clicked(self) -> None:
        if self._skill is None or self._store is None or self._status is None:
            return
        python = tuple(line.strip() for line in self.python.toPlainText().splitlines())
        python = tuple(line for line in python if line and not line.startswith("#"))
        system = tuple(self.system.text().split())
        changes: dict[str, list[str] | None] = {}
        inputs = self._status.inputs
        if python != inputs.python:
            changes["python"] = list(python)
        if system != inputs.system:
            changes["system"] = list(system)
        self.tasks.spawn(self._build(self._skill, self._posture, self._store, changes))

    def on_reset_button_clicked(self) -> None:
        if self._skill is not None and self._store is not None:
            self.tasks.spawn(self._reset(self._skill, self._store))

    async def _reset(self, skill: Skill, store: EnvironmentStore) -> None:
        """Forget the user's edits of `skill`'s proposal (a file write: off the Qt thread)."""
        try:
            await asyncio.to_thread(store.update_skill_record, skill.path, python=None, system=None)
        except WorkbenchError as error:
            self.message.setText(f"Could not reset the proposal: {error}")
            set_status(self.message, "danger")
            return
        if skill is self._skill:
            self.refresh()

    # Internals --------------------------------------------------------------------------

    def _changed(self) -> None:
        """Look up the new selection now when on show, else when next shown."""
        self._stale = True
        if self.isVisible():
            self.refresh()

    async def _look(
        self, skill: Skill, posture: Posture, store: EnvironmentStore, generation: int
    ) -> None:
        try:
            found = await asyncio.to_thread(status, skill, posture, store)
        except WorkbenchError as error:
            if generation == self._generation:
                self._show_empty(f"Cannot tell: {error}", "danger")
            return
        if generation == self._generation:
            self._show(found)

    async def _build(
        self,
        skill: Skill,
        posture: Posture,
        store: EnvironmentStore,
        changes: dict[str, list[str] | None],
    ) -> None:
        from workbench.environments.build import build  # it loads docker-py: not at start-up

        loop = asyncio.get_running_loop()
        self.build_button.setEnabled(False)
        self.reset_button.setEnabled(False)
        self.progress.setRange(0, 0)
        self.message.setText("Building…")
        set_status(self.message, "muted")

        def progress(step: "BuildStep") -> None:
            loop.call_soon_threadsafe(self._show_step, step)

        self._building = True
        try:
            if changes:
                await asyncio.to_thread(store.update_skill_record, skill.path, **changes)
            found = await asyncio.to_thread(status, skill, posture, store)
            environment = await asyncio.to_thread(build, found.inputs, skill, store, progress)
        except WorkbenchError as error:
            self.progress.setValue(0)
            self.message.setText(f"Not built: {error}")
            set_status(self.message, "danger")
            return
        finally:  # also when the build failed in an unforeseen way (Tasks reports that)
            self._building = False
            self.progress.setRange(0, 1)
            self.build_button.setEnabled(True)
            self.reset_button.setEnabled(True)
        self.progress.setValue(1)
        self.built.emit(environment.env_id)
        if skill is self._skill:
            self.refresh()

    def _show_step(self, step: "BuildStep") -> None:
        if step.total:
            self.progress.setRange(0, step.total * 100)
            self.progress.setValue(min(step.done * 100 + 50, step.total * 100))
        self.message.setText(" ".join(step.text.split())[:300])
        set_status(self.message, "muted")

    def _show_empty(self, text: str, look: str = "muted") -> None:
        self._status = None
        self.state.setText("")
        self.target.setText("")
        self.needs.clear()
        self.python.setPlainText("")
        self.system.setText("")
        for widget in (self.build_button, self.reset_button, self.python, self.system):
            widget.setEnabled(False)
        self.progress.setVisible(False)
        self.message.setText(text)
        set_status(self.message, look)

    def _show(self, found: EnvStatus) -> None:
        self._status = found
        inputs = found.inputs
        self.state.setText(found.state.value.capitalize())
        set_status(self.state, STATE_LOOK[found.state])
        title = POSTURE_INFO[self._posture.id].title
        self.target.setText(f"for {title}: {inputs.target.describe()}")
        self.target.setToolTip(tooltip(inputs.target.describe()))
        self._show_needs(found)
        self.python.setPlainText("\n".join(inputs.python))
        self.system.setText(" ".join(inputs.system))
        container = self._posture.id in (PostureId.DOCKER, PostureId.GVISOR)
        self.system.setEnabled(container)
        self.system.setToolTip(
            "" if container else "Only docker and gvisor add Debian packages (to an image)"
        )
        self.python.setEnabled(True)
        self.reset_button.setEnabled(found.edited and not self._building)
        self.build_button.setEnabled(not self._building)  # one build at a time
        self.build_button.setText("Rebuild" if found.state is EnvState.OUT_OF_DATE else "Build")
        self.progress.setVisible(found.state is not EnvState.NOT_NEEDED)  # nothing to build
        self.progress.setRange(0, 1)
        self.progress.setValue(1 if found.state is EnvState.BUILT else 0)
        self.message.setText(_details(found))
        self.message.setToolTip(tooltip(_everything(found)))
        set_status(self.message, "muted" if found.state is EnvState.BUILT else "warning")
        if found.state is EnvState.NOT_NEEDED:
            set_status(self.message, "muted")

    def _show_needs(self, found: EnvStatus) -> None:
        needs = found.needs
        self.needs.clear()
        groups: list[tuple[str, list[str]]] = []
        if needs.declared_in:
            groups.append((f"Declared in {', '.join(needs.declared_in)}", list(needs.declared)))
        if needs.node_in:
            groups.append((f"Node packages in {', '.join(needs.node_in)}", list(needs.node)))
        groups.append(
            (
                "Imports found in its scripts",
                [
                    f"{', '.join(item.modules)} → {item.distribution}"
                    + (" (optional)" if item.optional else "")
                    + f"  ({', '.join(item.places[:2])}{' …' if len(item.places) > 2 else ''})"
                    for item in needs.inferred
                ],
            )
        )
        groups.append(
            (
                "Programs to add (Debian packages)",
                [f"{t.name} → Debian {t.package}  ({t.places[0]})" for t in needs.tools]
                + [
                    f"{name} runs programs of Debian {package}"
                    for name, package in needs.library_packages
                ],
            )
        )
        if needs.compatibility:
            groups.append(("Compatibility (the skill's words)", [needs.compatibility]))
        if needs.refused:
            groups.append(("Not installed", list(needs.refused)))
        if not any(lines for _, lines in groups):
            groups = [("Nothing found", ["No third-party import, no program the image lacks."])]
        for title, lines in groups:
            if not lines:
                continue
            item = QTreeWidgetItem(self.needs, [f"{title} ({len(lines)})"])
            for line in lines:
                child = QTreeWidgetItem([" ".join(line.split())])
                child.setToolTip(0, tooltip(line))
                item.addChild(child)
        self.needs.expandAll()


def _caption(text: str, parent: QWidget) -> QLabel:
    label = plain_label(text, parent)
    set_status(label, "muted")
    return label


def _details(found: EnvStatus) -> str:
    """The line under the panel: what is installed where, or what to do."""
    environment = found.environment
    if found.state is EnvState.NOT_NEEDED:
        return "Nothing to build: the skill needs no Python or Node packages."
    if found.state is EnvState.MISSING:
        return (
            "Not built: runs will lack these packages. Build installs them once; runs reuse them."
        )
    assert environment is not None
    installed = environment.installed + environment.installed_node
    shown = ", ".join(installed[:3]) + (", …" if len(installed) > 3 else "")
    packages = f"{len(installed)} packages ({shown})" if installed else "no packages"
    image = f" · image {environment.image}" if environment.image else ""
    lead = (
        "Out of date (the requirements, the image or its Python changed): runs use the old one "
        "until you rebuild. "
        if found.state is EnvState.OUT_OF_DATE
        else ""
    )
    notes = "".join(f" {note}" for note in environment.notes)
    return f"{lead}Environment {environment.env_id}: {packages}{image}{notes}"


def _everything(found: EnvStatus) -> str:
    """The details' tool tip: every installed package and where the environment is."""
    environment = found.environment
    if environment is None:
        return ""
    installed = "\n".join(environment.installed + environment.installed_node)
    image = f"\nimage {environment.image} ({environment.image_id})" if environment.image else ""
    return f"{environment.path}{image}\n{installed}"
