"""The theme: on the dark palette a radio button's ring and checked dot stand out; the style
sheet comes after the window is built."""

from typing import Any

from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QRadioButton,
    QStyle,
    QStyleOptionButton,
    QVBoxLayout,
    QWidget,
)

from workbench.ui.theme import _dark_palette, apply_style_sheet, apply_theme, style_sheet


def _indicator(radio: QRadioButton) -> QImage:
    option = QStyleOptionButton()
    radio.initStyleOption(option)
    rect = radio.style().subElementRect(QStyle.SubElement.SE_RadioButtonIndicator, option, radio)
    return radio.grab(rect).toImage()


def _pixels(image: QImage) -> list[QColor]:
    return [image.pixelColor(x, y) for x in range(image.width()) for y in range(image.height())]


def _centre(image: QImage) -> QColor:
    return image.pixelColor(image.width() // 2, image.height() // 2)


def test_dark_radio_buttons_show_a_ring_and_a_dot(qtbot: Any) -> None:
    palette = _dark_palette()
    holder = QWidget()
    qtbot.addWidget(holder)
    holder.setPalette(palette)
    holder.setStyleSheet(style_sheet("", palette))
    layout = QVBoxLayout(holder)
    unchecked, checked = QRadioButton("Docker on gVisor", holder), QRadioButton("Hardened", holder)
    checked.setChecked(True)
    layout.addWidget(unchecked)
    layout.addWidget(checked)
    holder.show()
    window = palette.color(QPalette.ColorRole.Window).lightness()

    ring = max(abs(c.lightness() - window) for c in _pixels(_indicator(unchecked)))
    assert ring >= 80  # a ring the eye finds on the dark card
    dot = _centre(_indicator(checked))
    assert dot.name() == palette.color(QPalette.ColorRole.Link).name()
    assert _centre(_indicator(unchecked)).name() == palette.color(QPalette.ColorRole.Base).name()


def test_the_light_palette_keeps_the_styles_own_radio_buttons() -> None:
    light = QPalette(QColor("#efefef"))
    assert "QRadioButton" not in style_sheet("", light)
    assert "QRadioButton::indicator" in style_sheet("", _dark_palette())


def test_the_style_sheet_comes_once_the_window_is_built_and_then_follows_the_scheme(
    qapp: QApplication,
) -> None:
    style, palette = qapp.style().name(), qapp.palette()
    qapp.setStyleSheet("")
    try:
        apply_theme(qapp)
        assert qapp.styleSheet() == ""  # a sheet set before the widgets exist slows their build
        apply_style_sheet(qapp)
        assert '*[status="danger"]' in qapp.styleSheet()
        qapp.setStyleSheet("/* stale */")
        qapp.styleHints().colorSchemeChanged.emit(qapp.styleHints().colorScheme())
        assert '*[status="danger"]' in qapp.styleSheet()  # made again for the new palette
    finally:
        qapp.setStyleSheet("")
        qapp.setStyle(style)
        qapp.setPalette(palette)
