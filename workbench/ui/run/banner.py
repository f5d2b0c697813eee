"""The outcome banner: how the last run ended, in one sentence, why, and its numbers.

The sentence names the status and the cause the executor gave ("Stopped: memory limit
256 MiB (RLIMIT_AS)", "Timed out: wall-clock timeout of 5 s"); the banner is coloured by
status (ok, danger for a run a control ended, warning for a plain failure). A failed run's
diagnosis follows: why it failed and the control that did it, the evidence line (which the
output view highlights), the suggestion, and a button that re-runs the command with the
suggested change (`rerun_requested`). Below: wall time, CPU seconds, peak memory and processes
(or that the host cannot count them, as under gVisor), what was left running, and the run's
posture warnings on one line (whole in its tool tip; the card beside says them in full). Every
text is plain (causes and evidence quote the command's own output).
"""

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QPaintEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from workbench.executors.types import RunResult, RunStatus
from workbench.runs.diagnosis import Change, Diagnosis
from workbench.ui.common.text import format_size
from workbench.ui.common.widgets import ElidedLabel, plain_label, set_status
from workbench.ui.theme import paint_panel, status_colors, tint

LEADS = {
    RunStatus.OK: "Finished",
    RunStatus.FAILED: "Failed",
    RunStatus.TIMED_OUT: "Timed out",
    RunStatus.CANCELLED: "Cancelled",
    RunStatus.OOM_KILLED: "Stopped",
    RunStatus.LIMIT_EXCEEDED: "Stopped",
    RunStatus.ERROR: "Could not run",
}
STRIPE = 5  # the coloured band down the banner's left edge, in pixels
TINT_ALPHA = 28  # of the status colour, behind the banner's text
STATUS_LOOK = {
    RunStatus.OK: "ok",
    RunStatus.FAILED: "warning",
    RunStatus.CANCELLED: "muted",
}


def outcome_sentence(result: RunResult) -> str:
    """`Stopped: memory limit 256 MiB (RLIMIT_AS)`, `Finished: exited with code 0`."""
    return f"{LEADS[result.status]}: {result.cause}"


def details_line(result: RunResult) -> str:
    """Wall time, CPU time, peaks and leftovers of a finished run, in one line."""
    left = (
        "nothing left running"
        if result.leftover_processes == 0
        else f"{_processes(result.leftover_processes)} still running after the kill"
    )
    return " · ".join(
        [
            f"wall {result.wall_seconds:.1f} s",
            f"CPU {result.cpu_seconds:.1f} s",
            f"peak memory {format_size(result.peak_rss_bytes)}",
            f"peak {_processes(result.peak_processes)}"
            if result.peak_processes
            else "processes not visible from the host",
            left,
        ]
    )


def why_sentence(diagnosis: Diagnosis) -> str:
    """`Why: <cause> [network none]`: the cause, then the control responsible, if any (a control
    may name its own detail in parentheses, so it is not put in parentheses again)."""
    if not diagnosis.control:
        return f"Why: {diagnosis.cause}"
    return f"Why: {diagnosis.cause} [{diagnosis.control}]"


def rerun_words(change: Change) -> str:
    """The re-run button's text: `Re-run with the network on`."""
    return f"Re-run {change.words()}"


