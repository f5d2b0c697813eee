"""The run's settings: limits and network, loosened values flagged, the workspace, and the command
history.

`LimitControls` holds the timeout, memory, CPU and network controls a posture can apply, flags
values looser than `DEFAULT_LIMITS` with their `assess()` warnings, and builds the next run's
`Posture`; `WorkspaceChoice` says where the next run works (a fresh folder, or a folder of the
user's, remembered per skill and confirmed once with `ask()`); `CommandHistory` remembers each
skill's last commands. Their state lives in the injected `QSettings`.
"""

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QWidget,
)

from workbench.postures.description import assess
from workbench.postures.model import (
    CONTAINER_POSTURES,
    DEFAULT_LIMITS,
    MIB,
    Network,
    Posture,
    PostureId,
    PostureWarning,
    Severity,
)
from workbench.ui.common.text import tooltip
from workbench.ui.common.widgets import ask, set_status

_Spin = TypeVar("_Spin", QSpinBox, QDoubleSpinBox)
MAX_HISTORY = 20


class LimitControls(QWidget):
    """Timeout, memory, CPUs and network (bubblewrap: its allowed hosts) of the next run.

    Signals:
        changed(): a value changed (the loosened warnings may have changed with it).
    """

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._posture_id: PostureId | None = None
        self.timeout = _spin(QDoubleSpinBox(self), 1, 3600, DEFAULT_LIMITS.timeout_s, " s")
        self.timeout.setDecimals(0)
        self.timeout.setAccessibleName("Timeout in seconds")
        self.timeout.setPrefix("timeout ")
        self.memory = _spin(QSpinBox(self), 16, 65536, DEFAULT_LIMITS.memory_bytes // MIB, " MiB")
        self.memory.setSingleStep(64)
        self.memory.setAccessibleName("Memory limit in MiB")
        self.memory.setPrefix("memory ")
        self.cpus = _spin(QDoubleSpinBox(self), 0.1, 64, DEFAULT_LIMITS.cpus, " CPUs")
        self.cpus.setDecimals(1)
        self.cpus.setSingleStep(0.5)
        self.cpus.setAccessibleName("CPU limit in cores")
        self.network = QComboBox(self)
        self.network.addItem("network off", Network.NONE)
        self.network.addItem("network ON", Network.BRIDGE)
        self.network.setAccessibleName("Network")
        self.allow_hosts = QLineEdit(self)
        self.allow_hosts.setPlaceholderText("allowed hosts: none, network off")
        self.allow_hosts.setMinimumWidth(260)
        self.allow_hosts.setAccessibleName("Allowed hosts")
        self.allow_hosts.setToolTip(
            tooltip(
                "Hosts the command may reach through the workbench's proxy, e.g. "
                "pypi.org files.pythonhosted.org:443 (HOST alone: ports 80 and 443). Every "
                "attempt, allowed or refused, is in the run's Network tab."
            )
        )
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        for widget in (self.timeout, self.memory, self.cpus, self.network, self.allow_hosts):
            layout.addWidget(widget)
        layout.addStretch(1)
        self._connect_signals()
        self.set_posture(None)

    def _connect_signals(self) -> None:
        self.timeout.valueChanged.connect(self.on_value_changed)
        self.memory.valueChanged.connect(self.on_value_changed)
        self.cpus.valueChanged.connect(self.on_value_changed)
        self.network.currentIndexChanged.connect(self.on_value_changed)
        self.allow_hosts.textChanged.connect(self.on_value_changed)

    def set_posture(self, posture_id: PostureId | None) -> None:
        """Offer the controls `posture_id` honours."""
        self._posture_id = posture_id
        container = posture_id in CONTAINER_POSTURES
        self.network.setEnabled(container)
        self.network.setToolTip(
            "Whether the container may reach the network"
            if container
            else "Only container postures can withhold the network; this one cannot."
        )
        self.network.setVisible(posture_id is not PostureId.BUBBLEWRAP)
        self.allow_hosts.setVisible(posture_id is PostureId.BUBBLEWRAP)
        limited = posture_id is not PostureId.LOCAL
        self.memory.setEnabled(limited)
        self.memory.setToolTip(
            "Memory limit of the run" if limited else "The local posture applies no limits."
        )
        self.cpus.setEnabled(container)
        self.cpus.setToolTip(
            "CPU share of the container (cgroup)"
            if container
            else "Only container postures cap the CPU share (hardened caps CPU time)."
        )
        self.on_value_changed()

    def set_running(self, running: bool) -> None:
        """Lock the controls while a run is in progress."""
        self.setEnabled(not running)

    def posture(self, posture_id: PostureId) -> Posture:
        """The posture of the next run under `posture_id` with these settings."""
        network = self._network() if posture_id in CONTAINER_POSTURES else Network.NONE
        hosts = tuple(self.allow_hosts.text().replace(",", " ").split())
        allow = hosts if posture_id is PostureId.BUBBLEWRAP else ()
        return Posture(posture_id, network=network, allow_hosts=allow).with_limits(
            timeout_s=self.timeout.value(),
            memory_bytes=self.memory.value() * MIB,
            cpus=self.cpus.value(),
        )

    def _network(self) -> Network:
        # Qt hands item data back as a plain str: turn it into the enum again.
        return Network(self.network.currentData())

    def loosened(self) -> list[PostureWarning]:
        """The warnings about settings looser than the safe defaults."""
        if self._posture_id is None:
            return []
        return [w for w in assess(self.posture(self._posture_id)) if w.loosened]

    def on_value_changed(self, *_args: object) -> None:
        set_status(self.timeout, _flag(self.timeout.value() > DEFAULT_LIMITS.timeout_s))
        set_status(self.memory, _flag(self.memory.value() * MIB > DEFAULT_LIMITS.memory_bytes))
        set_status(self.cpus, _flag(self.cpus.value() > DEFAULT_LIMITS.cpus))
        network_on = self._network() is Network.BRIDGE
        set_status(self.network, "danger" if network_on and self.network.isEnabled() else "")
        set_status(self.allow_hosts, "danger" if self.allow_hosts.text().strip() else "")
        self.changed.emit()


def warning_text(warnings: list[PostureWarning]) -> tuple[str, str]:
    """One line for loosened-setting warnings and its status (`danger`, `warning` or '')."""
    if not warnings:
        return "", ""
    danger = any(w.severity is Severity.DANGER for w in warnings)
    return "⚠ " + " ".join(w.text for w in warnings), "danger" if danger else "warning"


WORKSPACE_FRESH = "Fresh folder for each run"
RECENT_KEY = "workspace/recent"
CONFIRMED_KEY = "workspace/confirmed"
MAX_RECENT_FOLDERS = 8
FRESH_TIP = "Each run starts in a new, empty folder."


class WorkspaceChoice(QWidget):
    """The workspace of the next run (see the module doc)."""

    def __init__(self, settings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._settings = settings
        self._skill_key: str | None = None
        self._question: QMessageBox | None = None
        self.combo = QComboBox(self)
        self.combo.setAccessibleName("Workspace folder")
        self.combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.combo.setMinimumContentsLength(len(WORKSPACE_FRESH))
        self.choose_button = QPushButton("Choose…", self)
        self.choose_button.setAccessibleName("Choose a workspace folder")
        self.choose_button.setToolTip("Run in a folder of yours (its files can be restored)")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.combo)
        layout.addWidget(self.choose_button)
        self._fill(None)
        self._connect_signals()

    def _connect_signals(self) -> None:
        self.combo.activated.connect(self.on_combo_activated)
        self.choose_button.clicked.connect(self.on_choose_button_clicked)

    # Public API -------------------------------------------------------------------------

    def set_skill(self, skill_name: str | None) -> None:
        """Show the choice remembered for `skill_name` (a fresh folder when none is)."""
        self._skill_key = (
            skill_key("workspace/skills", skill_name) if skill_name is not None else None
        )
        remembered = self._settings.value(self._skill_key, "") if self._skill_key else ""
        self._fill(Path(remembered) if isinstance(remembered, str) and remembered else None)

    def folder(self) -> Path | None:
        """The folder the next run works in, or None for a fresh folder."""
        data = self.combo.currentData()
        return Path(data) if isinstance(data, str) else None

    def choose(self, folder: Path | None) -> None:
        """Work in `folder` (None: a fresh folder) from the next run on, for this skill."""
        if folder is not None:
            folder = folder.absolute()
            recent = [str(folder)] + [
                f for f in settings_strings(self._settings, RECENT_KEY) if f != str(folder)
            ]
            self._settings.setValue(RECENT_KEY, recent[:MAX_RECENT_FOLDERS])
        if self._skill_key is not None:
            self._settings.setValue(self._skill_key, str(folder) if folder is not None else "")
        self._fill(folder)

    def is_confirmed(self, folder: Path) -> bool:
        """Whether the user already agreed to runs changing files in `folder`."""
        return str(folder) in settings_strings(self._settings, CONFIRMED_KEY)

    def ask(self, folder: Path, then: Callable[[], object]) -> None:
        """Ask once whether skills may change the files in `folder`; `then` runs on yes."""
        if self._question is not None:
            return

        def confirmed() -> None:
            confirmations = settings_strings(self._settings, CONFIRMED_KEY)
            self._settings.setValue(CONFIRMED_KEY, [*confirmations, str(folder)])
            then()

        text = (
            f"The skill will be able to change, add and delete files in {folder}.\n\n"
            "The workbench copies every file there before each run, so Restore workspace… "
            "can put the folder back as it was. You are asked once for each folder."
        )
        self._question = ask(self, "Run in your folder?", text, "Run in this folder", confirmed)
        self._question.finished.connect(self.on_question_finished)

    def question(self) -> QMessageBox | None:
        """The open "run in your folder?" question, if one is open."""
        return self._question

    # Slots ------------------------------------------------------------------------------

    def on_combo_activated(self, _index: int) -> None:
        self.choose(self.folder())

    def on_question_finished(self, _result: int) -> None:
        self._question = None

    def on_choose_button_clicked(self) -> None:
        dialog = QFileDialog(self, "Choose the workspace folder")
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        if (current := self.folder()) is not None:
            dialog.setDirectory(str(current))
        dialog.fileSelected.connect(lambda path: self.choose(Path(path)))
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()

    # Internals --------------------------------------------------------------------------

    def _fill(self, chosen: Path | None) -> None:
        """List a fresh folder and the recent folders, with `chosen` current."""
        folders = settings_strings(self._settings, RECENT_KEY)
        if chosen is not None and str(chosen) not in folders:
            folders.insert(0, str(chosen))
        metrics = self.combo.fontMetrics()
        width = metrics.horizontalAdvance(WORKSPACE_FRESH)  # the combo box is that wide
        self.combo.clear()
        self.combo.addItem(WORKSPACE_FRESH, None)
        self.combo.setItemData(0, tooltip(FRESH_TIP), Qt.ItemDataRole.ToolTipRole)
        for folder in folders:
            shown = metrics.elidedText(folder, Qt.TextElideMode.ElideMiddle, width)
            self.combo.addItem(shown, folder)
            self.combo.setItemData(
                self.combo.count() - 1, tooltip(folder), Qt.ItemDataRole.ToolTipRole
            )
        index = self.combo.findData(str(chosen)) if chosen is not None else 0
        self.combo.setCurrentIndex(max(index, 0))
        self.combo.setToolTip(tooltip(f"Runs work in {chosen}" if chosen else FRESH_TIP))


class CommandHistory:
    """The last commands run for each skill, newest first, kept in `QSettings`."""

    def __init__(self, settings: QSettings) -> None:
        self._settings = settings

    def commands(self, skill_name: str) -> list[str]:
        """The remembered commands of `skill_name`, newest first."""
        return settings_strings(self._settings, skill_key("commands", skill_name))

    def remember(self, skill_name: str, command: str) -> None:
        """Put `command` first in `skill_name`'s history."""
        kept = [command] + [c for c in self.commands(skill_name) if c != command]
        self._settings.setValue(skill_key("commands", skill_name), kept[:MAX_HISTORY])


def skill_key(group: str, skill_name: str) -> str:
    """The `QSettings` key of `skill_name`'s entry in `group` (the name made key-safe)."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in skill_name)
    return f"{group}/{safe}"


def settings_strings(settings: QSettings, key: str) -> list[str]:
    """The list of strings under `key` (QSettings hands a one-item list back as a str)."""
    value = settings.value(key, [])
    if isinstance(value, str):
        return [value]
    return [str(item) for item in value] if isinstance(value, list) else []


def _flag(loosened: bool) -> str:
    return "warning" if loosened else ""


def _spin(box: _Spin, low: float, high: float, value: float, suffix: str) -> _Spin:
    if isinstance(box, QSpinBox):  # whole numbers
        box.setRange(int(low), int(high))
        box.setValue(int(value))
    else:
        box.setRange(low, high)
        box.setValue(value)
    box.setSuffix(suffix)
    box.setKeyboardTracking(False)
    return box
