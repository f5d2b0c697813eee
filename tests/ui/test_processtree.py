"""The process tree view: shape, in-place updates that keep selection and expansion, the cap
of a fork bomb, "not visible" reasons, hostile names, the end of a run, and a real run."""

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from tests.ui.conftest import Run, items
from tests.waiting import until
from workbench.executors.docker.sampler import GVISOR_TREE
from workbench.executors.types import RunResult, RunStatus
from workbench.monitor.sample import ProcessRow, ProcessTable, ResourceSample
from workbench.postures.model import PostureId
from workbench.ui.mainwindow import MainWindow
from workbench.ui.run.processes import COMMAND, CPU, NAME, PID, ProcessTreeView

MIB = 1024 * 1024


def row(pid: int, ppid: int, name: str = "sleep", cpu: float = 0.0, cmd: str = "") -> ProcessRow:
    return ProcessRow(pid, ppid, name, cmd or f"{name} 1", cpu, 2 * MIB)


def sample(*rows: ProcessRow, total: int = 0, t: float = 1.0, **table: Any) -> ResourceSample:
    tree = ProcessTable(tuple(rows), total or len(rows), **table)
    return ResourceSample(t, 0.0, 0, len(rows), tree)


def family(parent_cpu: float = 0.0) -> tuple[ProcessRow, ...]:
    return row(10, 0, "sh", parent_cpu, "sh -c x"), row(12, 10), row(11, 10)


@pytest.fixture
def view(qtbot: Any) -> ProcessTreeView:
    widget = ProcessTreeView()
    qtbot.addWidget(widget)
    widget.resize(600, 300)
    widget.show()
    widget.reset()
    return widget


def test_a_table_shows_as_a_parent_with_its_children(view: ProcessTreeView) -> None:
    view.add_sample(sample(*family()))
    tree = view.tree
    assert tree.topLevelItemCount() == 1
    root = items(tree)[0]
    assert (root.text(PID), root.text(NAME), root.text(COMMAND)) == ("10", "sh", "sh -c x")
    assert root.isExpanded()
    assert [child.text(PID) for child in items(root)] == ["11", "12"]
    assert view.status.text() == "3 processes · host PIDs"


def test_updates_keep_items_selection_expansion_and_sort_order(view: ProcessTreeView) -> None:
    view.add_sample(sample(*family()))
    root, child = view.item(10), view.item(12)
    assert root is not None and child is not None
    view.tree.sortByColumn(PID, Qt.SortOrder.DescendingOrder)
    view.tree.setCurrentItem(child)
    root.setExpanded(False)
    view.on_timer_timeout()  # the refresh timer fires: nothing new, nothing changes
    view.add_sample(sample(*family(parent_cpu=80.0), row(13, 0, "orphan")))
    view.on_timer_timeout()  # the refresh timer shows the coalesced newest table
    assert view.item(10) is root and view.item(12) is child
    assert root.text(CPU) == "80 %"
    assert view.tree.currentItem() is child and not root.isExpanded()
    assert [item.text(PID) for item in items(view.tree)] == ["13", "10"]
    assert [item.text(PID) for item in items(root)] == ["12", "11"]  # still descending
    view.add_sample(sample(row(10, 0, "sh"), row(12, 0)))  # 11 ended; 12 lost its parent
    view.on_timer_timeout()
    assert view.item(11) is None and view.item_count() == 2
    assert view.item(12) is child and child.parent() is None


def test_a_parent_and_its_children_ending_together_leave_the_tree(view: ProcessTreeView) -> None:
    for pids in ((10, 11, 12), (20,), (20, 21)):  # sh and its children end; a new run starts
        rows = [row(pids[0], 0, "sh")] + [row(pid, pids[0]) for pid in pids[1:]]
        view.add_sample(sample(*rows))
        view.on_timer_timeout()
        assert [p for p in pids if view.item(p)] == list(pids) and view.item_count() == len(pids)
        assert view.tree.topLevelItemCount() == 1
        assert len(items(items(view.tree)[0])) == len(pids) - 1


def test_updates_are_coalesced_to_a_calm_rate(view: ProcessTreeView) -> None:
    view.add_sample(sample(row(10, 0, cpu=1.0)))
    for cpu in (2.0, 3.0, 4.0):  # arrive at 10 Hz, before the refresh timer fires
        view.add_sample(sample(row(10, 0, cpu=cpu)))
    item = view.item(10)
    assert item is not None and item.text(CPU) == "1 %"
    view.on_timer_timeout()
    assert item.text(CPU) == "4 %"


