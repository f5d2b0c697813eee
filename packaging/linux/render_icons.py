#!/usr/bin/env python3
"""Render the app icon's hicolor PNGs (48, 128, 256, 512 px) from its SVG with QtSvg.

The SVG in `resources/icons/hicolor/scalable/apps/` is the one source of the icon; run this
after changing it (`.venv/bin/python packaging/linux/render_icons.py`) and commit the PNGs.
"""

import os
import sys
from pathlib import Path

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

from workbench.platform.desktop_entry import APP_ID, ICON_SIZES

HICOLOR = Path(__file__).resolve().parents[2] / "resources" / "icons" / "hicolor"


def main() -> int:
    """Write one PNG per size next to the SVG's hicolor tree; returns the exit code."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(HICOLOR / "scalable" / "apps" / f"{APP_ID}.svg"))
    if not renderer.isValid():
        print("error: the SVG does not load", file=sys.stderr)
        return 1
    for size in ICON_SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter, QRectF(0, 0, size, size))
        painter.end()
        target = HICOLOR / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not image.save(str(target), "PNG"):
            print(f"error: could not write {target}", file=sys.stderr)
            return 1
        print(f"wrote {target}")
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main())
