"""Look and feel: Fusion style, a light or dark palette that follows the OS, status colours.

The style and palette are set before the window is built; there is no style sheet, which costs every
widget a styling pass (docs/notes.md). `WorkbenchStyle` draws the few things the app changes in
Fusion: a tab pane with only a line above it, flat "show more" toggles (`FLAT_TOGGLE`) and, on a
dark palette, radio buttons with a drawn ring and dot (Fusion's nearly vanish there). `apply_status`
colours a widget for its `status` property (danger, warning, ok, muted) through its palette, from
`status_colors()`, and `paint_panel` draws a rounded panel (`tint` its fill). The palette follows
`QStyleHints.colorScheme` and is rebuilt when the OS switches, the status colours with it.
"""

from dataclasses import dataclass

from PySide6.QtCore import QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPainterPath, QPalette, QPen
from PySide6.QtWidgets import (
    QApplication,
    QProxyStyle,
    QStyle,
    QStyleOption,
    QWidget,
)

from workbench.platform.paths import resources_dir

FLAT_TOGGLE = "flatToggle"  # the object name of a tool button drawn flat, checked or not
STATUS_ROLES = (
    QPalette.ColorRole.WindowText,
    QPalette.ColorRole.Text,
    QPalette.ColorRole.ButtonText,
)
RADIO_SIZE = 12  # the drawn radio indicator's diameter on a dark palette, in pixels


@dataclass(frozen=True, slots=True)
class StatusColors:
    """Foreground colours for status text, chosen for contrast with the window colour."""

    danger: QColor
    warning: QColor
    ok: QColor
    muted: QColor


def is_dark(palette: QPalette) -> bool:
    """Whether `palette` is a dark one (light text on a dark window)."""
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def status_colors(palette: QPalette) -> StatusColors:
    """The danger / warning / ok / muted colours that read well on `palette`."""
    muted = palette.color(QPalette.ColorRole.PlaceholderText)
    if is_dark(palette):
        return StatusColors(QColor("#ff6b6b"), QColor("#f5b93d"), QColor("#5cc26a"), muted)
    return StatusColors(QColor("#c62828"), QColor("#9a6200"), QColor("#2e7d32"), muted)


def icon(name: str) -> QIcon:
    """A bundled icon from `resources/icons/<name>.svg`."""
    return QIcon(str(resources_dir() / "icons" / f"{name}.svg"))


def apply_theme(app: QApplication) -> None:
    """`WorkbenchStyle` and the palette for the OS colour scheme, kept in step with the OS
    (the status colours too) when it switches between light and dark."""
    app.setStyle(WorkbenchStyle())
    _apply_palette(app)
    app.styleHints().colorSchemeChanged.connect(lambda _scheme: _apply_scheme(app))


def apply_status(widget: QWidget) -> None:
    """Colour `widget`'s text for its `status` property, bold for `danger`; without one, its
    colours and weight are inherited again."""
    status = str(widget.property("status") or "")
    colour = getattr(status_colors(QApplication.palette()), status, None)
    palette = QPalette()  # no role of its own: the widget inherits them all
    if colour is not None:
        for role in STATUS_ROLES:
            palette.setColor(role, colour)
    widget.setPalette(palette)
    bold = status == "danger"
    added = bool(widget.property("statusBold"))  # the bold is the status's, not the widget's
    if bold != added and (added or not widget.font().bold()):
        font = QFont(widget.font())
        font.setBold(bold)
        widget.setFont(font)
        widget.setProperty("statusBold", bold)


def tint(colour: QColor, alpha: int) -> QColor:
    """`colour` made see-through to `alpha` (0-255), for a panel's background."""
    tinted = QColor(colour)
    tinted.setAlpha(alpha)
    return tinted


def paint_panel(
    widget: QWidget, border: QColor, fill: QColor, radius: float, width: int = 1, stripe: int = 0
) -> None:
    """Paint `widget`'s background as a rounded panel: `fill` within a `width`-pixel `border`
    and, with `stripe`, a band of the border's colour that wide down its left edge."""
    painter = QPainter(widget)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(QPen(border, width))
    painter.setBrush(fill)
    inset = width / 2
    painter.drawRoundedRect(
        QRectF(widget.rect()).adjusted(inset, inset, -inset, -inset), radius, radius
    )
    if stripe:
        outline = QPainterPath()
        outline.addRoundedRect(QRectF(widget.rect()), radius, radius)
        painter.setClipPath(outline)
        painter.fillRect(QRectF(0, 0, stripe, widget.height()), border)
    painter.end()


_TOOL_PANELS = (  # what Fusion draws behind a tool button
    QStyle.PrimitiveElement.PE_PanelButtonTool,
    QStyle.PrimitiveElement.PE_FrameButtonTool,
)


