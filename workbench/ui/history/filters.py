"""The history's filters: which skill, posture, status and origin to list (asked of the history
itself, so "Show older runs" reads older matching runs), and words typed to narrow the runs
listed (every word must be in a run's skill, posture, status or cause).

Each choice starts at "any"; the skill and posture lists hold what the history has seen
(`set_choices`), keeping the current choice.
"""

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLineEdit, QWidget

from workbench.executors.types import RunStatus
from workbench.postures.description import posture_title
from workbench.runs.history import RunFilter
from workbench.runs.record import RunOrigin, RunState

STATUSES = (
    (RunStatus.OK, "Finished"),
    (RunStatus.FAILED, "Failed"),
    (RunStatus.TIMED_OUT, "Timed out"),
    (RunStatus.OOM_KILLED, "Stopped: memory"),
    (RunStatus.LIMIT_EXCEEDED, "Stopped: a limit"),
    (RunStatus.CANCELLED, "Cancelled"),
    (RunStatus.ERROR, "Could not run"),
    (RunState.RUNNING, "Running"),
    (RunState.INTERRUPTED, "Interrupted"),
)
ORIGINS = (
    (RunOrigin.RUN, "Runs"),
    (RunOrigin.COMPARE, "Comparisons"),
    (RunOrigin.LAB, "Probe lab"),
)


class RunFilters(QWidget):
    """Skill, posture, status and origin choices and a text filter, in one row.

    Signals:
        changed(): a skill, posture, status or origin was chosen (the history is asked again).
        words_changed(): the text changed (the runs listed are filtered again).
    """

    changed = Signal()
    words_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.skill = _combo(self, "Filter by skill", "Any skill", [])
        self.posture = _combo(self, "Filter by posture", "Any posture", [])
        self.status = _combo(self, "Filter by status", "Any status", list(STATUSES))
        self.origin = _combo(self, "Filter by origin", "Any origin", list(ORIGINS))
        self.text = QLineEdit(self)
        self.text.setAccessibleName("Filter runs")
        self.text.setPlaceholderText("Words in the skill, posture, status or cause")
        self.text.setClearButtonEnabled(True)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        for combo in (self.skill, self.posture, self.status, self.origin):
            layout.addWidget(combo)
        layout.addWidget(self.text, 1)
        self._connect_signals()

    def _connect_signals(self) -> None:
        for combo in (self.skill, self.posture, self.status, self.origin):
            combo.currentIndexChanged.connect(self.changed)
        self.text.textChanged.connect(self.words_changed)

    def set_choices(self, skills: list[str], postures: list[str]) -> None:
        """Offer these skills and postures (the history's), keeping what is chosen."""
        for combo, values in ((self.skill, skills), (self.posture, postures)):
            chosen = combo.currentData()
            titles = [(v, v if combo is self.skill else posture_title(v)) for v in values]
            if chosen is not None and chosen not in values:
                titles.append((chosen, chosen if combo is self.skill else posture_title(chosen)))
            combo.blockSignals(True)
            while combo.count() > 1:
                combo.removeItem(1)
            for value, title in titles:
                combo.addItem(title, value)
            combo.setCurrentIndex(max(0, combo.findData(chosen)) if chosen is not None else 0)
            combo.blockSignals(False)

    def where(self) -> RunFilter:
        """The runs the choices keep."""
        return RunFilter(
            skill=self.skill.currentData(),
            posture=self.posture.currentData(),
            outcome=self.status.currentData(),
            origin=self.origin.currentData(),
        )

    def words(self) -> list[str]:
        """The typed words, casefolded."""
        return self.text.text().casefold().split()

    def is_filtering(self) -> bool:
        """Whether any choice or word narrows the list."""
        return self.where() != RunFilter() or bool(self.words())

    def clear(self) -> None:
        """Back to every run."""
        for combo in (self.skill, self.posture, self.status, self.origin):
            combo.setCurrentIndex(0)
        self.text.clear()


def _combo(parent: QWidget, name: str, anything: str, items: list[tuple[str, str]]) -> QComboBox:
    combo = QComboBox(parent)
    combo.setAccessibleName(name)
    combo.setToolTip(name)
    combo.addItem(anything, None)
    for value, title in items:
        combo.addItem(title, str(value))
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
    return combo
