"""The skill view: one skill's header, SKILL.md body, front matter, diagnostics, files, the
capability preview (a prediction from a static read, labelled as such, never a security control)
and its environment (`EnvironmentPanel`).

Everything shown here comes from the skill's own files and is untrusted. Labels are plain
text, the body is rendered as Markdown with HTML turned off, links are never opened and
images are never loaded (a link to a file inside the skill selects it in the Files tab).
The name, path and description in the header are elided to one line each (whole in their
tool tips; "More" shows the whole description), so a long name or a 1,000-character
description never widens the window or squeezes SKILL.md. Code blocks in SKILL.md wrap, so no
line of it needs a horizontal scroll bar.
"""

from pathlib import Path, PurePosixPath
from typing import Any

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QFont, QTextBlockFormat, QTextCursor, QTextDocument
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QTabWidget,
    QTextBrowser,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.ansi import reveal_bidi
from workbench.authoring.preview import CapabilityPreview, preview
from workbench.postures.description import POSTURE_INFO
from workbench.skills import Skill
from workbench.skills.diagnostics import UNREADABLE_FRONT_MATTER
from workbench.ui.common.text import badge_text, diagnostic_counts, plural, tooltip
from workbench.ui.common.widgets import ElidedLabel, plain_label, set_status
from workbench.ui.skills.environment import EnvironmentPanel
from workbench.ui.skills.files import FileBrowser
from workbench.ui.theme import icon

ADVISED_LINES = 500
ADVISED_TOKENS = 5000
_MARKDOWN = QTextDocument.MarkdownFeature(
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub.value
    | QTextDocument.MarkdownFeature.MarkdownNoHTML.value
)


class MarkdownView(QTextBrowser):
    """A Markdown viewer that loads no resources and opens no links itself.

    Signals:
        link_activated(QUrl): the user clicked a link (the owner decides what happens).
    """

    link_activated = Signal(QUrl)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.document().setDocumentMargin(12)
        self.anchorClicked.connect(self.link_activated)

    def set_markdown(self, text: str) -> None:
        """Render `text` as GitHub-flavoured Markdown, any HTML in it shown literally, with
        code blocks wrapped at the view's width."""
        document = self.document()
        document.setMarkdown(text, _MARKDOWN)
        block = document.begin()
        while block.isValid():
            if block.blockFormat().nonBreakableLines():
                wrapped = QTextBlockFormat()
                wrapped.setNonBreakableLines(False)
                QTextCursor(block).mergeBlockFormat(wrapped)
            block = block.next()

    def loadResource(self, type: int, name: QUrl | str) -> Any:
        """Never fetch images or style sheets named by untrusted text."""
        del type, name
        return None


