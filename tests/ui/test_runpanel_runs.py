"""Real runs in the run panel under local and hardened: samples, output, outcome, changes, diff,
posture card and restore; a failed run's diagnosis in the banner, its evidence highlighted and
its re-run with the suggested change; and a 100 MB output flood that must not stall the event
loop.

The data folder (and so every workspace) is in a world-traversable folder under /tmp: pytest's
tmp_path is mode 0700, which the hardened posture's throwaway uid cannot enter.
"""

import asyncio
import collections
import os
import sys
import threading
import time
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QTimer

from tests.ui.conftest import Run, items
from tests.waiting import until
from workbench.cli.gui import TABS, VIEWS
from workbench.errors import UsageError
from workbench.postures.model import PostureId
from workbench.runs.diagnosis import Kind
from workbench.ui.mainwindow import MainWindow
from workbench.ui.run.panel import CARD_TAB, CHANGES_TAB, RunPanel
from workbench.ui.scene import Scene, stage

COMMAND = (
    'python3 -c "import time; b = bytearray(48 << 20); time.sleep(1.0)";'
    " python3 \"$SKILL_DIR/scripts/report.py\"; printf 'one\\ntwo\\n' > notes.txt"
)
FLOOD_MB = 100
STALL_LIMIT_S = 0.1


