"""How the history list words a run: status and posture as the Run page says them, a cause for
every run (with the control its diagnosis names), the row of a session (a comparison's or a
probe-lab run's runs, grouped under it), and which runs a filter text keeps.

The status is the Run page banner's lead ("Finished", "Stopped", "Timed out", ...), the posture
its title ("Hardened local"); a run whose workbench ended before it did reads "Interrupted"
with a sentence saying so. A cause is shown on one line, elided at the column's edge, and
whole in its tool tip.
"""

from datetime import datetime

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QTreeWidgetItem

from workbench.executors.types import RunStatus
from workbench.postures.description import posture_title
from workbench.runs.record import RunOrigin, RunRecord, RunState
from workbench.runs.reports import INTERRUPTED_CAUSE
from workbench.ui.common.text import tooltip
from workbench.ui.run.banner import LEADS, STATUS_LOOK, why_sentence
from workbench.ui.theme import StatusColors

COLUMNS = ("Started", "Status", "Cause", "Posture", "Skill", "Changes")
RUN_ID = Qt.ItemDataRole.UserRole  # a run's id; a session row holds None
SESSION = Qt.ItemDataRole.UserRole + 1  # a session row's session id
RUNNING_CAUSE = "Still running in another workbench window or command."
ORIGIN_TITLES = {RunOrigin.RUN: "Runs", RunOrigin.COMPARE: "Comparison", RunOrigin.LAB: "Probe lab"}


def status_word(record: RunRecord) -> str:
    """`Finished`, `Failed`, `Stopped`, `Timed out`, ..., `Interrupted`, `Running`."""
    if record.state is RunState.FINISHED and record.status in set(RunStatus):
        return LEADS[RunStatus(record.status)]
    return "Interrupted" if record.state is RunState.INTERRUPTED else "Running"


def status_look(record: RunRecord) -> str:
    """The colour of the status: `ok`, `warning`, `danger` or `muted`, as the banner's."""
    if record.state is RunState.RUNNING:
        return "muted"
    if record.state is RunState.INTERRUPTED or record.status not in set(RunStatus):
        return "warning"
    return STATUS_LOOK.get(RunStatus(record.status), "danger")


def status_colour(record: RunRecord, colours: StatusColors) -> QColor:
    """The foreground colour of the run's status (see `status_look`)."""
    look = {"ok": colours.ok, "warning": colours.warning, "danger": colours.danger}
    return look.get(status_look(record), colours.muted)


def cause_text(record: RunRecord) -> str:
    """The run's cause (and the control its diagnosis names), or a sentence for a run that has
    none (interrupted, running)."""
    control = record.diagnosis.control if record.diagnosis is not None else ""
    if record.cause:
        return f"{record.cause} · {control}" if control else record.cause
    if record.state is RunState.INTERRUPTED:
        return INTERRUPTED_CAUSE
    return RUNNING_CAUSE if record.state is RunState.RUNNING else "-"


def matches(record: RunRecord, words: list[str]) -> bool:
    """Whether every word (casefolded) is in the run's skill, posture, status or cause."""
    haystack = " ".join(
        (
            record.skill_name,
            record.posture,
            posture_title(record.posture),
            record.outcome,
            status_word(record),
            cause_text(record),
            record.diagnosis.kind if record.diagnosis is not None else "",
            record.run_id,
        )
    ).casefold()
    return all(word in haystack for word in words)


def run_item(record: RunRecord, colours: StatusColors) -> QTreeWidgetItem:
    """The list row of `record`; its run id is the first column's `RUN_ID` data."""
    cause = cause_text(record)
    values = (
        _time(record.started_at),
        status_word(record),
        " ".join(cause.split()),
        posture_title(record.posture),
    )
    item = QTreeWidgetItem([*values, record.skill_name, str(len(record.changes))])
    item.setData(0, RUN_ID, record.run_id)
    item.setForeground(COLUMNS.index("Status"), status_colour(record, colours))
    item.setToolTip(COLUMNS.index("Status"), f"Status: {record.outcome}")
    why = f"\n\n{why_sentence(record.diagnosis)}" if record.diagnosis is not None else ""
    rerun = f"\n\nA re-run of {record.rerun_of}." if record.rerun_of else ""
    item.setToolTip(COLUMNS.index("Cause"), tooltip(cause + why + rerun))
    item.setTextAlignment(COLUMNS.index("Changes"), Qt.AlignmentFlag.AlignRight)
    return item


def session_item(records: list[RunRecord]) -> QTreeWidgetItem:
    """The row of one session (its runs, newest first, become its children): when it began,
    what it was, how its runs ended, under which postures, for which skills."""
    first, origin = records[-1], records[-1].origin
    ok = sum(1 for record in records if record.outcome == RunStatus.OK)
    title = ORIGIN_TITLES.get(RunOrigin(origin), origin) if origin in set(RunOrigin) else origin
    postures = ", ".join(dict.fromkeys(posture_title(r.posture) for r in records))
    skills = ", ".join(dict.fromkeys(r.skill_name for r in records))
    changes = sum(len(record.changes) for record in records)
    runs = f"{len(records)} run{'s' * (len(records) != 1)}"
    summary = f"{title}: {runs}, {ok} ended ok"
    item = QTreeWidgetItem([_time(first.started_at), runs, summary, postures, skills, str(changes)])
    item.setData(0, RUN_ID, None)
    item.setData(0, SESSION, first.session)
    for column, text in ((COLUMNS.index("Posture"), postures), (COLUMNS.index("Skill"), skills)):
        item.setToolTip(column, tooltip(text))
    item.setToolTip(COLUMNS.index("Cause"), tooltip(f"{summary} (session {first.session})"))
    item.setTextAlignment(COLUMNS.index("Changes"), Qt.AlignmentFlag.AlignRight)
    font = item.font(0)
    font.setBold(True)
    for column in range(len(COLUMNS)):
        item.setFont(column, font)
    return item


def _time(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")
