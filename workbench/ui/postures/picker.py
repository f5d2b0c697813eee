"""The posture picker: one card per executor posture, and the choice between them.

`PosturePicker` shows a `PostureCard` per posture (what it is, whether it can run here, what it
guarantees and does not, its `assess()` warnings), folded to a few lines but for the chosen one,
which unfolds and is kept scrolled into view (six cards fit an 800-pixel-high window); it chooses
the strongest available posture by default, asks before `local` is chosen, and follows the
selected skill (`set_skill`: postures that cannot start its command say so, and until the user
chooses, the choice moves to the strongest one that can). Once `set_pools()` hands over the warm
pools, the docker, gvisor and quickjs cards show and size theirs, and `prime()` readies the
chosen posture's pool for the skill the user stops at; pool calls run in the picker's `Tasks`
until `shutdown()`.
"""

from collections.abc import Mapping

from PySide6.QtCore import QEvent, QObject, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QPaintEvent, QPalette, QResizeEvent
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

from workbench.authoring.preview import unrunnable_postures
from workbench.errors import PostureError
from workbench.executors.types import SessionSpec, new_run_id
from workbench.executors.warm.starts import WarmPool
from workbench.postures.description import POSTURE_INFO, assess, default_reason
from workbench.postures.model import (
    STRENGTH_ORDER,
    Availability,
    Posture,
    PostureId,
    Severity,
    default_posture_id,
)
from workbench.runs.layout import DataLayout
from workbench.skills import Skill
from workbench.ui.common.tasks import Tasks
from workbench.ui.common.text import tooltip
from workbench.ui.common.widgets import ElidedLabel, plain_label, set_status
from workbench.ui.postures.pool import PoolControls
from workbench.ui.theme import FLAT_TOGGLE, paint_panel

CARD_RADIUS = 6
CARD_ORDER = (
    PostureId.GVISOR,
    PostureId.DOCKER,
    PostureId.BUBBLEWRAP,
    PostureId.HARDENED,
    PostureId.QUICKJS,
    PostureId.LOCAL,
)
FITTING_ORDER = (*STRENGTH_ORDER, PostureId.QUICKJS)  # chosen for a skill, strongest first
POOL_REFRESH_MS = 500
PRIME_DELAY_MS = 300