class OutcomeBanner(QFrame):
    """The state of the current or last run, coloured by its status.

    Signals:
        rerun_requested(object): the `Change` the user asked a re-run of the last run with.
    """

    rerun_requested = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._look = "muted"
        self._change: Change | None = None
        self.sentence = plain_label("No run yet.", self, wrap=True)
        font = self.sentence.font()
        font.setBold(True)
        self.sentence.setFont(font)
        self.why = plain_label("", self, wrap=True)
        self.why.setAccessibleName("Why the run failed")
        self.evidence = plain_label("", self)  # one line, cut at the banner's edge
        self.evidence.setAccessibleName("Evidence line")
        self.evidence.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.evidence.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.suggestion = plain_label("", self, wrap=True)
        self.rerun_button = QPushButton("", self)
        self.rerun_button.setAccessibleName("Re-run with the suggested change")
        self.details = plain_label("", self, wrap=True)
        self.warnings = ElidedLabel(Qt.TextElideMode.ElideRight, self)  # whole in the tool tip
        advice = QHBoxLayout()
        advice.setContentsMargins(0, 0, 0, 0)
        advice.addWidget(self.suggestion, 1)
        advice.addWidget(self.rerun_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10 + STRIPE, 6, 9, 6)  # within the painted border
        layout.setSpacing(2)
        layout.addWidget(self.sentence)
        layout.addWidget(self.why)
        layout.addWidget(self.evidence)
        layout.addLayout(advice)
        layout.addWidget(self.details)
        layout.addWidget(self.warnings)
        self.rerun_button.clicked.connect(self.on_rerun_button_clicked)
        self.show_message("No run yet.", "muted")

    def on_rerun_button_clicked(self) -> None:
        if self._change is not None:
            self.rerun_requested.emit(self._change)

    def show_message(self, text: str, status: str, details: str = "") -> None:
        """A sentence that is not a run's result ("Running…", "Not run: …")."""
        self.sentence.setText(text)
        self.details.setText(details)
        self.details.setVisible(bool(details))
        self.warnings.hide()
        self._show_diagnosis(None, False)
        self._paint(status)

    def show_result(
        self, result: RunResult, diagnosis: Diagnosis | None = None, can_rerun: bool = True
    ) -> None:
        """How `result` ended, why (its `diagnosis`, with the re-run button when `can_rerun`
        and the change is one the app can make), its numbers and its posture warnings."""
        self.sentence.setText(outcome_sentence(result))
        self._show_diagnosis(diagnosis, can_rerun)
        self.details.setText(details_line(result))
        self.details.show()
        leftover = result.leftover_processes > 0
        set_status(self.details, "danger" if leftover else "")
        texts = [w.text for w in result.warnings if w.severity != "info"]
        self.warnings.set_full_text("⚠ " + "  ·  ".join(texts) if texts else "")
        self.warnings.setVisible(bool(texts))
        set_status(self.warnings, "warning")
        self._paint(STATUS_LOOK.get(result.status, "danger"))

    def _show_diagnosis(self, diagnosis: Diagnosis | None, can_rerun: bool) -> None:
        evidence = None if diagnosis is None else diagnosis.evidence
        change = None if diagnosis is None else diagnosis.change
        self._change = change if can_rerun and change is not None and not change.build_env else None
        self.why.setText("" if diagnosis is None else why_sentence(diagnosis))
        where = "" if evidence is None else f"{evidence.where}: {evidence.text}"
        self.evidence.setText(f"▶ {where}" if where else "")
        self.evidence.setToolTip(where)
        self.suggestion.setText("" if diagnosis is None else diagnosis.suggestion)
        self.rerun_button.setText("" if self._change is None else rerun_words(self._change))
        if self._change is not None:
            self.rerun_button.setToolTip(
                "Run the same command again, " + self._change.words() + "; History links the two"
            )
        for widget in (self.why, self.evidence, self.suggestion):
            widget.setVisible(bool(widget.text()))
        self.rerun_button.setVisible(self._change is not None)
        set_status(self.evidence, "warning" if where else "")
        # A diagnosis is never squeezed below its text (wrapped lines would overlap): the tabs
        # below give way. Without one the banner may shrink, as the window may.
        vertical = QSizePolicy.Policy.Minimum if diagnosis else QSizePolicy.Policy.Preferred
        self.setSizePolicy(QSizePolicy.Policy.Preferred, vertical)

    def status(self) -> str:
        """The look of the banner now: `ok`, `warning`, `danger` or `muted`."""
        return self._look

    def paintEvent(self, event: QPaintEvent) -> None:
        del event
        colours = status_colors(self.palette())
        border = getattr(colours, self._look, colours.muted)
        paint_panel(self, border, tint(border, TINT_ALPHA), 4, stripe=STRIPE)

    def _paint(self, status: str) -> None:
        self._look = status
        set_status(self.sentence, status)
        self.update()


def _processes(count: int) -> str:
    return f"{count:,} process{'' if count == 1 else 'es'}"
