"""The run's settings: limits and network, loosened values flagged, and the command history.

`LimitControls` holds the timeout, memory, CPU and network controls and builds the `Posture`
of the next run from them. Network and CPU share are only offered to container postures (the
others cannot withhold or cap them), memory to every posture but `local`. A value looser than
`DEFAULT_LIMITS` (or network on) turns its control the warning colour, and the posture's
loosened-setting warnings from `assess()` are listed below. `CommandHistory` remembers the
last commands run for each skill in the injected `QSettings`.
"""

from typing import TypeVar

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QHBoxLayout, QSpinBox, QWidget

from workbench.postures import (
    DEFAULT_LIMITS,
    MIB,
    Network,
    Posture,
    PostureId,
    PostureWarning,
    Severity,
    assess,
)
from workbench.ui.widgets import set_status

_Spin = TypeVar("_Spin", QSpinBox, QDoubleSpinBox)
CONTAINER_POSTURES = (PostureId.DOCKER, PostureId.GVISOR)
MAX_HISTORY = 20


class LimitControls(QWidget):
    """Timeout, memory, CPUs and network of the next run.

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
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        for widget in (self.timeout, self.memory, self.cpus, self.network):
            layout.addWidget(widget)
        layout.addStretch(1)
        self._connect_signals()
        self.set_posture(None)

    def _connect_signals(self) -> None:
        self.timeout.valueChanged.connect(self.on_value_changed)
        self.memory.valueChanged.connect(self.on_value_changed)
        self.cpus.valueChanged.connect(self.on_value_changed)
        self.network.currentIndexChanged.connect(self.on_value_changed)

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
        return Posture(posture_id, network=network).with_limits(
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
        self.changed.emit()


def warning_text(warnings: list[PostureWarning]) -> tuple[str, str]:
    """One line for loosened-setting warnings and its status (`danger`, `warning` or '')."""
    if not warnings:
        return "", ""
    danger = any(w.severity is Severity.DANGER for w in warnings)
    return "⚠ " + " ".join(w.text for w in warnings), "danger" if danger else "warning"


class CommandHistory:
    """The last commands run for each skill, newest first, kept in `QSettings`."""

    def __init__(self, settings: QSettings) -> None:
        self._settings = settings

    def commands(self, skill_name: str) -> list[str]:
        """The remembered commands of `skill_name`, newest first."""
        value = self._settings.value(_key(skill_name), [])
        if isinstance(value, str):
            return [value]
        return [str(item) for item in value] if isinstance(value, list) else []

    def remember(self, skill_name: str, command: str) -> None:
        """Put `command` first in `skill_name`'s history."""
        kept = [command] + [c for c in self.commands(skill_name) if c != command]
        self._settings.setValue(_key(skill_name), kept[:MAX_HISTORY])


def _key(skill_name: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in skill_name)
    return f"commands/{safe}"


def _flag(loosened: bool) -> str:
    return "warning" if loosened else ""


def _spin(box: _Spin, low: float, high: float, value: float, suffix: str) -> _Spin:
    box.setRange(low, high)
    box.setValue(value)
    box.setSuffix(suffix)
    box.setKeyboardTracking(False)
    return box
