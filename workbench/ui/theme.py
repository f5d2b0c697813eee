"""Look and feel: Fusion style, a light or dark palette that follows the OS, status colours.

The style and palette are set before the window is built, the style sheet after it. The palette
follows `QStyleHints.colorScheme` and is rebuilt when the OS switches. Widgets that need a status
colour (danger, warning, ok) ask `status_colors()` with their own palette, so they stay right
after a switch without holding any global state. On a dark palette, radio buttons get a drawn
indicator (Fusion's ring and dot nearly vanish there).
"""

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QIcon, QPalette
from PySide6.QtWidgets import QApplication

from workbench.platform.paths import resources_dir


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
    """Fusion style and the palette for the OS colour scheme, kept in step with the OS (the
    style sheet too, once it is applied) when it switches between light and dark."""
    app.setStyle("Fusion")
    _apply_palette(app)
    app.styleHints().colorSchemeChanged.connect(lambda _scheme: _apply_scheme(app))


def apply_style_sheet(app: QApplication) -> None:
    """The app's style sheet (`style_sheet`) for its palette. Apply it once the main window is
    built: under a sheet, every widget moved into a layout, splitter or tab is styled again with
    everything inside it, which doubled the window's build (see docs/notes.md)."""
    sheet = resources_dir() / "qss" / "workbench.qss"
    base = sheet.read_text(encoding="utf-8") if sheet.is_file() else ""
    app.setStyleSheet(style_sheet(base, app.palette()))


def _apply_palette(app: QApplication) -> None:
    dark = app.styleHints().colorScheme() == Qt.ColorScheme.Dark
    app.setPalette(_dark_palette() if dark else app.style().standardPalette())


def _apply_scheme(app: QApplication) -> None:
    _apply_palette(app)
    if app.styleSheet():
        apply_style_sheet(app)


def style_sheet(base: str, palette: QPalette) -> str:
    """The app's style sheet for `palette`: `base` (the bundled sheet), the status colours,
    and on a dark palette the radio buttons' indicator."""
    radios = _dark_radio_rules(palette) if is_dark(palette) else ""
    return base + _status_rules(status_colors(palette)) + radios


def _status_rules(colors: StatusColors) -> str:
    """Style rules for widgets marked with a `status` property (see `widgets.set_status`)."""
    tint = QColor(colors.danger)
    tint.setAlpha(40)
    return f"""
*[status="danger"] {{ color: {colors.danger.name()}; font-weight: bold; }}
*[status="warning"] {{ color: {colors.warning.name()}; }}
*[status="ok"] {{ color: {colors.ok.name()}; }}
*[status="muted"] {{ color: {colors.muted.name()}; }}
QFrame#messageBar {{
    border: 1px solid {colors.danger.name()};
    border-radius: 4px;
    background: rgba({tint.red()}, {tint.green()}, {tint.blue()}, {tint.alpha()});
}}
"""


def _dark_radio_rules(palette: QPalette) -> str:
    """A radio indicator that reads on a dark palette: a light ring, and a filled dot in the
    highlight colour when checked."""
    ring = palette.color(QPalette.ColorRole.PlaceholderText).name()
    dot = palette.color(QPalette.ColorRole.Link).name()
    base = palette.color(QPalette.ColorRole.Base).name()
    off = palette.color(QPalette.ColorRole.Mid).name()
    return f"""
QRadioButton::indicator {{
    width: 12px; height: 12px; border-radius: 7px; border: 1px solid {ring}; background: {base};
}}
QRadioButton::indicator:checked {{
    border-color: {dot};
    background: qradialgradient(cx: 0.5, cy: 0.5, radius: 0.5, fx: 0.5, fy: 0.5,
        stop: 0 {dot}, stop: 0.55 {dot}, stop: 0.65 {base}, stop: 1 {base});
}}
QRadioButton::indicator:disabled {{ border-color: {off}; }}
"""


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
