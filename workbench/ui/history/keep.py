"""The History page's retention setting: keep every run, the last N runs or the runs of the
last N days (remembered in the settings), and "Prune now". The window applies the setting
when the app starts and after every run (`runs.retention.prune`: old runs go with their
folders, the workspaces made for them and the kept files nothing else needs).
"""

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QPushButton, QSpinBox, QWidget

from workbench.runs.retention import Retention

MODES = (
    ("all", "Keep every run"),
    ("runs", "Keep the last"),
    ("days", "Keep the runs of the last"),
)
UNITS = {"runs": " runs", "days": " days"}
DEFAULT_COUNTS = {"runs": 500, "days": 30}


class KeepControls(QWidget):
    """How many runs the history keeps, and a button to apply that now.

    Signals:
        changed(): the setting changed (and was remembered).
        prune_requested(): the user asked to prune now.
    """

    changed = Signal()
    prune_requested = Signal()

    def __init__(self, settings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._settings = settings
        self.mode = QComboBox(self)
        self.mode.setAccessibleName("Which runs the history keeps")
        for key, title in MODES:
            self.mode.addItem(title, key)
        self.mode.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.count = QSpinBox(self)
        self.count.setRange(1, 1_000_000)
        self.count.setAccessibleName("How many runs or days to keep")
        self.prune_button = QPushButton("Prune now", self)
        self.prune_button.setToolTip(
            "Remove the runs the setting does not keep, with their folders and kept files"
        )
        mode = str(settings.value("history/keep", "all"))
        self.mode.setCurrentIndex(max(0, self.mode.findData(mode)))
        count = str(settings.value("history/keep_count", ""))
        self.count.setValue(int(count) if count.isdigit() else DEFAULT_COUNTS.get(mode, 1))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addWidget(self.mode)
        layout.addWidget(self.count)
        layout.addWidget(self.prune_button)
        self._show_mode()
        self._connect_signals()

    def _connect_signals(self) -> None:
        self.mode.currentIndexChanged.connect(self.on_mode_changed)
        self.count.valueChanged.connect(self.on_count_changed)
        self.prune_button.clicked.connect(self.prune_requested)

    def retention(self) -> Retention:
        """What the setting keeps."""
        mode = self.mode.currentData()
        if mode == "runs":
            return Retention(keep_runs=self.count.value())
        if mode == "days":
            return Retention(keep_days=self.count.value())
        return Retention()

    def on_mode_changed(self, _index: int) -> None:
        mode = self.mode.currentData()
        self.count.blockSignals(True)
        self.count.setValue(DEFAULT_COUNTS.get(mode, self.count.value()))
        self.count.blockSignals(False)
        self._show_mode()
        self._remember()

    def on_count_changed(self, _value: int) -> None:
        self._remember()

    def _show_mode(self) -> None:
        mode = self.mode.currentData()
        self.count.setVisible(mode in UNITS)
        self.count.setSuffix(UNITS.get(mode, ""))
        self.prune_button.setEnabled(mode in UNITS)

    def _remember(self) -> None:
        self._settings.setValue("history/keep", self.mode.currentData())
        self._settings.setValue("history/keep_count", self.count.value())
        self.changed.emit()
