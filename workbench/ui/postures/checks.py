"""`PostureChecks`: the posture checkboxes (two rows of three) the Compare and Lab pages choose
with. It offers the postures that can run here and have an executor in this build, ticks every one
of them but `local` (which only the user ticks, in the danger colour) or the ones a page asks
for (`tick`), and says which are ticked, strongest first.
"""

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QGridLayout, QWidget

from workbench.executors import implemented_postures
from workbench.postures.description import POSTURE_INFO
from workbench.postures.model import Availability, PostureId
from workbench.ui.common.text import tooltip
from workbench.ui.common.widgets import plain_label, set_status
from workbench.ui.postures.picker import CARD_ORDER

COLUMNS = 3


class PostureChecks(QWidget):
    """ "Postures:" and one checkbox per posture.

    Signals:
        changed(): a box was ticked or unticked.
    """

    changed = Signal()

    def __init__(self, purpose: str, parent: QWidget | None = None) -> None:
        """`purpose` starts each box's accessible name, e.g. "Compare under"."""
        super().__init__(parent)
        self.boxes: dict[PostureId, QCheckBox] = {}
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(plain_label("Postures:", self), 0, 0)
        for index, posture_id in enumerate(CARD_ORDER):
            box = QCheckBox(POSTURE_INFO[posture_id].title, self)
            box.setAccessibleName(f"{purpose} {POSTURE_INFO[posture_id].title}")
            box.setEnabled(False)
            box.setToolTip("Checking whether this posture can run here…")
            if posture_id is PostureId.LOCAL:
                set_status(box, "danger")
            self.boxes[posture_id] = box
            grid.addWidget(box, index // COLUMNS, 1 + index % COLUMNS)
        grid.setColumnStretch(1 + COLUMNS, 1)
        self._connect_signals()

    def _connect_signals(self) -> None:
        for box in self.boxes.values():
            box.toggled.connect(self.changed)

    def set_availability(self, availability: dict[PostureId, Availability]) -> None:
        """Offer the postures that can run here; tick every one of them but `local`."""
        implemented = implemented_postures()
        for posture_id, box in self.boxes.items():
            found = availability[posture_id]
            usable = found.available and posture_id in implemented
            box.setEnabled(usable)
            box.setChecked(usable and posture_id is not PostureId.LOCAL)
            implemented_here = posture_id in implemented or not found.available
            box.setToolTip(
                tooltip(found.reason if implemented_here else "Not implemented in this build yet.")
            )

    def usable(self) -> list[PostureId]:
        """The postures that can be ticked (available here and implemented)."""
        return [p for p, box in self.boxes.items() if box.isEnabled()]

    def tick(self, posture_ids: list[PostureId]) -> None:
        """Tick exactly `posture_ids` among the usable postures."""
        for posture_id, box in self.boxes.items():
            box.setChecked(box.isEnabled() and posture_id in posture_ids)

    def chosen(self) -> list[PostureId]:
        """The ticked postures, strongest first."""
        return [p for p, box in self.boxes.items() if box.isChecked() and box.isEnabled()]