class StallWatch:
    """Notes where the main thread is, every 5 ms while the event loop is more than
    `STALL_LIMIT_S / 2` late for its tick (`tick()`), so a stall can say where it was. A note is
    a few frames' file, line and function: cheap, so the watch barely holds the GIL."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self._main = threading.get_ident()
        self._seen: collections.Counter[tuple[tuple[str, int, str], ...]] = collections.Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def tick(self) -> float:
        """Record a tick of the event loop; the seconds since the last one."""
        now = time.monotonic()
        gap, self.last = now - self.last, now
        return gap

    def stop(self) -> str:
        """Stop watching; the two places seen most often, innermost frame first, with counts."""
        self._stop.set()
        self._thread.join()
        return "\n".join(
            f"{n} x " + " <- ".join(f"{Path(file).name}:{line} {name}" for file, line, name in at)
            for at, n in self._seen.most_common(2)
        )

    def _watch(self) -> None:
        while not self._stop.wait(0.005):
            frame = sys._current_frames().get(self._main)
            if time.monotonic() - self.last <= STALL_LIMIT_S / 2 or frame is None:
                continue
            at: list[tuple[str, int, str]] = []
            while frame is not None and len(at) < 8:
                at.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
                frame = frame.f_back
            self._seen[tuple(at)] += 1


@pytest.fixture
def tmp_path(traversable_tmp_path: Path) -> Path:
    """A world-traversable temporary folder (the window's data folder is made inside it)."""
    return traversable_tmp_path


def _prepare(window: MainWindow, posture: PostureId, command: str) -> RunPanel:
    skill = next(s for s in window.browser.skills() if s.name == "workspace-report")
    assert window.browser.select_path(skill.path)
    panel = window.run_panel
    panel.set_posture(posture)
    panel.command.setText(command)
    return panel


async def _run_and_settle(panel: RunPanel) -> None:
    task = panel.start()
    assert task is not None
    await task
    await panel.changes.settle()
    await until(panel.output.is_idle)


@pytest.mark.parametrize("posture", [PostureId.LOCAL, PostureId.HARDENED])
def test_a_run_shows_samples_output_outcome_changes_diff_and_card(
    window: MainWindow, run: Run, posture: PostureId
) -> None:
    panel = _prepare(window, posture, COMMAND)
    run(_run_and_settle(panel))
    assert panel.banner.sentence.text() == "Finished: exited with code 0", (
        panel.output.text.toPlainText()
    )
    assert "nothing left running" in panel.banner.details.text()
    assert "wrote report.md" in panel.output.text.toPlainText()
    assert panel.charts.memory.point_count() >= 3
    assert panel.charts.memory.peak() > 40 * 1024 * 1024
    assert panel.charts.cpu_label.text().startswith("CPU ")
    assert "peak" in panel.charts.memory_label.text()

    assert panel.tabs.tabText(CHANGES_TAB) == "Workspace changes (2)"
    assert panel.changes.counts.text() == "2 changes: 2 added"
    assert panel.changes.diff.title.text() == "notes.txt (added)"
    diff = panel.changes.diff
    shown = diff.unified.toPlainText() if not diff.is_split() else diff.right.toPlainText()
    assert "one" in shown and "two" in shown

    panel.tabs.setCurrentIndex(CARD_TAB)
    card = panel.card_view
    assert card.tree.topLevelItemCount() == 5
    assert items(card.tree)[2].text(0) == "Skill environment: none"
    if posture is PostureId.HARDENED:
        assert "Hardened local" in card.heading.text()
        texts = [check.text(0) for check in items(items(card.tree)[0])]
        assert any("RLIMIT_AS" in text and text.startswith("✓") for text in texts), texts
        dropped = items(card.tree)[4].text(0)
        assert dropped.startswith("Environment dropped")

    workspace = panel.last_run.record.workspace if panel.last_run else None
    assert workspace is not None and (workspace / "notes.txt").is_file()

    async def restore() -> None:
        assert panel.changes.restore_now() is not None
        await panel.changes.settle()

    run(restore())
    assert panel.changes.restore_status.text().startswith("Restored: 2 paths put back")
    assert not (workspace / "notes.txt").exists() and not (workspace / "report.md").exists()


@pytest.mark.slow
@pytest.mark.timing
def test_a_100_mb_output_flood_keeps_the_event_loop_responsive(
    window: MainWindow, loop: qasync.QEventLoop
) -> None:
    line = "\\033[32mflood\\033[0m " + "x" * 89 + "\\n"  # 105 bytes, coloured
    command = (
        f"python3 -c \"import sys; block = b'{line}' * 10000; "
        f'[sys.stdout.buffer.write(block) for _ in range({FLOOD_MB})]"'
    )
    panel = _prepare(window, PostureId.LOCAL, command)
    stalls: list[float] = []
    watch = StallWatch()
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: stalls.append(watch.tick()))
    timer.start()
    started = time.monotonic()
    try:
        loop.run_until_complete(asyncio.wait_for(_run_and_settle(panel), 90))
    finally:
        timer.stop()
        stacks = watch.stop()
    elapsed = time.monotonic() - started
    result = panel.last_run.result if panel.last_run else None
    assert result is not None and result.status == "ok", panel.banner.sentence.text()
    assert result.stdout.total_bytes >= FLOOD_MB * 1_000_000
    assert panel.output.text.document().blockCount() <= 20_001
    assert "skipped here to keep up" in panel.output.text.toPlainText()
    worst = max(stalls)
    at = sum(stalls[: stalls.index(worst) + 1])  # when it ended, for a failure to say where
    print(
        f"flood: {elapsed:.1f} s, {len(stalls)} ticks, "
        f"worst stall {worst * 1000:.0f} ms, ending {at:.2f} s in"
    )
    assert worst < STALL_LIMIT_S, (
        f"the event loop stalled {worst * 1000:.0f} ms, to {at:.2f} s; where it was:\n{stacks}"
    )


def test_changed_files_are_listed_while_the_run_goes(
    window: MainWindow, run: Run, tmp_path: Path
) -> None:
    gate = tmp_path / "go"  # the run goes on once the test has seen the first change
    command = f"echo a > one.txt; while [ ! -e '{gate}' ]; do sleep 0.05; done; echo b > two.txt"
    panel = _prepare(window, PostureId.LOCAL, command)

    def listed() -> list[str]:
        return [item.text(0) for item in items(panel.changes.tree)]

    async def watch() -> None:
        task = panel.start()
        assert task is not None
        await until(lambda: "one.txt" in listed())
        assert panel.is_running()
        assert listed() == ["one.txt"]
        assert panel.changes.counts.text().startswith("Running: 1 path changed so far")
        assert items(panel.changes.tree)[0].text(2).startswith("seen at ")
        gate.touch()
        await task
        await panel.changes.settle()

    run(watch())
    assert sorted(listed()) == ["one.txt", "two.txt"]
    assert panel.changes.counts.text() == "2 changes: 2 added"


