"""The effective posture card of a finished run: what was actually applied, read back.

One tree with a section per part of `executors.types.PostureCard`: the checks (✓ held,
✗ did not), who the command ran as, and the environment variable names kept and dropped.
Names come from the run and are shown as plain text.
"""

from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from workbench.executors.types import PostureCard
from workbench.postures.description import POSTURE_INFO
from workbench.ui.common.text import plural
from workbench.ui.common.widgets import plain_label
from workbench.ui.theme import status_colors


class CardView(QWidget):
    """The effective posture card of the last run."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.heading = plain_label("After a run: what its posture really applied.", self)
        self.tree = QTreeWidget(self)
        self.tree.setHeaderHidden(True)
        self.tree.setAccessibleName("Effective posture card")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.heading)
        layout.addWidget(self.tree, 1)

    def set_card(self, card: PostureCard | None) -> None:
        """Show `card` (None: clear)."""
        self.tree.clear()
        if card is None:
            self.heading.setText("After a run: what its posture really applied.")
            return
        held = sum(1 for _, ok in card.checks if ok)
        self.heading.setText(
            f"{POSTURE_INFO[card.posture.id].title}: {held} of "
            f"{plural(len(card.checks), 'check')} held, read back after the run started."
        )
        colours = status_colors(self.palette())
        checks = self._section(f"Checks ({held} of {len(card.checks)} held)")
        for text, ok in card.checks:
            item = QTreeWidgetItem(checks, [f"{'✓' if ok else '✗'}  {text}"])
            item.setForeground(0, colours.ok if ok else colours.danger)
            item.setToolTip(0, "held" if ok else "did not hold")
        if not card.checks:
            QTreeWidgetItem(checks, ["No checks were read back (the run ended before it began)."])
        if card.started:
            self._section(f"Started: {card.started}")
        self._section(f"Ran as: {card.run_as or 'not known'}")
        self._section(f"Skill environment: {card.environment or 'none'}")
        if card.image_id:
            self._section(f"Image: {card.image_id}")
        for title, names in (
            ("Environment kept", card.env_kept),
            ("Environment dropped (looked like secrets or not allowed)", card.env_dropped),
        ):
            section = self._section(f"{title}: {len(names)}")
            for name in names:
                QTreeWidgetItem(section, [name])
        self.tree.expandAll()

    def _section(self, title: str) -> QTreeWidgetItem:
        item = QTreeWidgetItem(self.tree, [title])
        font = item.font(0)
        font.setBold(True)
        item.setFont(0, font)
        return item
