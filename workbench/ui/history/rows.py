"""How the history list words a run: status and posture as the Run page says them, a cause for
every run (with the control its diagnosis names), which runs the probe lab made, and which runs
a filter text keeps.

The status is the Run page banner's lead ("Finished", "Stopped", "Timed out", ...), the posture
its title ("Hardened local"); a run whose workbench ended before it did reads "Interrupted"
with a sentence saying so. Lab runs are the probe skills run from the lab's temporary folder.
"""

from datetime import datetime

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QTreeWidgetItem

from workbench.executors.types import RunStatus
from workbench.postures.description import posture_title
from workbench.probes.site import LAB_FOLDER_PREFIX
from workbench.runs.record import RunRecord, RunState
from workbench.runs.reports import INTERRUPTED_CAUSE
from workbench.ui.common.text import tooltip
from workbench.ui.run.banner import LEADS, STATUS_LOOK, why_sentence
from workbench.ui.theme import StatusColors

COLUMNS = ("Started", "Status", "Cause", "Posture", "Skill", "Changes")
RUN_ID = Qt.ItemDataRole.UserRole
RUNNING_CAUSE = "Still running in another workbench window or command."


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


def is_lab_run(record: RunRecord) -> bool:
    """Whether the probe lab made this run (its skill is the lab's copy of a probe skill)."""
    return any(part.startswith(LAB_FOLDER_PREFIX) for part in record.skill_dir.parts)


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
    started = datetime.fromtimestamp(record.started_at).strftime("%Y-%m-%d %H:%M:%S")
    cause = cause_text(record)
    values = (started, status_word(record), " ".join(cause.split()), posture_title(record.posture))
    item = QTreeWidgetItem([*values, record.skill_name, str(len(record.changes))])
    item.setData(0, RUN_ID, record.run_id)
    item.setForeground(COLUMNS.index("Status"), status_colour(record, colours))
    item.setToolTip(COLUMNS.index("Status"), f"Status: {record.outcome}")
    why = f"\n\n{why_sentence(record.diagnosis)}" if record.diagnosis is not None else ""
    rerun = f"\n\nA re-run of {record.rerun_of}." if record.rerun_of else ""
    item.setToolTip(COLUMNS.index("Cause"), tooltip(cause + why + rerun))
    item.setTextAlignment(COLUMNS.index("Changes"), Qt.AlignmentFlag.AlignRight)
    return item
