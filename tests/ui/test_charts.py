"""The live resource charts: samples in, numbers in the labels, a painted line and limit."""

from typing import Any

import pytest
from PySide6.QtGui import QColor

from workbench.executors.docker.sampler import GVISOR_TREE
from workbench.monitor.sample import ProcessTable, ResourceSample
from workbench.ui.run.charts import (
    MAX_POINTS,
    MIB,
    PROCESSES_NOT_VISIBLE,
    ResourceCharts,
    format_mib,
    nice_ceiling,
)
from workbench.ui.theme import status_colors


def _charts(qtbot: Any) -> ResourceCharts:
    charts = ResourceCharts()
    qtbot.addWidget(charts)
    charts.resize(320, 300)
    charts.show()
    return charts


def _colours(image: Any) -> set[int]:
    return {image.pixel(x, y) for x in range(0, image.width(), 2) for y in range(image.height())}


def test_samples_show_current_and_peak_numbers(qtbot: Any) -> None:
    charts = _charts(qtbot)
    charts.reset(memory_limit=256 * MIB)
    for i, (cpu, rss, procs) in enumerate(
        [(20.0, 10 * MIB, 1), (95.0, 40 * MIB, 3), (50.0, 30 * MIB, 2)]
    ):
        charts.add_sample(
            ResourceSample(t=i * 0.1, cpu_percent=cpu, rss_bytes=rss, processes=procs)
        )
    assert charts.cpu_label.text() == "CPU 50 % · peak 95 %"
    assert charts.memory_label.text() == "Memory 30.0 MiB · peak 40.0 MiB"
    assert charts.processes_label.text() == "Processes: 2 now"
    assert "256 MiB" in charts.limit_label.text()
    charts.set_peaks(peak_rss=64 * MIB, peak_processes=4)
    assert charts.memory_label.text() == "Memory 30.0 MiB · peak 64.0 MiB"
    assert charts.processes_label.text() == "Processes: peak 4"


def test_processes_the_host_cannot_count_are_said_not_visible_not_zero(qtbot: Any) -> None:
    charts = _charts(qtbot)
    charts.reset(memory_limit=256 * MIB)
    hidden = ProcessTable(rows=(), total=0, pid_space="container", hidden=GVISOR_TREE)
    charts.add_sample(ResourceSample(0.1, 5.0, 20 * MIB, 0, tree=hidden))
    charts.add_sample(ResourceSample(0.2, 5.0, 20 * MIB, 0))  # no table on this one
    assert charts.processes_label.text() == PROCESSES_NOT_VISIBLE
    charts.set_peaks(peak_rss=20 * MIB, peak_processes=0)
    assert charts.processes_label.text() == PROCESSES_NOT_VISIBLE
    charts.reset(memory_limit=256 * MIB)
    charts.add_sample(ResourceSample(0.1, 5.0, 20 * MIB, 0))
    assert charts.processes_label.text() == "Processes: 0 now"


def test_the_ring_buffer_keeps_the_last_minute(qtbot: Any) -> None:
    charts = _charts(qtbot)
    charts.reset(memory_limit=None)
    for i in range(MAX_POINTS + 250):
        charts.add_sample(
            ResourceSample(t=i / 10, cpu_percent=float(i % 7), rss_bytes=MIB, processes=1)
        )
    assert charts.cpu.point_count() == MAX_POINTS
    assert charts.memory.current() == MIB
    assert charts.limit_label.text() == "No memory limit under this posture"


def test_the_chart_paints_its_line_and_the_limit(qtbot: Any) -> None:
    charts = _charts(qtbot)
    charts.reset(memory_limit=64 * MIB)
    empty = _colours(charts.memory.grab().toImage())
    for i in range(50):
        charts.add_sample(
            ResourceSample(t=i / 10, cpu_percent=50.0, rss_bytes=i * MIB, processes=1)
        )
    image = charts.memory.grab().toImage()
    assert not image.isNull() and image.width() > 100
    painted = _colours(image)
    danger = QColor(status_colors(charts.palette()).danger).rgb()
    assert danger in painted and danger in empty  # the limit line, with and without samples
    assert len(painted - empty) > 3  # the line and its shading appeared


def test_memory_is_in_mib() -> None:
    assert format_mib(6.4 * MIB) == "6.4 MiB"
    assert format_mib(512 * MIB) == "512 MiB"


def test_the_value_axis_ends_on_a_round_number() -> None:
    assert nice_ceiling(106.0) == 120.0
    assert nice_ceiling(563 * MIB, MIB) == 600 * MIB
    assert nice_ceiling(0.7) == pytest.approx(0.8)
    assert nice_ceiling(100.0) == 100.0