def test_a_fork_bomb_shows_the_capped_rows_and_says_how_many_more(view: ProcessTreeView) -> None:
    rows = [row(1000, 0, "bomb")] + [
        row(1000 + i, 1000 + (i - 1) // 2, "bomb") for i in range(1, 300)
    ]
    view.add_sample(sample(*rows, total=1212))
    assert view.item_count() == 300
    assert view.status.text() == "1,212 processes · host PIDs · showing 300, … and 912 more"


def test_an_invisible_tree_says_why_instead_of_showing_nothing(view: ProcessTreeView) -> None:
    view.add_sample(sample(*family()))
    view.on_timer_timeout()
    view.add_sample(sample(hidden=GVISOR_TREE))
    view.on_timer_timeout()
    assert view.status.text() == GVISOR_TREE and view.tree.isHidden()
    assert view.item_count() == 0
    view.reset()
    assert not view.tree.isHidden()


def test_hostile_names_and_commands_stay_plain_text(view: ProcessTreeView) -> None:
    hostile = "<img src=x onerror=alert(1)><b>bold</b>"
    view.add_sample(sample(row(7, 0, name="<b>x</b>", cmd=hostile), pid_space="container"))
    item = view.item(7)
    assert item is not None
    assert (item.text(NAME), item.text(COMMAND)) == ("<b>x</b>", hostile)
    assert "&lt;img" in item.toolTip(COMMAND) and "<img" not in item.toolTip(COMMAND)
    assert view.status.text() == "1 process in the container · container PIDs"


def finished(status: RunStatus, cause: str, wall: float) -> RunResult:
    fields: dict[str, Any] = {f: None for f in RunResult.__dataclass_fields__}
    return RunResult(**{**fields, "status": status, "cause": cause, "wall_seconds": wall})


def test_the_last_tree_stays_after_the_run_and_says_what_was_killed(
    view: ProcessTreeView,
) -> None:
    view.add_sample(sample(*family(), t=4.7))
    view.finish(finished(RunStatus.TIMED_OUT, "wall-clock timeout of 5 s", 5.0))
    assert view.item_count() == 3
    assert view.status.text() == (
        "At the end (0.3 s before the run ended): 3 processes · host PIDs. Wall-clock timeout "
        "of 5 s: the workbench killed the run's processes still running."
    )
    view.finish(finished(RunStatus.OOM_KILLED, "memory limit 128 MiB (cgroup OOM)", 5.0))
    assert view.status.text() == "At the end (0.3 s before the run ended): 3 processes · host PIDs."
    view.reset()
    view.finish(finished(RunStatus.OK, "", 0.01))
    assert view.status.text() == "Processes: the run ended before a process table was taken."


@pytest.fixture
def tmp_path(traversable_tmp_path: Path) -> Path:
    """A world-traversable temporary folder (hardened runs as a throwaway uid)."""
    return traversable_tmp_path


@pytest.mark.parametrize("posture", [PostureId.LOCAL, PostureId.HARDENED])
def test_a_real_run_shows_its_shell_and_two_children(
    window: MainWindow, run: Run, posture: PostureId
) -> None:
    skill = next(s for s in window.browser.skills() if s.name == "workspace-report")
    assert window.browser.select_path(skill.path)
    panel = window.run_panel
    panel.set_posture(posture)
    panel.command.setText("sleep 1.5 & sleep 1.5 & wait")
    view = panel.processes

    def children() -> list[str]:
        roots = items(view.tree)
        return [item.text(COMMAND) for item in items(roots[0])] if len(roots) == 1 else []

    async def watch() -> None:  # while the run goes: its last table may fall between two ends
        task = panel.start()
        assert task is not None
        await until(lambda: children() == ["sleep 1.5", "sleep 1.5"] or task.done())
        assert [item.text(NAME) for item in items(view.tree)] == ["sh"]
        assert children() == ["sleep 1.5", "sleep 1.5"]
        assert view.isVisible() and view.tree.isVisible()  # placed in the window, not hidden
        await task

    run(watch())
    assert view.status.text().startswith("At the end ("), view.status.text()
