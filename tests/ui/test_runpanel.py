"""The run panel: command and history, limits, live output, outcome banner and Stop."""

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QTextCursor
from PySide6.QtWidgets import QAbstractButton, QAbstractSpinBox, QScrollBar, QTabBar, QWidget

from tests.ui.conftest import Run, items
from tests.waiting import until
from workbench.ansi import BASIC_COLOURS
from workbench.executors.types import CapturedOutput, PostureCard, RunResult, RunStatus
from workbench.postures.model import Network, Posture, PostureId
from workbench.ui.mainwindow import MainWindow
from workbench.ui.run.banner import OutcomeBanner
from workbench.ui.run.card import CardView
from workbench.ui.theme import status_colors


def _select(window: MainWindow, name: str) -> None:
    skill = next(s for s in window.browser.skills() if s.name == name)
    assert window.browser.select_path(skill.path)


def _colour_of(window: MainWindow, needle: str) -> str:
    document = window.run_panel.output.text.document()
    cursor = document.find(needle)
    assert not cursor.isNull(), needle
    probe = QTextCursor(document)
    probe.setPosition(cursor.selectionStart() + 1)
    return probe.charFormat().foreground().color().name()


def test_command_is_prefilled_from_the_skill(window: MainWindow) -> None:
    _select(window, "workspace-report")
    assert window.run_panel.command.text() == 'python3 "$SKILL_DIR/scripts/report.py"'
    assert window.run_panel.posture_label.text() == "Hardened local:"
    assert window.run_panel.run_button.isEnabled()


def test_run_streams_coloured_text_and_reports_the_outcome(window: MainWindow, run: Run) -> None:
    _select(window, "workspace-report")
    panel = window.run_panel
    panel.set_posture(PostureId.LOCAL)  # hardened's throwaway uid cannot enter pytest's tmp
    panel.command.setText(
        "echo '<b>out</b>'; printf '\\033]0;title\\007\\033[32mgreen\\033[0m\\n';"
        " printf 'plain err\\n' >&2; exit 3"
    )
    task = panel.start()
    assert task is not None and panel.is_running()
    assert not panel.run_button.isEnabled() and panel.stop_button.isEnabled()
    assert not panel.limits.isEnabled()
    run(task)
    _wait_idle(panel, run)
    assert not panel.is_running() and not panel.stop_button.isEnabled()
    text = panel.output.text.toPlainText()
    assert "<b>out</b>" in text
    assert "green" in text and "\x1b" not in text and "title" not in text
    assert _colour_of(window, "green") == BASIC_COLOURS[2]
    assert _colour_of(window, "plain err") == status_colors(panel.palette()).danger.name()
    assert panel.banner.sentence.text() == "Failed: exited with code 3"
    assert panel.banner.status() == "warning"
    assert "nothing left running" in panel.banner.details.text()
    assert "NO SANDBOX" in panel.banner.warnings.full_text()
    assert panel.output.open_stdout.isEnabled()


def _wait_idle(panel: Any, run: Run) -> None:
    run(until(panel.output.is_idle))


def test_stop_ends_the_run(window: MainWindow, run: Run) -> None:
    _select(window, "workspace-report")
    panel = window.run_panel
    panel.set_posture(PostureId.LOCAL)
    panel.command.setText("echo started; sleep 30")

    async def start_then_stop() -> None:
        task = panel.start()
        assert task is not None
        await until(lambda: "started" in panel.output.text.toPlainText())
        assert "timeout in" in panel.countdown.text()
        panel.stop_button.click()
        await task

    run(start_then_stop())
    assert panel.banner.sentence.text() == "Cancelled: stopped by the user"
    assert panel.countdown.text() == ""


def test_a_command_that_cannot_start_is_reported_not_raised(window: MainWindow, run: Run) -> None:
    _select(window, "workspace-report")
    window.run_panel.set_posture(PostureId.QUICKJS)
    window.run_panel.command.setText('script.js "unterminated')
    task = window.run_panel.start()
    assert task is not None
    run(task)
    sentence = window.run_panel.banner.sentence.text()
    assert sentence.startswith("Not run: Cannot split the command"), sentence
    assert window.run_panel.banner.status() == "danger"


