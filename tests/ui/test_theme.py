"""The theme: on the dark palette a radio button's ring and checked dot stand out, and the light
one keeps Fusion's; status colours come through the palette, follow the scheme and give a bold
back; no style sheet is set."""

from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QRadioButton,
    QStyle,
    QStyleOptionButton,
    QVBoxLayout,
    QWidget,
)

from workbench.ui.common.widgets import set_status
from workbench.ui.mainwindow import MainWindow
from workbench.ui.theme import WorkbenchStyle, _dark_palette, apply_theme, status_colors


def _indicator(radio: QRadioButton) -> QImage:
    option = QStyleOptionButton()
    radio.initStyleOption(option)
    rect = radio.style().subElementRect(QStyle.SubElement.SE_RadioButtonIndicator, option, radio)
    return radio.grab(rect).toImage()


def _pixels(image: QImage) -> list[QColor]:
    return [image.pixelColor(x, y) for x in range(image.width()) for y in range(image.height())]


def _centre(image: QImage) -> QColor:
    return image.pixelColor(image.width() // 2, image.height() // 2)


def _radios(qtbot: Any, palette: QPalette, style: QStyle) -> tuple[QWidget, list[QRadioButton]]:
    """A shown holder of an unchecked and a checked radio button drawn with `style` on
    `palette` (keep the holder: the buttons go with it)."""
    holder = QWidget()
    qtbot.addWidget(holder)
    holder.setPalette(palette)
    layout = QVBoxLayout(holder)
    unchecked, checked = QRadioButton("Docker on gVisor", holder), QRadioButton("Hardened", holder)
    checked.setChecked(True)
    for radio in (unchecked, checked):
        radio.setStyle(style)
        layout.addWidget(radio)
    holder.show()
    return holder, [unchecked, checked]


@pytest.fixture
def style() -> Iterator[WorkbenchStyle]:
    style = WorkbenchStyle()
    yield style
    style.deleteLater()


def test_dark_radio_buttons_show_a_ring_and_a_dot(qtbot: Any, style: QStyle) -> None:
    palette = _dark_palette()
    _holder, (unchecked, checked) = _radios(qtbot, palette, style)
    window = palette.color(QPalette.ColorRole.Window).lightness()

    ring = max(abs(c.lightness() - window) for c in _pixels(_indicator(unchecked)))
    assert ring >= 80  # a ring the eye finds on the dark card
    dot = _centre(_indicator(checked))
    assert dot.name() == palette.color(QPalette.ColorRole.Link).name()
    assert _centre(_indicator(unchecked)).name() == palette.color(QPalette.ColorRole.Base).name()


def test_the_light_palette_keeps_fusions_radio_buttons(qtbot: Any, style: WorkbenchStyle) -> None:
    light = QPalette(QColor("#efefef"))
    _ours_holder, ours = _radios(qtbot, light, style)
    _fusion_holder, fusion = _radios(qtbot, light, style.baseStyle())
    assert [_indicator(r) for r in ours] == [_indicator(r) for r in fusion]


def test_status_colours_come_through_the_palette_and_follow_the_scheme(
    qapp: QApplication, qtbot: Any
) -> None:
    style, palette, sheet = qapp.style().name(), qapp.palette(), qapp.styleSheet()
    label = QLabel("Posture: Local")
    qtbot.addWidget(label)
    try:
        apply_theme(qapp)
        qapp.setPalette(_dark_palette())
        set_status(label, "danger")
        text = label.palette().color(QPalette.ColorRole.WindowText)
        assert text == status_colors(_dark_palette()).danger and label.font().bold()

        # The OS switches scheme: the palette is made again for it (light here), and the label
        qapp.styleHints().colorSchemeChanged.emit(qapp.styleHints().colorScheme())
        now = status_colors(qapp.palette()).danger
        assert now != text and label.palette().color(QPalette.ColorRole.WindowText) == now

        set_status(label, "")  # back to the inherited colour and weight
        assert label.palette().color(QPalette.ColorRole.WindowText) == qapp.palette().color(
            QPalette.ColorRole.WindowText
        )
        assert not label.font().bold()
        assert qapp.styleSheet() == ""  # a sheet would style every widget again, at a cost
    finally:
        qapp.setStyle(style)
        qapp.setPalette(palette)
        qapp.setStyleSheet(sheet)


def test_a_status_keeps_a_widgets_own_bold(qtbot: Any) -> None:
    label = QLabel("Hardened local")
    qtbot.addWidget(label)
    font = label.font()
    font.setBold(True)
    label.setFont(font)
    set_status(label, "danger")
    set_status(label, "ok")
    assert label.font().bold()


def test_no_widget_of_the_window_has_a_style_sheet(window: MainWindow) -> None:
    # A sheet would cost every widget under it a styling pass, and its text would no longer
    # take the status colours `set_status` puts in the palette.
    styled = [w for w in window.findChildren(QWidget) if w.styleSheet()]
    assert [w.objectName() or type(w).__name__ for w in styled] == []