class SkillView(QWidget):
    """Everything about one skill, in a header and tabs (the last: its environment).

    Signals:
        status_message(str): a short message for the status bar.
    """

    status_message = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._skill: Skill | None = None
        self._described: Path | None = None  # the skill whose description More applies to
        self._name = ElidedLabel(Qt.TextElideMode.ElideRight, self)
        font = QFont(self._name.font())
        font.setPointSizeF(font.pointSizeF() * 1.35)
        font.setBold(True)
        self._name.setFont(font)
        self._name.setAccessibleName("Skill name")
        self._badge = plain_label("", self)
        self._path = ElidedLabel(Qt.TextElideMode.ElideMiddle, self)
        self._path.setAccessibleName("Skill folder")
        set_status(self._path, "muted")
        self._description = ElidedLabel(Qt.TextElideMode.ElideRight, self)
        self._description.setAccessibleName("Skill description")
        self._description.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.more_button = QToolButton(self)
        self.more_button.setText("More")
        self.more_button.setCheckable(True)
        self.more_button.setAutoRaise(True)
        self.more_button.setAccessibleName("Show the whole description")
        self.more_button.setToolTip("Show the whole description")
        self.more_button.hide()
        self._budget = plain_label("", self)

        self._body = MarkdownView(self)
        self._body.setAccessibleName("SKILL.md body")
        self._front = QTreeWidget(self)
        self._front.setHeaderLabels(["Field", "Value"])
        self._front.setAccessibleName("Front matter")
        self._front.setColumnWidth(0, 180)
        self._front_message = plain_label("", self, wrap=True)
        self._front_message.setAccessibleName("Front matter problem")
        self._front_message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._front_page = QWidget(self)
        page = QVBoxLayout(self._front_page)
        page.setContentsMargins(4, 4, 4, 0)
        page.addWidget(self._front_message)
        page.addWidget(self._front, 1)
        page.addStretch(0)
        self._diagnostics = QTreeWidget(self)
        self._diagnostics.setHeaderLabels(["Where", "Message", "Code"])
        self._diagnostics.setRootIsDecorated(False)
        self._diagnostics.setWordWrap(True)  # a message is read whole, not cut at the column
        self._diagnostics.setAccessibleName("Diagnostics")
        header = self._diagnostics.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self._diagnostic_details = plain_label("", self, wrap=True)
        self._diagnostic_details.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
        )
        self._diagnostics_page = QWidget(self)
        page = QVBoxLayout(self._diagnostics_page)
        page.setContentsMargins(0, 0, 0, 0)
        page.addWidget(self._diagnostics, 1)
        page.addWidget(self._diagnostic_details)
        self._files = FileBrowser(self)
        self._capabilities = QTreeWidget(self)
        self._capabilities.setHeaderHidden(True)
        self._capabilities.setAccessibleName("Capability preview")
        self._prediction = plain_label("", self, wrap=True)
        set_status(self._prediction, "warning")
        self._capabilities_page = QWidget(self)
        page = QVBoxLayout(self._capabilities_page)
        page.setContentsMargins(0, 4, 0, 0)
        page.addWidget(self._prediction)
        page.addWidget(self._capabilities, 1)

        self._tabs = QTabWidget(self)
        self._tabs.setDocumentMode(True)
        self._tabs.setAccessibleName("Skill details")
        self._tabs.addTab(self._body, "SKILL.md")
        self._tabs.addTab(self._front_page, "Front matter")
        self._tabs.addTab(self._diagnostics_page, "Diagnostics")
        self._tabs.addTab(self._files, "Files")
        self._tabs.addTab(self._capabilities_page, "Capabilities")
        self.environment = EnvironmentPanel(self)
        self._tabs.addTab(self.environment, "Environment")

        self._placeholder = plain_label("Select a skill to see its instructions and files.", self)
        self._placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._placeholder.setEnabled(False)

        self._build_layout()
        self._connect_signals()
        self.show_skill(None)

    def _build_layout(self) -> None:
        title_row = QHBoxLayout()
        title_row.setSpacing(10)
        title_row.addWidget(self._name)
        title_row.addWidget(self._badge)
        title_row.addStretch(1)
        title_row.addWidget(self._budget)
        description_row = QHBoxLayout()
        description_row.setSpacing(4)
        description_row.addWidget(self._description, 1)
        description_row.addWidget(self.more_button)
        self._header = QFrame(self)
        header = QVBoxLayout(self._header)
        header.setContentsMargins(4, 0, 4, 2)
        header.setSpacing(2)
        header.addLayout(title_row)
        header.addLayout(description_row)
        header.addWidget(self._path)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addWidget(self._header)
        layout.addWidget(self._tabs, 1)
        layout.addWidget(self._placeholder, 1)

    def _connect_signals(self) -> None:
        self._description.elided_changed.connect(self.on_description_elided_changed)
        self.more_button.toggled.connect(self.on_more_button_toggled)
        self._body.link_activated.connect(self.on_body_link_activated)
        self._diagnostics.itemActivated.connect(self.on_diagnostics_item_activated)
        self._diagnostics.currentItemChanged.connect(self.on_diagnostics_current_changed)
        self._tabs.currentChanged.connect(self.on_tabs_current_changed)

    # Public API -------------------------------------------------------------------------

    def show_skill(self, skill: Skill | None) -> None:
        """Show `skill`, or the empty-state hint for None (the same skill read again keeps its
        description folded or whole)."""
        self._skill = skill
        has_skill = skill is not None
        self._header.setVisible(has_skill)
        self._tabs.setVisible(has_skill)
        self._placeholder.setVisible(not has_skill)
        self._files.show_skill(skill)
        self.environment.show_skill(skill)
        if skill is None:
            return
        self._name.set_full_text(reveal_bidi(skill.name))
        self._path.set_full_text(reveal_bidi(str(skill.path)))
        description = reveal_bidi(skill.description) or "(no description)"
        self._description.set_full_text(description)
        if skill.path != self._described:  # the same skill read again keeps More as it was
            self._described = skill.path
            self.more_button.setChecked(False)
        self.on_description_elided_changed(self._description.is_elided())
        self._show_badge(skill)
        self._show_budget(skill)
        self._body.set_markdown(skill.body)
        self._show_front_matter(skill)
        self._show_diagnostics(skill)
        if not skill.usable:
            self._tabs.setCurrentWidget(self._diagnostics_page)
        self._capabilities.clear()  # read again when its tab is shown
        self.on_tabs_current_changed(self._tabs.currentIndex())

    def _show_capabilities(self, result: CapabilityPreview) -> None:
        self._prediction.setText(result.notice)
        for prediction in result.predictions:
            title = POSTURE_INFO[prediction.posture].title
            item = QTreeWidgetItem(self._capabilities, [f"{title}: {prediction.verdict}"])
            for kind, lines in (("blocked", prediction.blocked), ("allowed", prediction.allowed)):
                for line in lines:
                    item.addChild(_line_item(f"{kind}: {line}"))
        groups = (
            ("What the scripts do", [finding.summary for finding in result.findings]),
            ("Commands invoked", list(result.tools)),
            ("Not in the sandbox image", list(result.missing_tools)),
            ("Not read", list(result.skipped)),
        )
        for title, texts in groups:
            item = QTreeWidgetItem(self._capabilities, [f"{title} ({len(texts)})"])
            item.addChildren([_line_item(text) for text in texts])
        self._capabilities.expandAll()

    def skill(self) -> Skill | None:
        """The skill on show."""
        return self._skill

    def tabs(self) -> QTabWidget:
        """The tab widget (SKILL.md, Front matter, Diagnostics, Files)."""
        return self._tabs

    def body_view(self) -> MarkdownView:
        """The rendered SKILL.md body."""
        return self._body

    def diagnostics_view(self) -> QTreeWidget:
        """The diagnostics list."""
        return self._diagnostics

    def files_view(self) -> FileBrowser:
        """The file tree and preview."""
        return self._files

    # Slots ------------------------------------------------------------------------------

    def on_description_elided_changed(self, elided: bool) -> None:
        self.more_button.setVisible(elided or self.more_button.isChecked())

    def on_more_button_toggled(self, checked: bool) -> None:
        self._description.set_wrapped(checked)
        self.more_button.setText("Less" if checked else "More")
        self.more_button.setToolTip(
            "Show the description on one line" if checked else "Show the whole description"
        )

    def on_body_link_activated(self, url: QUrl) -> None:
        if self._skill is not None and url.isRelative() and url.path():
            relative = Path(PurePosixPath(url.path()))
            if self._files.select_relative(relative):
                self._tabs.setCurrentWidget(self._files)
                return
        self.status_message.emit(f"Links are not opened from skill text: {url.toString()}")

    def on_diagnostics_item_activated(self, item: QTreeWidgetItem, _column: int) -> None:
        relative = item.data(0, Qt.ItemDataRole.UserRole)
        line = item.data(1, Qt.ItemDataRole.UserRole)
        if isinstance(relative, Path) and self._files.select_relative(relative, line):
            self._tabs.setCurrentWidget(self._files)

    def on_tabs_current_changed(self, index: int) -> None:
        unread = self._capabilities.topLevelItemCount() == 0
        if self._skill and self._tabs.widget(index) is self._capabilities_page and unread:
            self._show_capabilities(preview(self._skill))  # bounded static read, on demand

    def on_diagnostics_current_changed(
        self, item: QTreeWidgetItem | None, _previous: object
    ) -> None:
        details = item.data(0, Qt.ItemDataRole.AccessibleTextRole) if item is not None else None
        self._diagnostic_details.setText(details if isinstance(details, str) else "")

    # Internals --------------------------------------------------------------------------

    def _show_badge(self, skill: Skill) -> None:
        errors, _warnings = diagnostic_counts(skill)
        self._badge.setText(("✔ " if skill.valid else "") + badge_text(skill))
        set_status(self._badge, "danger" if errors else "ok" if skill.valid else "warning")
        title = f"Diagnostics ({len(skill.diagnostics)})" if skill.diagnostics else "Diagnostics"
        self._tabs.setTabText(self._tabs.indexOf(self._diagnostics_page), title)

    def _show_budget(self, skill: Skill) -> None:
        lines, tokens = skill.body_lines, skill.body_tokens
        over = lines > ADVISED_LINES or tokens > ADVISED_TOKENS
        self._budget.setText(
            f"Body {lines:,}/{ADVISED_LINES} lines · ~{tokens:,}/{ADVISED_TOKENS:,} tokens"
        )
        self._budget.setToolTip(
            f"The body has {plural(lines, 'line')} and about {plural(tokens, 'token')}; the spec "
            f"advises under {ADVISED_LINES} lines and {ADVISED_TOKENS:,} tokens"
            + (". It is over the advice: move detail into references/." if over else ".")
        )
        set_status(self._budget, "warning" if over else "muted")

    def _show_front_matter(self, skill: Skill) -> None:
        self._front.clear()
        for key, value in skill.front_matter.items():
            self._front.addTopLevelItem(_value_item(str(key), value))
        self._front.expandAll()
        self._front.setVisible(bool(skill.front_matter))
        problems = [d for d in skill.diagnostics if d.code in UNREADABLE_FRONT_MATTER]
        lines = [f"Line {d.line}: {d.message}" if d.line else d.message for d in problems]
        if not lines and not skill.front_matter:
            lines = ["The front matter has no fields."]
        self._front_message.setText("\n".join(lines))
        self._front_message.setVisible(bool(lines))
        set_status(self._front_message, "danger" if problems else "muted")

    def _show_diagnostics(self, skill: Skill) -> None:
        self._diagnostics.clear()
        self._diagnostic_details.setText("Double-click a problem to open its file.")
        for diagnostic in skill.diagnostics:
            where = _relative(diagnostic.file, skill.path)
            location = f"{where}:{diagnostic.line}" if diagnostic.line else str(where)
            message = " ".join(diagnostic.message.split())
            item = QTreeWidgetItem([location, message, diagnostic.code])
            severity = str(diagnostic.severity)
            item.setIcon(0, icon("error" if severity == "error" else "warning"))
            item.setToolTip(1, tooltip(diagnostic.message))
            item.setData(0, Qt.ItemDataRole.UserRole, where)
            item.setData(1, Qt.ItemDataRole.UserRole, diagnostic.line)
            item.setData(
                0,
                Qt.ItemDataRole.AccessibleTextRole,
                f"{location}: {severity}: {diagnostic.message} [{diagnostic.code}]",
            )
            self._diagnostics.addTopLevelItem(item)
        if not skill.diagnostics:
            none = QTreeWidgetItem(["", "No problems found.", ""])
            none.setIcon(0, icon("valid"))
            none.setDisabled(True)
            self._diagnostics.addTopLevelItem(none)


def _relative(file: Path, root: Path) -> Path:
    """`file` relative to the skill folder (the folder itself as `NAME/`)."""
    if file == root:
        return Path(root.name)
    try:
        return file.relative_to(root)
    except ValueError:
        return file


def _value_item(key: str, value: object) -> QTreeWidgetItem:
    """A front matter field as a tree item; mappings and lists become children."""
    if isinstance(value, dict):
        item = QTreeWidgetItem([key, ""])
        for child_key, child in value.items():
            item.addChild(_value_item(str(child_key), child))
    elif isinstance(value, list):
        item = QTreeWidgetItem([key, ""])
        for position, child in enumerate(value):
            item.addChild(_value_item(f"[{position}]", child))
    else:
        text = "" if value is None else str(value)
        item = QTreeWidgetItem([key, " ".join(text.split())])
        item.setToolTip(1, tooltip(text))
    return item


def _line_item(text: str) -> QTreeWidgetItem:
    """One line of the capability preview, whole in its tool tip (the row may be cut)."""
    item = QTreeWidgetItem([" ".join(text.split())])
    item.setToolTip(0, tooltip(text))
    return item
