"""Live resource charts: a small QPainter line chart and the CPU/memory pair of a run.

`LineChart` keeps a ring buffer of the last `MAX_POINTS` (time, value) points, and paints a
grid, the line, an optional limit line (dashed, in the danger colour) and axis labels; it is
cheap enough to repaint at 10 Hz. The numbers live in plain labels beside it (current and
peak), so they are readable by screen readers and tests. `ResourceCharts` feeds a CPU and a
memory chart from `ResourceSample`s and shows the process count (or, when the host cannot
count the run's processes, as under gVisor, says so).
"""

import math
from collections import deque
from collections.abc import Callable

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPalette, QPen, QPolygonF
from PySide6.QtWidgets import QGridLayout, QSizePolicy, QWidget

from workbench.monitor.sample import ResourceSample
from workbench.ui.common.widgets import LiveLabel, plain_label, set_status
from workbench.ui.theme import is_dark, status_colors

MAX_POINTS = 600  # one minute at 10 Hz
WINDOW_S = 60.0
MIB = 1024 * 1024
PROCESSES_NOT_VISIBLE = "Processes: not visible from the host"


class LineChart(QWidget):
    """One series over time with a grid, a peak and an optional limit line."""

    def __init__(
        self,
        title: str,
        formatter: Callable[[float], str],
        floor: float,
        colour: str,
        unit: float = 1.0,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._format = formatter
        self._floor = floor  # the smallest top of the value axis
        self._unit = unit  # the axis top is a round number of these
        self._colour = QColor(colour)
        self._points: deque[tuple[float, float]] = deque(maxlen=MAX_POINTS)
        self._peak = 0.0
        self._limit: float | None = None
        self.setMinimumSize(140, 36)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setAccessibleName(f"{title} chart")

    def sizeHint(self) -> QSize:
        return QSize(260, 110)

    def clear(self) -> None:
        """Forget every point and the peak (the limit stays)."""
        self._points.clear()
        self._peak = 0.0
        self.update()

    def set_limit(self, limit: float | None) -> None:
        """Draw `limit` as a line (None: no line)."""
        self._limit = limit
        self.update()

    def add(self, t: float, value: float) -> None:
        """Append a point `t` seconds into the run; repainting is coalesced by Qt."""
        self._points.append((t, value))
        self._peak = max(self._peak, value)
        self.update()

    def current(self) -> float | None:
        """The latest value, or None before the first point."""
        return self._points[-1][1] if self._points else None

    def peak(self) -> float:
        """The largest value since the last `clear()`."""
        return self._peak

    def point_count(self) -> int:
        """How many points the ring buffer holds."""
        return len(self._points)

    def paintEvent(self, event: QPaintEvent) -> None:
        del event
        palette = self.palette()
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.fillRect(self.rect(), palette.color(QPalette.ColorRole.Base))
        metrics = painter.fontMetrics()
        top = nice_ceiling(
            max(self._floor, self._peak * 1.1, (self._limit or 0) * 1.05), self._unit
        )
        widest = max(metrics.horizontalAdvance(text) for text in ("8888 MiB", self._format(top)))
        label_w = widest + 8  # usually the same in every chart, so their time axes line up
        plot = QRectF(label_w, 6, self.width() - label_w - 6, self.height() - 12)
        if plot.width() < 10 or plot.height() < 10:
            painter.end()
            return
        grid = palette.color(QPalette.ColorRole.Mid)
        grid.setAlpha(110)
        text = palette.color(QPalette.ColorRole.PlaceholderText)
        painter.setPen(QPen(grid, 1))
        for i in range(5):
            y = plot.top() + plot.height() * i / 4
            painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
        painter.setPen(text)
        for i in (0, 2, 4):
            y = plot.top() + plot.height() * i / 4
            value = top * (4 - i) / 4
            rect = QRectF(0, y - metrics.height() / 2, label_w - 4, metrics.height())
            align = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
            painter.drawText(rect, align, self._format(value))
        end = max(self._points[-1][0] if self._points else 0.0, 10.0)
        start = max(0.0, end - WINDOW_S)
        x_scale, y_scale = plot.width() / (end - start), plot.height() / top
        if self._limit is not None:  # crisp, not antialiased: a limit is exact
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
            painter.setPen(QPen(status_colors(palette).danger, 2, Qt.PenStyle.DashLine))
            y = round(plot.bottom() - self._limit * y_scale)
            painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        columns: dict[int, float] = {}  # one point per pixel column, its highest value
        for t, value in self._points:
            if t >= start:
                x = int((t - start) * x_scale)
                if value >= columns.get(x, -1.0):
                    columns[x] = value
        if columns:
            left, bottom = plot.left(), plot.bottom()
            line = QPolygonF([QPointF(left + x, bottom - v * y_scale) for x, v in columns.items()])
            fill = QPolygonF(line)
            fill.append(QPointF(line.last().x(), bottom))
            fill.append(QPointF(line.first().x(), bottom))
            shade = QColor(self._colour)
            shade.setAlpha(70 if is_dark(palette) else 45)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(shade)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)  # the line covers it
            painter.drawPolygon(fill)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setPen(QPen(self._colour, 1.5))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawPolyline(line)
        painter.setPen(QPen(grid, 1))
        painter.drawRect(plot)
        painter.end()


