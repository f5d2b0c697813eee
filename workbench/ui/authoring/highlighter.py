"""The SKILL.md text widget: syntax colouring and diagnostics marked on the lines they concern.

`SkillMarkdownHighlighter` colours the YAML front matter between the `---` lines, then the
Markdown body; it only colours text, it never interprets it. `SkillTextEdit` is the monospace
editor using it: each diagnostic tints its line and underlines it with a wavy line, and the
mouse over a marked line shows the messages as a literal tool tip.
Block state tracks where a line is: `_FRONT` inside the front matter, `_BODY` after it,
`_FENCE` inside a fenced code block. One set of colours suits light palettes, one dark ones.
"""

import re

from PySide6.QtCore import QEvent
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QHelpEvent,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextDocument,
    QTextFormat,
)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QToolTip, QWidget

from workbench.skills import Diagnostic
from workbench.ui.common.text import tooltip
from workbench.ui.theme import is_dark, status_colors

_FRONT, _BODY, _FENCE = 1, 2, 3
_DELIMITER = re.compile(r"^---[ \t]*$")
_YAML_KEY = re.compile(r"^(\s*-?\s*)([\w.-]+)(\s*:)")
_YAML_COMMENT = re.compile(r"(^|\s)#.*$")
_HEADING = re.compile(r"^#{1,6}\s.*$")
_FENCE_LINE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`]+`")
_EMPHASIS = re.compile(r"(\*\*|__)[^*_]+\1")
_LINK = re.compile(r"\[[^\]]*\]\([^)]*\)")
_LIST = re.compile(r"^\s*([-*+]|\d+\.)\s")


def _format(color: str, bold: bool = False, italic: bool = False) -> QTextCharFormat:
    text_format = QTextCharFormat()
    text_format.setForeground(QColor(color))
    if bold:
        text_format.setFontWeight(QFont.Weight.Bold)
    text_format.setFontItalic(italic)
    return text_format


class SkillMarkdownHighlighter(QSyntaxHighlighter):
    """Colours YAML keys, comments and delimiters, then Markdown headings, code, links, lists."""

    def __init__(self, document: QTextDocument, dark: bool = False) -> None:
        super().__init__(document)
        self.set_dark(dark)

    def set_dark(self, dark: bool) -> None:
        """Pick colours for a dark (True) or light palette and colour the document again."""
        light = not dark
        self._delimiter = _format("#7a7a7a" if light else "#9a9a9a", bold=True)
        self._key = _format("#1f5fa8" if light else "#7fb3ff", bold=True)
        self._comment = _format("#6a737d" if light else "#8b949e", italic=True)
        self._heading = _format("#8a3ffc" if light else "#c9a2ff", bold=True)
        self._code = _format("#a0522d" if light else "#f0a070")
        self._link = _format("#0a6e6e" if light else "#5fd0d0")
        self._marker = _format("#9a6200" if light else "#f5b93d", bold=True)
        self._emphasis = _format("#000000" if light else "#ffffff", bold=True)
        self.rehighlight()

    def highlightBlock(self, text: str) -> None:
        previous = self.previousBlockState()
        first = self.currentBlock().blockNumber() == 0
        if first:
            if _DELIMITER.match(text):
                self.setFormat(0, len(text), self._delimiter)
                self.setCurrentBlockState(_FRONT)
                return
            previous = _BODY
        if previous == _FRONT:
            self._front_matter_line(text)
        elif previous == _FENCE:
            self.setFormat(0, len(text), self._code)
            self.setCurrentBlockState(_BODY if _FENCE_LINE.match(text) else _FENCE)
        else:
            self._body_line(text)

    def _front_matter_line(self, text: str) -> None:
        if _DELIMITER.match(text):
            self.setFormat(0, len(text), self._delimiter)
            self.setCurrentBlockState(_BODY)
            return
        self.setCurrentBlockState(_FRONT)
        if key := _YAML_KEY.match(text):
            self.setFormat(key.start(2), key.end(3) - key.start(2), self._key)
        if comment := _YAML_COMMENT.search(text):
            self.setFormat(comment.start(), len(text) - comment.start(), self._comment)

    def _body_line(self, text: str) -> None:
        if _FENCE_LINE.match(text):
            self.setFormat(0, len(text), self._code)
            self.setCurrentBlockState(_FENCE)
            return
        self.setCurrentBlockState(_BODY)
        if _HEADING.match(text):
            self.setFormat(0, len(text), self._heading)
            return
        if marker := _LIST.match(text):
            self.setFormat(marker.start(1), marker.end(1) - marker.start(1), self._marker)
        for pattern, text_format in (
            (_EMPHASIS, self._emphasis),
            (_LINK, self._link),
            (_INLINE_CODE, self._code),
        ):
            for match in pattern.finditer(text):
                self.setFormat(match.start(), match.end() - match.start(), text_format)


class SkillTextEdit(QPlainTextEdit):
    """A monospace, highlighted SKILL.md editor that marks diagnostics on their lines."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._line_messages: dict[int, list[str]] = {}
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.highlighter = SkillMarkdownHighlighter(self.document(), is_dark(self.palette()))

    def line_messages(self, line: int) -> list[str]:
        """The messages of the diagnostics marked on 1-based `line`."""
        return list(self._line_messages.get(line, []))

    def show_diagnostics(self, diagnostics: tuple[Diagnostic, ...]) -> None:
        """Tint and underline the line of each diagnostic that names one."""
        colors = status_colors(self.palette())
        selections = []
        self._line_messages = {}
        for problem in diagnostics:
            block = self.document().findBlockByNumber((problem.line or 0) - 1)
            if problem.line is None or not block.isValid():
                continue
            self._line_messages.setdefault(problem.line, []).append(problem.message)
            color = colors.danger if str(problem.severity) == "error" else colors.warning
            background = QColor(color)
            background.setAlpha(40)
            line = QTextEdit.ExtraSelection()
            line.format.setBackground(background)
            line.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            line.cursor = self.textCursor()
            line.cursor.setPosition(block.position())
            underline = QTextEdit.ExtraSelection()
            underline.format.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
            underline.format.setUnderlineColor(color)
            underline.cursor = self.textCursor()
            underline.cursor.setPosition(block.position())
            underline.cursor.setPosition(
                block.position() + max(block.length() - 1, 0),
                underline.cursor.MoveMode.KeepAnchor,
            )
            selections += [line, underline]
        self.setExtraSelections(selections)

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            position = self.viewport().mapFrom(self, event.pos())
            messages = self.line_messages(self.cursorForPosition(position).blockNumber() + 1)
            if messages:
                QToolTip.showText(event.globalPos(), tooltip("\n".join(messages)), self)
            else:
                QToolTip.hideText()
            return True
        return super().event(event)