_PANE_PARTS = (  # of a tab widget, tabs on top (as all of the app's are)
    QStyle.SubElement.SE_TabWidgetTabPane,
    QStyle.SubElement.SE_TabWidgetTabContents,
)


class WorkbenchStyle(QProxyStyle):
    """Fusion, with the app's few changes (see the module doc)."""

    def __init__(self) -> None:
        super().__init__("Fusion")

    def drawPrimitive(
        self,
        element: QStyle.PrimitiveElement,
        option: QStyleOption,
        painter: QPainter,
        widget: QWidget | None = None,
    ) -> None:
        if element is QStyle.PrimitiveElement.PE_FrameTabWidget:
            painter.save()
            painter.setPen(option.palette.color(QPalette.ColorRole.Mid))
            painter.drawLine(option.rect.topLeft(), option.rect.topRight())
            painter.restore()
        elif element in _TOOL_PANELS and widget is not None and widget.objectName() == FLAT_TOGGLE:
            return
        elif element is QStyle.PrimitiveElement.PE_IndicatorRadioButton and is_dark(option.palette):
            _draw_dark_radio(option, painter)
        else:
            super().drawPrimitive(element, option, painter, widget)

    def subElementRect(
        self, element: QStyle.SubElement, option: QStyleOption, widget: QWidget | None = None
    ) -> QRect:
        fusion = self.baseStyle()
        if element in _PANE_PARTS:  # the pane starts below the tabs, its contents below its line
            pane = fusion.subElementRect(QStyle.SubElement.SE_TabWidgetTabPane, option, widget)
            tabs = fusion.subElementRect(QStyle.SubElement.SE_TabWidgetTabBar, option, widget)
            pane.setTop(max(pane.top(), tabs.bottom() + 1))
            contents = element is QStyle.SubElement.SE_TabWidgetTabContents
            return pane.adjusted(0, 1, 0, 0) if contents else pane
        return fusion.subElementRect(element, option, widget)


def _draw_dark_radio(option: QStyleOption, painter: QPainter) -> None:
    """A radio indicator that reads on a dark palette: a light ring on the base colour, and a
    dot in the link colour when checked."""
    palette, state = option.palette, option.state
    enabled = bool(state & QStyle.StateFlag.State_Enabled)
    ring = palette.color(QPalette.ColorRole.PlaceholderText if enabled else QPalette.ColorRole.Mid)
    box = QRectF(option.rect)
    size = min(RADIO_SIZE, box.width(), box.height())
    circle = QRectF(0, 0, size - 1, size - 1)
    circle.moveCenter(box.center())
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(QPen(ring, 1))
    painter.setBrush(palette.color(QPalette.ColorRole.Base))
    painter.drawEllipse(circle)
    if state & QStyle.StateFlag.State_On:
        dot = QRectF(0, 0, size * 0.55, size * 0.55)
        dot.moveCenter(circle.center())
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(palette.color(QPalette.ColorRole.Link))
        painter.drawEllipse(dot)
    painter.restore()


def _apply_palette(app: QApplication) -> None:
    dark = app.styleHints().colorScheme() == Qt.ColorScheme.Dark
    app.setPalette(_dark_palette() if dark else app.style().standardPalette())


def _apply_scheme(app: QApplication) -> None:
    _apply_palette(app)
    for widget in app.allWidgets():
        if widget.property("status") is not None:
            apply_status(widget)


def _dark_palette() -> QPalette:
    palette = QPalette()
    roles = {
        QPalette.ColorRole.Window: "#26282b",
        QPalette.ColorRole.WindowText: "#e6e6e6",
        QPalette.ColorRole.Base: "#1d1f21",
        QPalette.ColorRole.AlternateBase: "#2b2d30",
        QPalette.ColorRole.ToolTipBase: "#33363a",
        QPalette.ColorRole.ToolTipText: "#e6e6e6",
        QPalette.ColorRole.PlaceholderText: "#8f949a",
        QPalette.ColorRole.Text: "#e6e6e6",
        QPalette.ColorRole.Button: "#303236",
        QPalette.ColorRole.ButtonText: "#e6e6e6",
        QPalette.ColorRole.BrightText: "#ff6b6b",
        QPalette.ColorRole.Light: "#45484d",
        QPalette.ColorRole.Midlight: "#3a3d41",
        QPalette.ColorRole.Mid: "#4a4d52",
        QPalette.ColorRole.Dark: "#17181a",
        QPalette.ColorRole.Shadow: "#0d0d0e",
        QPalette.ColorRole.Highlight: "#2f74b5",
        QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.Link: "#6cb0f2",
        QPalette.ColorRole.LinkVisited: "#a58be8",
    }
    for role, colour in roles.items():
        palette.setColor(role, QColor(colour))
    for role in (
        QPalette.ColorRole.Text,
        QPalette.ColorRole.WindowText,
        QPalette.ColorRole.ButtonText,
    ):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor("#7c8086"))
    return palette