def test_suggested_command_does_not_overwrite_an_edit_on_reselect(window: MainWindow) -> None:
    _select(window, "workspace-report")
    window.run_panel.command.setText("ls")
    current = window.browser.current_skill()
    assert current is not None
    window.run_panel.set_skill(current)
    assert window.run_panel.command.text() == "ls"
    assert Path(current.path).is_dir()


def test_commands_are_remembered_per_skill(window: MainWindow, run: Run, qtbot: Any) -> None:
    _select(window, "workspace-report")
    panel = window.run_panel
    panel.set_posture(PostureId.LOCAL)
    for command in ("echo one", "echo two"):
        panel.command.setText(command)
        task = panel.start()
        assert task is not None
        run(task)
    panel.command.setText("")
    panel.command.setFocus()
    qtbot.keyClick(panel.command, Qt.Key.Key_Up)
    assert panel.command.text() == "echo two"
    qtbot.keyClick(panel.command, Qt.Key.Key_Up)
    assert panel.command.text() == "echo one"
    qtbot.keyClick(panel.command, Qt.Key.Key_Down)
    qtbot.keyClick(panel.command, Qt.Key.Key_Down)
    assert panel.command.text() == 'python3 "$SKILL_DIR/scripts/report.py"'
    _select(window, "runaway")
    qtbot.keyClick(panel.command, Qt.Key.Key_Up)
    assert panel.command.text() == 'python3 "$SKILL_DIR/scripts/runaway.py" cpu'


def test_loosened_limits_are_flagged_and_network_is_for_containers(window: MainWindow) -> None:
    panel = window.run_panel
    panel.set_posture(PostureId.HARDENED)
    assert not panel.loosened.isVisible()
    assert not panel.limits.network.isEnabled()
    panel.limits.memory.setValue(2048)
    assert panel.limits.memory.property("status") == "warning"
    assert panel.loosened.isVisible()
    assert "Memory limit raised to 2048 MiB" in panel.loosened.text()
    assert panel.limits.posture(PostureId.HARDENED).limits.memory_bytes == 2048 * 1024 * 1024
    panel.limits.memory.setValue(256)
    assert panel.limits.memory.property("status") == ""
    assert not panel.loosened.isVisible()
    panel.set_posture(PostureId.LOCAL)
    assert not panel.limits.memory.isEnabled() and not panel.limits.cpus.isEnabled()
    panel.set_posture(PostureId.DOCKER)
    assert panel.limits.network.isEnabled() and panel.limits.cpus.isEnabled()
    assert panel.limits.posture(PostureId.DOCKER).network is Network.NONE
    assert not panel.loosened.isVisible()
    panel.limits.network.setCurrentIndex(1)
    assert "Network is ON" in panel.loosened.text()
    assert panel.limits.posture(PostureId.DOCKER).network is Network.BRIDGE
    assert panel.limits.posture(PostureId.HARDENED).network is Network.NONE
    assert panel.loosened.property("status") == "danger"


def test_every_focusable_widget_of_every_run_tab_has_a_name(window: MainWindow) -> None:
    panel = window.run_panel
    unnamed: set[str] = set()
    for tab in range(panel.tabs.count()):
        panel.tabs.setCurrentIndex(tab)
        for page in range(panel.changes.diff.pages.count()):
            panel.changes.diff.pages.setCurrentIndex(page)
            unnamed |= {
                f"{type(widget).__name__} in {type(widget.parent()).__name__}, tab {tab}"
                for widget in panel.findChildren(QWidget)
                if widget.isVisible()
                and widget.focusPolicy() != Qt.FocusPolicy.NoFocus
                and not widget.accessibleName()
                and not (isinstance(widget, QAbstractButton) and widget.text())
                and not isinstance(widget, QTabBar | QScrollBar)
                and not isinstance(widget.parent(), QAbstractSpinBox)  # its spin box is named
            }
    assert unnamed == set()


