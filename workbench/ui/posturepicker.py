"""The posture picker: one card per executor posture, and the choice between them.

A card says what the posture is, whether it can run here (and why not), what it guarantees,
what it does not, and the warnings from `postures.assess()`, DANGER ones in the danger
colour. Until the machine has been probed the cards say "checking…" and cannot be chosen.
The strongest available posture is chosen by default; choosing `local` asks first, in a
window-modal message box opened with `open()` (never `exec()`), and only a confirmation
changes the choice.

The docker and gvisor cards also show their warm pool (`PoolControls`) once `set_pools()`
hands the pools over: its size (remembered in the settings) and what it holds now, read from
`WarmPool.status()` twice a second. `prime()` asks the chosen
posture's pool to get ready for the next run of a skill, 0.3 s after the last ask (browsing
skills fills for the one the user stops at); the pool calls run in tasks the picker keeps
until `shutdown()`.
"""

import asyncio
from collections.abc import Coroutine, Mapping
from typing import Any

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractButton,
    QButtonGroup,
    QFrame,
    QHBoxLayout,
    QMessageBox,
    QRadioButton,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.errors import PostureError
from workbench.executors.types import SessionSpec, new_run_id
from workbench.executors.warm import WarmPool
from workbench.postures import (
    POSTURE_INFO,
    Availability,
    Posture,
    PostureId,
    Severity,
    assess,
    default_posture_id,
)
from workbench.runs.layout import DataLayout
from workbench.skills import Skill
from workbench.ui.poolcontrols import PoolControls
from workbench.ui.widgets import plain_label, set_status

CARD_ORDER = (
    PostureId.GVISOR,
    PostureId.DOCKER,
    PostureId.HARDENED,
    PostureId.QUICKJS,
    PostureId.LOCAL,
)
POOL_REFRESH_MS = 500
PRIME_DELAY_MS = 300