def nice_ceiling(value: float, unit: float = 1.0) -> float:
    """The smallest round number of `unit`s (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k) >= value."""
    scaled = max(value / unit, 1e-9)
    power = 10.0 ** math.floor(math.log10(scaled))
    step = next(s for s in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if s * power >= scaled)
    return step * power * unit


def format_percent(value: float) -> str:
    """`0 %`, `37 %`, `180 %` (100 % is one full core)."""
    return f"{value:.0f} %"


def format_mib(value: float) -> str:
    """A byte count in MiB with sensible precision: `6.4 MiB`, `512 MiB`."""
    mib = value / MIB
    return f"{mib:.1f} MiB" if 0 < mib < 100 else f"{mib:.0f} MiB"


class ResourceCharts(QWidget):
    """CPU and memory charts of the current run, with current/peak labels and processes."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.cpu = LineChart("CPU", format_percent, 100.0, "#2f80d1", parent=self)
        self.memory = LineChart("Memory", format_mib, 16 * MIB, "#8e44ad", MIB, self)
        self.cpu_label = LiveLabel("CPU: no samples yet", self)
        self.memory_label = LiveLabel("Memory: no samples yet", self)
        self.processes_label = LiveLabel("Processes: –", self)
        self._processes_hidden = False  # the host cannot count the run's processes
        self.limit_label = plain_label("", self)
        set_status(self.limit_label, "muted")
        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setVerticalSpacing(2)
        layout.addWidget(self.cpu_label, 0, 0)
        layout.addWidget(self.cpu, 1, 0)
        layout.addWidget(self.memory_label, 2, 0)
        layout.addWidget(self.memory, 3, 0)
        layout.addWidget(self.limit_label, 4, 0)
        layout.addWidget(self.processes_label, 5, 0)
        layout.setRowStretch(1, 1)
        layout.setRowStretch(3, 1)

    def reset(self, memory_limit: int | None) -> None:
        """Empty the charts for a new run; `memory_limit` (bytes) is drawn as a line."""
        self.cpu.clear()
        self.memory.clear()
        self.memory.set_limit(float(memory_limit) if memory_limit else None)
        self.cpu_label.restart("CPU: waiting for the first sample")
        self.memory_label.restart("Memory: waiting for the first sample")
        self.processes_label.restart("Processes: –")
        self._processes_hidden = False
        self.limit_label.setText(
            f"Memory limit {format_mib(memory_limit)} (dashed line)"
            if memory_limit
            else "No memory limit under this posture"
        )

    def add_sample(self, sample: ResourceSample) -> None:
        """Plot one monitor sample (called up to 10 times a second)."""
        self.cpu.add(sample.t, sample.cpu_percent)
        self.memory.add(sample.t, float(sample.rss_bytes))
        self.cpu_label.setText(
            f"CPU {format_percent(sample.cpu_percent)} · peak {format_percent(self.cpu.peak())}"
        )
        self.memory_label.setText(
            f"Memory {format_mib(sample.rss_bytes)} · peak {format_mib(self.memory.peak())}"
        )
        if sample.tree is not None:
            self._processes_hidden = bool(sample.tree.hidden) and not sample.processes
        self.processes_label.setText(
            PROCESSES_NOT_VISIBLE
            if self._processes_hidden
            else f"Processes: {sample.processes} now"
        )

    def set_peaks(self, peak_rss: int, peak_processes: int) -> None:
        """After a run: the peaks the executor measured (they may exceed the last samples)."""
        current = self.memory.current()
        now = format_mib(current) if current is not None else "–"
        peak = format_mib(max(float(peak_rss), self.memory.peak()))
        self.memory_label.setText(f"Memory {now} · peak {peak}")
        self.processes_label.setText(
            f"Processes: peak {peak_processes}" if peak_processes else PROCESSES_NOT_VISIBLE
        )