def test_a_screenshot_scene_runs_the_example_under_the_chosen_posture(
    window: MainWindow, run: Run
) -> None:
    scene = Scene(
        "workspace-report",
        posture=PostureId.LOCAL,
        command="echo hi > a.txt",
        tab="changes",
        run=True,
    )
    run(stage(window, scene))
    assert window.postures.chosen() is PostureId.LOCAL
    assert window.postures.card(PostureId.LOCAL).radio.isChecked()
    assert window.run_panel.tabs.currentIndex() == CHANGES_TAB
    assert window.run_panel.changes.counts.text() == "1 change: 1 added"
    with pytest.raises(UsageError, match="No skill named"):
        run(stage(window, Scene("no-such-skill")))


ALLOCATE = "echo allocating; python3 -c \"b = bytearray(200 << 20); print('allocated')\""


async def _settle(panel: RunPanel) -> None:
    """Wait until the run the panel started (by Run or a banner button) has ended and shows."""
    await until(lambda: not panel.is_running())
    await panel.changes.settle()
    await until(panel.output.is_idle)


def test_a_diagnosed_failure_is_explained_highlighted_and_rerun_with_the_change(
    window: MainWindow, run: Run
) -> None:
    panel = _prepare(window, PostureId.HARDENED, ALLOCATE)
    panel.limits.memory.setValue(100)
    assert panel.start() is not None
    run(_settle(panel))
    failed = panel.last_run
    assert failed is not None and failed.record.diagnosis is not None
    diagnosis = failed.record.diagnosis
    assert diagnosis.kind is Kind.MEMORY_LIMIT and diagnosis.evidence is not None

    banner = panel.banner
    assert banner.why.isVisibleTo(banner) and "memory limit 100 MiB" in banner.why.text()
    assert banner.evidence.text() == f"▶ stderr line {diagnosis.evidence.line}: MemoryError"
    assert banner.rerun_button.text() == "Re-run with a memory limit of 400 MiB"
    assert panel.output.highlighted() == "MemoryError"

    banner.rerun_button.click()
    run(_settle(panel))
    again = panel.last_run
    assert again is not None and again.record.outcome == "ok", panel.banner.sentence.text()
    assert again.record.rerun_of == failed.record.run_id
    assert again.result.card.posture.limits.memory_bytes == 400 << 20
    assert not banner.why.isVisibleTo(banner) and not banner.rerun_button.isVisibleTo(banner)
    assert panel.output.highlighted() == ""


def test_a_rerun_that_would_drop_the_sandbox_asks_first(window: MainWindow, run: Run) -> None:
    if os.geteuid() != 0:
        pytest.skip("only a workbench run by root drops root's powers under hardened")
    panel = _prepare(window, PostureId.HARDENED, "touch f && chown 0:0 f")
    assert panel.start() is not None
    run(_settle(panel))
    done = panel.last_run
    assert done is not None and done.record.diagnosis is not None
    change = done.record.diagnosis.change
    assert change is not None and change.posture is PostureId.LOCAL  # root's powers: local
    assert panel.rerun(change) is None  # not started: asked first
    question = panel.question()
    assert question is not None and "NO SANDBOX" in question.text()
    question.reject()
    assert not panel.is_running()


def test_a_scene_opens_a_skill_page_and_tab_without_running_anything(
    window: MainWindow, run: Run
) -> None:
    """`workbench gui --skill runaway --tab diagnostics`, and `--view history`."""
    run(stage(window, Scene("runaway", tab="diagnostics")))
    skill = window.browser.current_skill()
    assert skill is not None and skill.name == "runaway"
    tabs = window.view.tabs()
    assert tabs.tabText(tabs.currentIndex()).startswith("Diagnostics")
    assert window.run_panel.last_run is None  # nothing ran
    run(stage(window, Scene(str(skill.path), view="history")))
    assert window.pages.currentWidget() is window.history
    assert window.run_panel.last_run is None


def test_every_tab_and_view_the_command_line_offers_opens(window: MainWindow, run: Run) -> None:
    for tab in TABS:
        run(stage(window, Scene(tab=tab)))
    for view in VIEWS:
        run(stage(window, Scene(view=view)))
        assert window.pages.currentIndex() == VIEWS.index(view)
