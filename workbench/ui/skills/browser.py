"""The skill browser: a searchable, keyboard-navigable list of skills with diagnostics badges.

`SkillBrowser` lists the skills with name, first description line and a validity badge, painted as
plain text since they come from untrusted files; it keeps the current skill through searches (Esc
restores the last chosen one) and says in `skill_gone` when a new list lost it.
"""

from pathlib import Path

from PySide6.QtCore import (
    QModelIndex,
    QPersistentModelIndex,
    QRect,
    QSize,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QFont, QKeyEvent, QPainter, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLabel,
    QLineEdit,
    QListView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from workbench.ansi import reveal_bidi
from workbench.skills import Skill
from workbench.ui.common.text import badge_text, diagnostic_counts, tooltip
from workbench.ui.theme import icon, status_colors

SKILL_ROLE = Qt.ItemDataRole.UserRole + 1
SEARCH_ROLE = Qt.ItemDataRole.UserRole + 2

_Index = QModelIndex | QPersistentModelIndex


class SkillBrowser(QWidget):
    """A search field over a list of skills.

    Signals:
        skill_selected(object): the current `Skill`, or None when no skill is current.
        skill_gone(str): the current skill left the list, in a sentence naming the one shown.
    """

    skill_selected = Signal(object)
    skill_gone = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._model = QStandardItemModel(self)
        self._proxy = QSortFilterProxyModel(self)
        self._proxy.setSourceModel(self._model)
        self._proxy.setFilterRole(SEARCH_ROLE)
        self._proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self._proxy.setSortCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self._chosen: Path | None = None  # the skill last made current, even if filtered out

        self._search = _SearchField(self)
        self._search.setPlaceholderText("Search skills (Ctrl+F)")
        self._search.setClearButtonEnabled(True)
        self._search.setAccessibleName("Search skills")

        self._list = QListView(self)
        self._list.setModel(self._proxy)
        self._list.setItemDelegate(_SkillDelegate(self._list))
        self._list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self._list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self._list.setUniformItemSizes(True)
        self._list.setAccessibleName("Skills")

        self._empty = QLabel("No skill matches the search.", self)
        self._empty.setTextFormat(Qt.TextFormat.PlainText)
        self._empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._empty.setEnabled(False)
        self._empty.hide()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addWidget(self._search)
        layout.addWidget(self._list, 1)
        layout.addWidget(self._empty)
        self._connect_signals()

    def _connect_signals(self) -> None:
        self._search.textChanged.connect(self.on_search_text_changed)
        self._search.move_down.connect(self.on_search_move_down)
        self._search.returnPressed.connect(self.on_search_move_down)
        self._search.escape.connect(self.on_search_escape)
        self._list.selectionModel().currentChanged.connect(self.on_list_current_changed)

    # Public API -------------------------------------------------------------------------

    def set_skills(self, skills: list[Skill]) -> None:
        """Replace the whole list, in place: the current skill stays current when it is still
        there (shown again as read now, never passing through another one); when it is gone,
        the first skill becomes current and `skill_gone` says so."""
        current = self.current_skill()
        listed = {skill.path for skill in skills}
        for row in reversed(range(self._model.rowCount())):
            item = self._model.item(row)
            if item is not None and item.data(SKILL_ROLE).path not in listed:
                self._model.removeRow(row)
        self.add_skills(skills, select=False)
        if current is None:
            return
        if self._row_of(current.path) is not None:
            if (now := self.current_skill()) is not None and now.path == current.path:
                self.skill_selected.emit(now)
            return
        self.select_first()
        shown = self.current_skill()
        showing = f"showing {shown.name}" if shown is not None else "no skill is selected"
        self.skill_gone.emit(f"{current.name} is gone from disk ({current.path}); {showing}.")

    def add_skills(self, skills: list[Skill], select: bool = True) -> None:
        """Add or refresh skills (matched by folder); with `select`, make the first current."""
        for skill in skills:
            existing = self._row_of(skill.path)
            if existing is not None:
                self._model.item(existing).setData(skill, SKILL_ROLE)
            else:
                self._model.appendRow(_make_item(skill))
        self._proxy.sort(0)
        self._update_empty_hint()
        if select and skills:
            self.select_path(skills[0].path)

    def skills(self) -> list[Skill]:
        """Every skill in the list, in display order, ignoring the search."""
        return [
            self._proxy.sourceModel().index(row, 0).data(SKILL_ROLE)
            for row in range(self._model.rowCount())
        ]

    def visible_skills(self) -> list[Skill]:
        """The skills that match the current search, in display order."""
        return [self._proxy.index(row, 0).data(SKILL_ROLE) for row in range(self._proxy.rowCount())]

    def current_skill(self) -> Skill | None:
        """The skill the list's cursor is on, if any."""
        skill: Skill | None = self._list.currentIndex().data(SKILL_ROLE)
        return skill

    def select_path(self, path: Path) -> bool:
        """Make the skill in folder `path` current; False when it is not listed or filtered out."""
        row = self._row_of(path)
        if row is None:
            return False
        index = self._proxy.mapFromSource(self._model.index(row, 0))
        if not index.isValid():
            return False
        self._list.setCurrentIndex(index)
        self._list.scrollTo(index)
        return True

    def select_first(self) -> None:
        """Make the first visible skill current."""
        if self._proxy.rowCount():
            self._list.setCurrentIndex(self._proxy.index(0, 0))

    def focus_search(self) -> None:
        """Put the keyboard focus in the search field with its text selected."""
        self._search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self._search.selectAll()

    def set_search_text(self, text: str) -> None:
        """Filter the list as if `text` had been typed in the search field."""
        self._search.setText(text)

    # Slots ------------------------------------------------------------------------------

    def on_search_text_changed(self, text: str) -> None:
        self._proxy.setFilterFixedString(text.strip())
        self._update_empty_hint()
        if self._list.currentIndex().isValid():
            return
        if self._chosen is None or not self.select_path(self._chosen):
            self.select_first()

    def on_search_escape(self) -> None:
        self._search.clear()

    def on_search_move_down(self) -> None:
        self._list.setFocus(Qt.FocusReason.OtherFocusReason)
        if not self._list.currentIndex().isValid():
            self.select_first()

    def on_list_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        skill: Skill | None = current.data(SKILL_ROLE) if current.isValid() else None
        if skill is not None:
            self._chosen = skill.path
        self.skill_selected.emit(skill)

    # Internals --------------------------------------------------------------------------

    def _row_of(self, path: Path) -> int | None:
        for row in range(self._model.rowCount()):
            skill: Skill = self._model.item(row).data(SKILL_ROLE)
            if skill.path == path:
                return row
        return None

    def _update_empty_hint(self) -> None:
        self._empty.setText(
            "No skill matches the search." if self._model.rowCount() else "No skills found."
        )
        self._empty.setVisible(self._proxy.rowCount() == 0)


class _SearchField(QLineEdit):
    """A line edit that hands the keyboard to the list on Down and clears itself on Esc.

    Signals:
        move_down(): the user pressed Down to move into the list.
        escape(): the user pressed Esc in a field holding text (an empty one lets Esc go on).
    """

    move_down = Signal()
    escape = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Down:
            self.move_down.emit()
            return
        if event.key() == Qt.Key.Key_Escape and self.text():
            self.escape.emit()
            return
        super().keyPressEvent(event)


def _make_item(skill: Skill) -> QStandardItem:
    item = QStandardItem(skill.name)
    item.setEditable(False)
    item.setData(skill, SKILL_ROLE)
    item.setData(f"{skill.name}\n{skill.description}", SEARCH_ROLE)
    item.setData(f"{skill.name}: {badge_text(skill)}", Qt.ItemDataRole.AccessibleTextRole)
    item.setToolTip(tooltip(str(skill.path)))
    return item


class _SkillDelegate(QStyledItemDelegate):
    """Paints a row: bold name, muted one-line description, badge on the right."""

    _PAD = 8

    def sizeHint(self, option: QStyleOptionViewItem, index: _Index) -> QSize:
        del index
        height = option.fontMetrics.height()
        return QSize(200, 2 * height + 3 * self._PAD // 2 + 4)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: _Index) -> None:
        skill: Skill | None = index.data(SKILL_ROLE)
        if skill is None:
            return
        style = option.widget.style() if option.widget else None
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, option.widget)

        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        palette = option.palette
        colors = status_colors(palette)
        text_color = palette.highlightedText().color() if selected else palette.text().color()
        muted = text_color if selected else colors.muted
        rect = option.rect.adjusted(self._PAD, self._PAD // 2 + 2, -self._PAD, -self._PAD // 2)
        line = option.fontMetrics.height()

        painter.save()
        badge_rect = self._paint_badge(painter, option, skill, rect, selected)
        text_right = badge_rect.left() - self._PAD
        name_font = QFont(option.font)
        name_font.setBold(True)
        painter.setFont(name_font)
        painter.setPen(text_color)
        name_rect = QRect(rect.left(), rect.top(), text_right - rect.left(), line)
        name = painter.fontMetrics().elidedText(
            reveal_bidi(skill.name), Qt.TextElideMode.ElideRight, name_rect.width()
        )
        painter.drawText(
            name_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, name
        )

        painter.setFont(option.font)
        painter.setPen(muted)
        desc_rect = QRect(rect.left(), rect.top() + line + 2, rect.width(), line)
        first_line = " ".join(reveal_bidi(skill.description).split()) or "(no description)"
        desc = option.fontMetrics.elidedText(
            first_line, Qt.TextElideMode.ElideRight, desc_rect.width()
        )
        painter.drawText(
            desc_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, desc
        )
        painter.restore()

    def _paint_badge(
        self,
        painter: QPainter,
        option: QStyleOptionViewItem,
        skill: Skill,
        rect: QRect,
        selected: bool,
    ) -> QRect:
        """Draw the error and warning counts and a tick when valid, right-aligned at the top;
        returns the space used."""
        errors, warnings = diagnostic_counts(skill)
        marks = [("valid", "")] if skill.valid else []
        marks += [(name, str(n)) for name, n in (("warning", warnings), ("error", errors)) if n]
        metrics = option.fontMetrics
        line = metrics.height()
        size = min(16, line)
        colors = status_colors(option.palette)
        x = rect.right()
        for name, label in reversed(marks):
            if label:
                width = metrics.horizontalAdvance(label)
                x -= width
                colour = colors.danger if name == "error" else colors.warning
                painter.setPen(option.palette.highlightedText().color() if selected else colour)
                painter.drawText(
                    QRect(x, rect.top(), width, line),
                    Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                    label,
                )
                x -= 3
            x -= size
            icon(name).paint(painter, QRect(x, rect.top() + (line - size) // 2, size, size))
            x -= 8
        return QRect(x, rect.top(), rect.right() - x, line)