class PostureCard(QFrame):
    """Everything a user should know about one posture, with a radio button to choose it."""

    def __init__(self, posture_id: PostureId, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.posture_id = posture_id
        info = POSTURE_INFO[posture_id]
        self.setObjectName("postureCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)

        self.radio = QRadioButton(info.title, self)
        font = self.radio.font()
        font.setBold(True)
        self.radio.setFont(font)
        self.radio.setEnabled(False)
        self.radio.setAccessibleName(f"Posture: {info.title}")
        self.availability = plain_label("checking…", self, wrap=True)
        set_status(self.availability, "muted")

        self.details_button = QToolButton(self)
        self.details_button.setObjectName("detailsToggle")
        self.details_button.setText("Guarantees and limits")
        self.details_button.setCheckable(True)
        self.details_button.setAutoRaise(True)
        self.details_button.setArrowType(Qt.ArrowType.RightArrow)
        self.details_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.details = QWidget(self)
        details = QVBoxLayout(self.details)
        details.setContentsMargins(0, 0, 0, 0)
        details.setSpacing(3)
        for text in info.guarantees:
            details.addWidget(_bullet("✓", "ok", text, "", self.details))
        for text in info.does_not:
            does_not = f"Does not {text[0].lower()}{text[1:]}"
            details.addWidget(_bullet("✗", "danger", does_not, "", self.details))
        self.details.hide()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(3)
        layout.addWidget(self.radio)
        layout.addWidget(self.availability)
        layout.addWidget(plain_label(info.summary, self, wrap=True))
        for warning in assess(Posture(posture_id)):
            status = _WARNING_STATUS[warning.severity]
            if warning.severity is Severity.INFO:
                row = _bullet("ℹ", status, warning.text, status, self)
            else:
                text = f"{warning.severity.upper()}: {warning.text}"
                row = _bullet("⚠", status, text, status, self)
            row.setObjectName(f"warning_{warning.severity}")
            layout.addWidget(row)
        noun = "worker" if posture_id is PostureId.QUICKJS else "container"
        self.pool = PoolControls(info.title, noun, self)
        self.pool.hide()
        layout.addWidget(self.pool)
        layout.addWidget(self.details_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.details)
        self._connect_signals()

    def _connect_signals(self) -> None:
        self.details_button.toggled.connect(self.on_details_button_toggled)

    def set_expanded(self, expanded: bool) -> None:
        """Show or hide the guarantees and non-guarantees."""
        self.details_button.setChecked(expanded)

    def on_details_button_toggled(self, checked: bool) -> None:
        self.details.setVisible(checked)
        arrow = Qt.ArrowType.DownArrow if checked else Qt.ArrowType.RightArrow
        self.details_button.setArrowType(arrow)

    def set_availability(self, availability: Availability) -> None:
        """Show whether the posture can run here, and allow choosing it only if it can."""
        state = "Available" if availability.available else "Unavailable"
        self.availability.setText(f"{state} — {availability.reason}")
        set_status(self.availability, "ok" if availability.available else "muted")
        self.radio.setEnabled(availability.available)
        self.pool.setEnabled(availability.available)


class PosturePicker(QScrollArea):
    """A scrollable column of posture cards; exactly one posture is chosen at a time.

    Signals:
        posture_changed(object): the newly chosen `PostureId`.
    """

    posture_changed = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._chosen: PostureId | None = None
        self._confirm: QMessageBox | None = None
        self._group = QButtonGroup(self)
        self._cards: dict[PostureId, PostureCard] = {}
        self._pools: dict[PostureId, WarmPool] = {}
        self._settings: QSettings | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._pool_timer = QTimer(self)
        self._pool_timer.setInterval(POOL_REFRESH_MS)
        self._prime_timer = QTimer(self)  # browsing skills primes once, for the last one
        self._prime_timer.setSingleShot(True)
        self._prime_timer.setInterval(PRIME_DELAY_MS)
        self._primed: tuple[WarmPool, Posture, SessionSpec] | None = None

        inner = QWidget(self)
        layout = QVBoxLayout(inner)
        layout.setContentsMargins(2, 2, 8, 2)
        layout.setSpacing(8)
        heading = plain_label("Executor posture", inner)
        font = heading.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        heading.setFont(font)
        layout.addWidget(heading)
        self._hint = plain_label("Checking what this machine can run…", inner, wrap=True)
        layout.addWidget(self._hint)
        for posture_id in CARD_ORDER:
            card = PostureCard(posture_id, inner)
            self._cards[posture_id] = card
            self._group.addButton(card.radio)
            layout.addWidget(card)
        layout.addStretch(1)
        self.setWidget(inner)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setAccessibleName("Executor postures")
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._connect_signals()

    def _connect_signals(self) -> None:
        self._group.buttonClicked.connect(self.on_group_button_clicked)
        self._pool_timer.timeout.connect(self.on_pool_timer_timeout)
        self._prime_timer.timeout.connect(self.on_prime_timer_timeout)
        for card in self._cards.values():
            card.pool.size_box.valueChanged.connect(self.on_pool_size_value_changed)

    # Public API -------------------------------------------------------------------------

    def chosen(self) -> PostureId | None:
        """The chosen posture, or None before the probe answers (or when none can run)."""
        return self._chosen

    def card(self, posture_id: PostureId) -> PostureCard:
        """The card of `posture_id`."""
        return self._cards[posture_id]

    def confirmation_box(self) -> QMessageBox | None:
        """The open "run without a sandbox?" question, if one is open."""
        return self._confirm

    def set_availability(self, availability: dict[PostureId, Availability]) -> None:
        """Show the probe's answer and choose the default posture if none is chosen yet."""
        for posture_id, card in self._cards.items():
            card.set_availability(availability[posture_id])
        if self._chosen is not None and availability[self._chosen].available:
            return
        try:
            default = default_posture_id(availability)
        except PostureError as error:
            self._hint.setText(str(error))
            self._set_chosen(None)
            return
        self._hint.setText(
            f"Default: {POSTURE_INFO[default].title}, the strongest posture available here."
        )
        self._set_chosen(default)

    def choose(self, posture_id: PostureId) -> None:
        """Choose `posture_id` as if its card were clicked (local still asks first)."""
        card = self._cards[posture_id]
        if card.radio.isEnabled():
            self.on_group_button_clicked(card.radio)

    def set_pools(self, pools: Mapping[PostureId, WarmPool], settings: QSettings) -> None:
        """Show and drive the warm pools of the postures that have one, at the sizes the
        settings remember."""
        self._pools, self._settings = dict(pools), settings
        for posture_id, pool in self._pools.items():
            card = self._cards[posture_id]
            card.pool.set_size(settings.value(f"pool/{posture_id}", 0))
            card.pool.show()
            self._spawn(pool.resize(card.pool.size_box.value()))
        self.on_pool_timer_timeout()
        self._pool_timer.start()

    def prime(self, skill: Skill, posture: Posture, layout: DataLayout) -> None:
        """Get `posture`'s pool ready for the next run of `skill` (in a fresh workspace)."""
        pool = self._pools.get(posture.id)
        if pool is None:
            return
        workspace = layout.fresh_workspace(new_run_id())
        session = SessionSpec(skill.path, skill.name, workspace, layout.runs_root)
        self._primed = (pool, posture, session)
        self._prime_timer.start()

    async def shutdown(self) -> None:
        """Wait for the pool calls in progress (the app closes the pools after)."""
        self._pool_timer.stop()
        self._prime_timer.stop()
        self._primed = None
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # Slots ------------------------------------------------------------------------------

    def on_pool_size_value_changed(self, size: int) -> None:
        card = next(c for c in self._cards.values() if c.pool.size_box is self.sender())
        pool = self._pools.get(card.posture_id)
        if pool is None or self._settings is None:
            return
        self._settings.setValue(f"pool/{card.posture_id}", size)
        self._spawn(pool.resize(size))
        card.pool.show_status(pool.status())

    def on_prime_timer_timeout(self) -> None:
        if self._primed is not None:
            pool, posture, session = self._primed
            self._primed = None
            self._spawn(pool.prime(posture, session))

    def on_pool_timer_timeout(self) -> None:
        for posture_id, pool in self._pools.items():
            self._cards[posture_id].pool.show_status(pool.status())

    def on_group_button_clicked(self, button: QAbstractButton) -> None:
        posture_id = next(p for p, card in self._cards.items() if card.radio is button)
        if posture_id is self._chosen:
            return
        if posture_id is not PostureId.LOCAL:
            self._set_chosen(posture_id)
            return
        self._set_chosen(self._chosen)  # keep the old choice until the user confirms
        self._ask_local()

    def on_confirm_finished(self, _result: int) -> None:
        box = self._confirm
        self._confirm = None
        if box is None:
            return
        if box.buttonRole(box.clickedButton()) == QMessageBox.ButtonRole.AcceptRole:
            self._set_chosen(PostureId.LOCAL)
        box.deleteLater()

    # Internals --------------------------------------------------------------------------

    def _ask_local(self) -> None:
        if self._confirm is not None:
            return
        box = QMessageBox(self)
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle("Run without a sandbox?")
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setText("The local posture runs skills with NO SANDBOX.")
        box.setInformativeText(
            "The skill runs as you: it can read, change and delete any of your files, "
            "reach the network, and read every secret in your environment. "
            "Only use it for skills you wrote yourself or have read line by line."
        )
        box.addButton("Use local — no sandbox", QMessageBox.ButtonRole.AcceptRole)
        keep = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(keep)
        box.setEscapeButton(keep)
        box.finished.connect(self.on_confirm_finished)
        self._confirm = box
        box.open()

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _set_chosen(self, posture_id: PostureId | None) -> None:
        changed = posture_id is not self._chosen
        self._chosen = posture_id
        self._group.setExclusive(posture_id is not None)
        for card_id, card in self._cards.items():
            card.radio.setChecked(card_id is posture_id)
            if changed:
                card.set_expanded(card_id is posture_id)
            card.setProperty("chosen", card_id is posture_id)
            card.style().unpolish(card)
            card.style().polish(card)
        if changed and posture_id is not None:
            self.posture_changed.emit(posture_id)


_WARNING_STATUS = {Severity.DANGER: "danger", Severity.CAUTION: "warning", Severity.INFO: "muted"}


def _bullet(mark: str, mark_status: str, text: str, text_status: str, parent: QWidget) -> QWidget:
    """One line of a card: a coloured mark and wrapped text beside it."""
    row = QWidget(parent)
    layout = QHBoxLayout(row)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(6)
    mark_label = plain_label(mark, row)
    set_status(mark_label, mark_status)
    text_label = plain_label(text, row, wrap=True)
    if text_status:
        set_status(text_label, text_status)
    layout.addWidget(mark_label, 0, Qt.AlignmentFlag.AlignTop)
    layout.addWidget(text_label, 1)
    return row
