"""The run panel's Network tab: the proxy's log as a table, and what an empty one means."""

from dataclasses import replace
from pathlib import Path

from pytestqt.qtbot import QtBot

from workbench.executors.types import (
    CapturedOutput,
    NetworkAttempt,
    PostureCard,
    RunResult,
    RunStatus,
)
from workbench.postures.model import Posture, PostureId
from workbench.ui.run.network import COLUMNS, NetworkView

NOTHING = CapturedOutput(text="", total_bytes=0, truncated=False, log_path=None)


def result_of(posture: Posture, *log: NetworkAttempt) -> RunResult:
    return replace(
        RunResult.not_run("r", Path("/nowhere"), "", PostureCard(posture), ()),
        status=RunStatus.OK,
        stdout=NOTHING,
        network_log=log,
    )


def test_each_attempt_is_a_row_with_its_verdict_and_bytes(qtbot: QtBot) -> None:
    view = NetworkView()
    qtbot.addWidget(view)
    posture = Posture(PostureId.BUBBLEWRAP, allow_hosts=("pypi.org",))
    allowed = NetworkAttempt("pypi.org", 443, 0.25, "allowed", 1200, 56000)
    refused = NetworkAttempt(
        "evil.example\u202e", 443, 0.5, "refused", detail="not on the allow-list"
    )
    view.set_result(result_of(posture, allowed, refused))
    table = view.table
    assert table.rowCount() == 2 and table.columnCount() == len(COLUMNS)

    def cell(row: int, column: int) -> str:
        item = table.item(row, column)
        assert item is not None
        return item.text()

    row = [cell(0, column) for column in range(len(COLUMNS))]
    assert row == ["0.25 s", "allowed", "CONNECT", "pypi.org", "443", "1,200", "56,000", ""]
    assert cell(1, 1) == "refused"
    assert cell(1, 3) == "evil.example\u202e"  # plain text, never markup
    assert view.heading.text().startswith("2 connections asked for through the proxy, 1 allowed.")


def test_empty_logs_say_why_there_is_nothing(qtbot: QtBot) -> None:
    view = NetworkView()
    qtbot.addWidget(view)
    view.set_result(result_of(Posture(PostureId.BUBBLEWRAP)))
    assert view.heading.text().startswith("Network off")
    view.set_result(result_of(Posture(PostureId.HARDENED)))
    assert view.heading.text().startswith("Only the bubblewrap posture logs connections")
    posture = Posture(PostureId.BUBBLEWRAP, allow_hosts=("pypi.org",))
    view.set_result(result_of(posture, NetworkAttempt("pypi.org", 443, 0.1, "allowed")))
    assert view.table.rowCount() == 1
    view.set_result(None)  # cleared: no rows of the last run, and what the tab is for
    assert view.table.rowCount() == 0
    assert view.heading.text().startswith("After a run")