class PostureCard(QFrame):
    """Everything a user should know about one posture, with a radio button to choose it.

    Folded (the default for a posture not chosen), a card is its title, whether it can run here
    and, for a posture with a DANGER warning, the first of those, each on one line; unfolded
    (the chosen posture's, or any the user opens with its arrow), the whole availability, what
    the posture is, every warning, the warm pool and "Guarantees and limits".
    """

    def __init__(self, posture_id: PostureId, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.posture_id = posture_id
        info = POSTURE_INFO[posture_id]
        self.setFrameShape(QFrame.Shape.StyledPanel)  # its width; `paintEvent` draws it
        self._chosen = False

        self.radio = QRadioButton(info.title, self)
        font = self.radio.font()
        font.setBold(True)
        self.radio.setFont(font)
        self.radio.setEnabled(False)
        self.radio.setAccessibleName(f"Posture: {info.title}")
        self.fold_button = QToolButton(self)
        self.fold_button.setObjectName("foldToggle")
        self.fold_button.setCheckable(True)
        self.fold_button.setAutoRaise(True)
        self.fold_button.setArrowType(Qt.ArrowType.RightArrow)
        self.fold_button.setAccessibleName(f"Show everything about {info.title}")
        self.fold_button.setToolTip("Show or hide what this posture is, its warnings and limits")
        self.availability = ElidedLabel(Qt.TextElideMode.ElideRight, self)
        self.availability.set_full_text("checking…")
        set_status(self.availability, "muted")
        self.unrunnable = ElidedLabel(Qt.TextElideMode.ElideRight, self)
        self.unrunnable.setObjectName("unrunnable")
        self.unrunnable.hide()
        warnings = assess(Posture(posture_id))
        danger = next((w for w in warnings if w.severity is Severity.DANGER), None)
        self.danger = ElidedLabel(Qt.TextElideMode.ElideRight, self)
        self.danger.set_full_text(f"⚠ DANGER: {danger.text}" if danger else "")
        set_status(self.danger, "danger")
        self.danger.setVisible(danger is not None)

        self.body = QWidget(self)
        body = QVBoxLayout(self.body)
        body.setContentsMargins(0, 0, 0, 0)
        body.setSpacing(3)
        body.addWidget(plain_label(info.summary, self.body, wrap=True))
        for warning in warnings:
            status = _WARNING_STATUS[warning.severity]
            if warning.severity is Severity.INFO:
                row = _bullet("ℹ", status, warning.text, status, self.body)
            else:
                text = f"{warning.severity.upper()}: {warning.text}"
                row = _bullet("⚠", status, text, status, self.body)
            row.setObjectName(f"warning_{warning.severity}")
            body.addWidget(row)
        noun = "worker" if posture_id is PostureId.QUICKJS else "container"
        self.pool = PoolControls(info.title, noun, self.body)
        self.pool.hide()
        self._pooled = False  # the posture has a warm pool (shown while the posture can run)
        self._available = False
        body.addWidget(self.pool)
        self.details_button = QToolButton(self.body)
        self.details_button.setObjectName(FLAT_TOGGLE)
        self.details_button.setText("Guarantees and limits")
        self.details_button.setCheckable(True)
        self.details_button.setAutoRaise(True)
        self.details_button.setArrowType(Qt.ArrowType.RightArrow)
        self.details_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.details = QWidget(self.body)
        details = QVBoxLayout(self.details)
        details.setContentsMargins(0, 0, 0, 0)
        details.setSpacing(3)
        for text in info.guarantees:
            details.addWidget(_bullet("✓", "ok", text, "", self.details))
        for text in info.does_not:
            does_not = f"Does not {text[0].lower()}{text[1:]}"
            details.addWidget(_bullet("✗", "danger", does_not, "", self.details))
        self.details.hide()
        body.addWidget(self.details_button, 0, Qt.AlignmentFlag.AlignLeft)
        body.addWidget(self.details)
        self.body.hide()

        title_row = QHBoxLayout()
        title_row.setSpacing(4)
        title_row.addWidget(self.radio, 1)
        title_row.addWidget(self.fold_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 6, 6)
        layout.setSpacing(2)
        layout.addLayout(title_row)
        layout.addWidget(self.availability)
        layout.addWidget(self.unrunnable)
        layout.addWidget(self.danger)
        layout.addWidget(self.body)
        self._connect_signals()

    def _connect_signals(self) -> None:
        self.fold_button.toggled.connect(self.on_fold_button_toggled)
        self.details_button.toggled.connect(self.on_details_button_toggled)

    def set_chosen(self, chosen: bool) -> None:
        """Draw the card as the chosen posture's (a thicker border in the highlight colour)."""
        if chosen != self._chosen:
            self._chosen = chosen
            self.update()

    def is_chosen(self) -> bool:
        """Whether the card is drawn as the chosen posture's."""
        return self._chosen

    def paintEvent(self, event: QPaintEvent) -> None:
        del event
        palette = self.palette()
        role = QPalette.ColorRole.Highlight if self._chosen else QPalette.ColorRole.Mid
        fill = palette.color(QPalette.ColorRole.AlternateBase)
        paint_panel(self, palette.color(role), fill, CARD_RADIUS, 2 if self._chosen else 1)

    def set_unfolded(self, unfolded: bool) -> None:
        """Show everything about the posture (True), or just its title and state."""
        self.fold_button.setChecked(unfolded)

    def is_unfolded(self) -> bool:
        """Whether the card shows everything about the posture."""
        return self.fold_button.isChecked()

    def set_expanded(self, expanded: bool) -> None:
        """Show or hide the guarantees and non-guarantees."""
        self.details_button.setChecked(expanded)

    def on_fold_button_toggled(self, checked: bool) -> None:
        self.body.setVisible(checked)
        self.danger.setVisible(not checked and bool(self.danger.full_text()))
        for label in (self.availability, self.unrunnable):
            label.set_wrapped(checked)
        self.fold_button.setArrowType(
            Qt.ArrowType.DownArrow if checked else Qt.ArrowType.RightArrow
        )

    def on_details_button_toggled(self, checked: bool) -> None:
        self.details.setVisible(checked)
        arrow = Qt.ArrowType.DownArrow if checked else Qt.ArrowType.RightArrow
        self.details_button.setArrowType(arrow)

    def set_availability(self, availability: Availability) -> None:
        """Show whether the posture can run here, and allow choosing it only if it can."""
        state = "Available" if availability.available else "Unavailable"
        reason = availability.reason
        self.availability.set_full_text(
            reason if state.lower() in reason.lower() else f"{state} — {reason}"
        )
        set_status(self.availability, "ok" if availability.available else "muted")
        self.radio.setEnabled(availability.available)
        self._available = availability.available
        self.pool.setVisible(self._pooled and self._available)

    def show_pool(self) -> None:
        """Show the warm pool's row (while the posture can run here)."""
        self._pooled = True
        self.pool.setVisible(self._available)

    def show_unrunnable(self, skill_name: str, reason: str, chosen: bool) -> None:
        """Say that this posture cannot run the selected skill ("" `reason` when it can): why,
        in the danger colour, on the chosen posture's card; briefly (why in the tool tip) on
        the others."""
        warning = f"Cannot run {skill_name}" + (f": {reason}." if chosen else ".")
        self.unrunnable.set_full_text(warning if reason else "")
        self.unrunnable.setToolTip(tooltip(reason) if reason else "")
        self.unrunnable.setVisible(bool(reason))
        set_status(self.unrunnable, "danger" if chosen else "warning")


class PosturePicker(QScrollArea):
    """A scrollable column of posture cards; exactly one posture is chosen at a time.

    Signals:
        posture_changed(object): the newly chosen `PostureId`.
    """

    posture_changed = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._chosen: PostureId | None = None
        self._user_chose = False  # the user picked a posture: skills no longer move the choice
        self._availability: dict[PostureId, Availability] = {}
        self._default: PostureId | None = None
        self._skill: Skill | None = None
        self._unrunnable: dict[PostureId, str] = {}
        self._confirm: QMessageBox | None = None
        self._group = QButtonGroup(self)
        self._cards: dict[PostureId, PostureCard] = {}
        self._pools: dict[PostureId, WarmPool] = {}
        self._settings: QSettings | None = None
        self.tasks = Tasks(self)  # the pool calls
        self._pool_timer = QTimer(self)
        self._pool_timer.setInterval(POOL_REFRESH_MS)
        self._prime_timer = QTimer(self)  # browsing skills primes once, for the last one
        self._prime_timer.setSingleShot(True)
        self._prime_timer.setInterval(PRIME_DELAY_MS)
        self._primed: tuple[WarmPool, Posture, SessionSpec] | None = None
        self._reveal_timer = QTimer(self)  # the chosen card stays in view
        self._reveal_timer.setSingleShot(True)
        self._reveal_timer.setInterval(0)

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
            card.radio.installEventFilter(self)
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
        self._reveal_timer.timeout.connect(self._reveal_chosen)
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
        """Show the probe's answer and choose the default posture (or the one that fits the
        selected skill) unless the user chose one that is still available."""
        self._availability = dict(availability)
        for posture_id, card in self._cards.items():
            card.set_availability(availability[posture_id])
        try:
            self._default = default_posture_id(availability)
        except PostureError as error:
            self._default = None
            self._hint.setText(str(error))
        self._fit_choice()

    def set_skill(self, skill: Skill | None) -> None:
        """Fit the choice to `skill`: warn on the cards of the postures that cannot start its
        command, and move off them unless the user chose the posture."""
        self._skill = skill
        self._unrunnable = unrunnable_postures(skill) if skill is not None else {}
        self._fit_choice()

    def choose(self, posture_id: PostureId) -> None:
        """Choose `posture_id` as if its card were clicked (local still asks first)."""
        card = self._cards[posture_id]
        if card.radio.isEnabled():
            self.on_group_button_clicked(card.radio)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Keep the chosen card in view when the column changes size."""
        super().resizeEvent(event)
        self._reveal_timer.start()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Arrow keys on a posture's radio button choose the next or previous posture that
        can be chosen (Qt would only move the focus between the cards)."""
        if isinstance(event, QKeyEvent) and event.type() == QEvent.Type.KeyPress:
            step = _ARROW_STEPS.get(Qt.Key(event.key()))
            if step is not None and event.modifiers() == Qt.KeyboardModifier.NoModifier:
                self._step_choice(watched, step)
                return True
        return super().eventFilter(watched, event)

    def set_pools(self, pools: Mapping[PostureId, WarmPool], settings: QSettings) -> None:
        """Show and drive the warm pools of the postures that have one, at the sizes the
        settings remember."""
        self._pools, self._settings = dict(pools), settings
        for posture_id, pool in self._pools.items():
            card = self._cards[posture_id]
            card.pool.set_size(settings.value(f"pool/{posture_id}", 0))
            card.show_pool()
            self.tasks.spawn(pool.resize(card.pool.size_box.value()))
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
        await self.tasks.close(grace_s=None)

    # Slots ------------------------------------------------------------------------------

    def on_pool_size_value_changed(self, size: int) -> None:
        card = next(c for c in self._cards.values() if c.pool.size_box is self.sender())
        pool = self._pools.get(card.posture_id)
        if pool is None or self._settings is None:
            return
        self._settings.setValue(f"pool/{card.posture_id}", size)
        self.tasks.spawn(pool.resize(size))
        card.pool.show_status(pool.status())

    def on_prime_timer_timeout(self) -> None:
        if self._primed is not None:
            pool, posture, session = self._primed
            self._primed = None
            self.tasks.spawn(pool.prime(posture, session))

    def on_pool_timer_timeout(self) -> None:
        for posture_id, pool in self._pools.items():
            self._cards[posture_id].pool.show_status(pool.status())

    def on_group_button_clicked(self, button: QAbstractButton) -> None:
        posture_id = next(p for p, card in self._cards.items() if card.radio is button)
        if posture_id is self._chosen:
            return
        if posture_id is not PostureId.LOCAL:
            self._user_chose = True
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
            self._user_chose = True
            self._set_chosen(PostureId.LOCAL)
        box.deleteLater()

    # Internals --------------------------------------------------------------------------

    def _fit_choice(self) -> None:
        """Keep the user's choice while it is available; otherwise choose the default, or the
        strongest available posture that can run the selected skill."""
        chosen = self._chosen
        kept = self._user_chose and chosen is not None and self._can_choose(chosen)
        if not kept:  # a choice the machine can no longer run is the user's no more
            self._user_chose = False
            fitting = [
                p for p in FITTING_ORDER if self._can_choose(p) and p not in self._unrunnable
            ]
            chosen = self._default
            if self._default in self._unrunnable and fitting:
                chosen = fitting[0]
        self._set_chosen(chosen)

    def _can_choose(self, posture_id: PostureId) -> bool:
        availability = self._availability.get(posture_id)
        return availability is not None and availability.available

    def _show_hint(self) -> None:
        name = self._skill.name if self._skill is not None else ""
        for posture_id, card in self._cards.items():
            chosen = posture_id is self._chosen
            card.show_unrunnable(name, self._unrunnable.get(posture_id, ""), chosen)
        if self._default is None:
            return  # the hint says why no posture can be chosen
        default = f"Default: {default_reason(self._availability)}"
        if self._chosen in (self._default, None):
            self._hint.setText(default)
        elif self._user_chose or self._skill is None:
            self._hint.setText(f"Your choice: {POSTURE_INFO[self._chosen].title}. {default}")
        else:
            title = POSTURE_INFO[self._chosen].title
            why = self._unrunnable.get(self._default, "")
            self._hint.setText(f"{title} chosen for {self._skill.name}: {why}.")

    def _step_choice(self, radio: QObject, step: int) -> None:
        """Choose the posture `step` cards after (or before) the one of `radio`, skipping
        those that cannot be chosen here."""
        order = [card for card in self._cards.values() if card.radio.isEnabled()]
        current = next((i for i, card in enumerate(order) if card.radio is radio), None)
        if current is None or not order:
            return
        card = order[(current + step) % len(order)]
        card.radio.setFocus(Qt.FocusReason.TabFocusReason)
        self.ensureWidgetVisible(card.radio)
        self.choose(card.posture_id)

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

    def _set_chosen(self, posture_id: PostureId | None) -> None:
        changed = posture_id is not self._chosen
        self._chosen = posture_id
        self._group.setExclusive(posture_id is not None)
        for card_id, card in self._cards.items():
            card.radio.setChecked(card_id is posture_id)
            tab_stop = card_id is posture_id or (posture_id is None and card_id is CARD_ORDER[0])
            card.radio.setFocusPolicy(  # Tab lands on the chosen posture, as in a radio group
                Qt.FocusPolicy.StrongFocus if tab_stop else Qt.FocusPolicy.ClickFocus
            )
            if changed:
                card.set_unfolded(card_id is posture_id)
            card.set_chosen(card_id is posture_id)
        self._show_hint()
        if changed and posture_id is not None:
            self.posture_changed.emit(posture_id)
        self._reveal_timer.start()  # once the unfolded card has its size

    def _reveal_chosen(self) -> None:
        """Scroll the chosen card into view, its title first when the whole does not fit."""
        if self._chosen is not None:
            card = self._cards[self._chosen]
            self.ensureWidgetVisible(card, 0, 8)
            self.ensureWidgetVisible(card.radio, 0, 8)


_ARROW_STEPS = {Qt.Key.Key_Down: 1, Qt.Key.Key_Right: 1, Qt.Key.Key_Up: -1, Qt.Key.Key_Left: -1}
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
