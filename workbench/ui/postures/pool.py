"""The warm-pool row of a posture card: how many to keep ready, and what the pool holds now.

`PoolControls` is a size spin box (0 to `MAX_POOL_SIZE`, 0 shown as "off") and a plain-text
status line; `pool_text()` words a `PoolStatus` for it ("Warm pool: 2 ready for hello-python
in a fresh workspace (...)", "starting 1", or why the pool cannot fill). The posture picker
owns the pools and drives these rows.
"""

from PySide6.QtWidgets import QHBoxLayout, QSpinBox, QVBoxLayout, QWidget

from workbench.executors.warm.starts import PoolStatus
from workbench.ui.common.widgets import plain_label, set_status

MAX_POOL_SIZE = 4


class PoolControls(QWidget):
    """A posture's warm-pool size and status (see the module doc)."""

    def __init__(self, title: str, noun: str, parent: QWidget | None = None) -> None:
        """`noun` names what the pool keeps: "container", "worker"."""
        super().__init__(parent)
        self.setObjectName("warmPool")
        self._noun = noun
        self.size_box = QSpinBox(self)
        self.size_box.setRange(0, MAX_POOL_SIZE)
        self.size_box.setSpecialValueText("off")
        self.size_box.setAccessibleName(f"Warm {noun}s to keep ready for {title}")
        self.size_box.setToolTip(f"{noun.capitalize()}s started ahead for the next run")
        self.status_line = plain_label("", self, wrap=True)
        row = QHBoxLayout()
        row.setSpacing(6)
        row.addWidget(plain_label("Warm pool size:", self))
        row.addWidget(self.size_box)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(row)
        layout.addWidget(self.status_line)

    def set_size(self, value: object) -> None:
        """Show a size read from the settings (text on some platforms; 0 when unreadable),
        without signalling a change."""
        text = str(value)
        self.size_box.blockSignals(True)
        self.size_box.setValue(min(MAX_POOL_SIZE, int(text)) if text.isdigit() else 0)
        self.size_box.blockSignals(False)

    def show_status(self, status: PoolStatus) -> None:
        """Show what the pool holds now."""
        text, colour = pool_text(status, self._noun)
        if self.status_line.text() != text:
            self.status_line.setText(text)
            set_status(self.status_line, colour)


def pool_text(status: PoolStatus, noun: str = "container") -> tuple[str, str]:
    """What a card says about its warm pool of `noun`s, and the colour to say it in."""
    if status.size == 0:
        return f"Warm pool off: every run starts its {noun}.", "muted"
    if status.problem:
        return f"Warm pool cannot fill: {status.problem}", "warning"
    if not status.key:
        return f"Warm pool: {status.size} wanted; fills for the next run chosen here.", "muted"
    starting = f", starting {status.starting}" if status.starting else ""
    colour = "ok" if status.ready else "muted"
    return f"Warm pool: {status.ready} ready{starting} for {status.key}", colour