def _result(status: RunStatus, cause: str, leftover: int, card: PostureCard) -> RunResult:
    empty = CapturedOutput("", 0, False, None)
    return RunResult(
        run_id="r",
        status=status,
        cause=cause,
        exit_code=None,
        signal=9,
        wall_seconds=2.04,
        cpu_seconds=1.96,
        peak_rss_bytes=250 * 1024 * 1024,
        peak_processes=3,
        stdout=empty,
        stderr=empty,
        card=card,
        leftover_processes=leftover,
    )


def test_the_banner_and_the_card_of_a_killed_run(qtbot: Any) -> None:
    card = PostureCard(
        Posture(PostureId.HARDENED),
        checks=(("RLIMIT_AS 256 MiB", True), ("CPU share 1 core(s) (needs a cgroup)", False)),
        env_kept=("PATH",),
        env_dropped=("AWS_SECRET_ACCESS_KEY", "<b>X</b>"),
        run_as="uid 61234 (throwaway)",
    )
    killed = _result(RunStatus.OOM_KILLED, "memory limit 256 MiB (RLIMIT_AS)", 0, card)
    banner = OutcomeBanner()
    qtbot.addWidget(banner)
    banner.show_result(killed)
    assert banner.sentence.text() == "Stopped: memory limit 256 MiB (RLIMIT_AS)"
    assert banner.status() == "danger"
    assert banner.details.text() == (
        "wall 2.0 s · CPU 2.0 s · peak memory 250.0 MiB · peak 3 processes · nothing left running"
    )
    banner.show_result(_result(RunStatus.TIMED_OUT, "wall-clock timeout of 5 s", 2, card))
    assert banner.sentence.text() == "Timed out: wall-clock timeout of 5 s"
    assert banner.details.text().endswith("2 processes still running after the kill")
    assert banner.details.property("status") == "danger"

    view = CardView()
    qtbot.addWidget(view)
    view.set_card(card)
    assert view.heading.text().startswith("Hardened local: 1 of 2 checks held")
    checks = items(view.tree)[0]
    assert [child.text(0) for child in items(checks)] == [
        "✓  RLIMIT_AS 256 MiB",
        "✗  CPU share 1 core(s) (needs a cgroup)",
    ]
    assert items(view.tree)[1].text(0) == "Ran as: uid 61234 (throwaway)"
    assert items(view.tree)[2].text(0) == "Skill environment: none"
    dropped = items(view.tree)[4]
    assert dropped.text(0).endswith(": 2")
    assert items(dropped)[1].text(0) == "<b>X</b>"


def _drawn_in(widget: QWidget, colour: QColor) -> bool:
    """Whether some pixel of `widget` as drawn is within a few steps of `colour`."""
    image = widget.grab().toImage()
    wanted = (colour.red(), colour.green(), colour.blue())

    def near(pixel: QColor) -> bool:
        have = (pixel.red(), pixel.green(), pixel.blue())
        return max(abs(a - b) for a, b in zip(have, wanted, strict=True)) <= 24

    return any(
        near(image.pixelColor(x, y)) for x in range(image.width()) for y in range(image.height())
    )


def test_the_banner_draws_its_sentence_and_lines_in_their_status_colours(qtbot: Any) -> None:
    banner = OutcomeBanner()
    qtbot.addWidget(banner)
    banner.resize(700, 160)
    banner.show()
    colours = status_colors(banner.palette())
    for status in ("danger", "ok", "warning"):
        banner.show_message("Stopped: memory limit 256 MiB", status)
        assert _drawn_in(banner.sentence, getattr(colours, status)), status
        assert _drawn_in(banner, getattr(colours, status))  # its border and stripe
    card = PostureCard(Posture(PostureId.HARDENED), checks=(), env_kept=(), env_dropped=())
    banner.show_result(_result(RunStatus.TIMED_OUT, "wall-clock timeout of 5 s", 2, card))
    assert _drawn_in(banner.details, colours.danger)  # what was left running
