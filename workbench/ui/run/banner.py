"""The outcome banner: how the last run ended, in one sentence, with its numbers and warnings.

The sentence names the status and the cause the executor gave ("Stopped: memory limit
256 MiB (RLIMIT_AS)", "Timed out: wall-clock timeout of 5 s"); the banner is coloured by
status (ok, danger for a run a control ended, warning for a plain failure). Below it: wall
time, CPU seconds, peak memory and processes (or that the host cannot count them, as under
gVisor), what was left running, and the run's posture warnings. Every text is plain (causes
can quote the command's own output).
"""

from PySide6.QtWidgets import QFrame, QVBoxLayout, QWidget

from workbench.executors.types import RunResult, RunStatus
from workbench.ui.common.text import format_size
from workbench.ui.common.widgets import plain_label, set_status
from workbench.ui.theme import status_colors

LEADS = {
    RunStatus.OK: "Finished",
    RunStatus.FAILED: "Failed",
    RunStatus.TIMED_OUT: "Timed out",
    RunStatus.CANCELLED: "Cancelled",
    RunStatus.OOM_KILLED: "Stopped",
    RunStatus.LIMIT_EXCEEDED: "Stopped",
    RunStatus.ERROR: "Could not run",
}
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


class OutcomeBanner(QFrame):
    """The state of the current or last run, coloured by its status."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("outcomeBanner")
        self.sentence = plain_label("No run yet.", self, wrap=True)
        font = self.sentence.font()
        font.setBold(True)
        self.sentence.setFont(font)
        self.details = plain_label("", self, wrap=True)
        self.warnings = plain_label("", self, wrap=True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 5, 8, 5)
        layout.setSpacing(2)
        layout.addWidget(self.sentence)
        layout.addWidget(self.details)
        layout.addWidget(self.warnings)
        self.show_message("No run yet.", "muted")

    def show_message(self, text: str, status: str, details: str = "") -> None:
        """A sentence that is not a run's result ("Running…", "Not run: …")."""
        self.sentence.setText(text)
        self.details.setText(details)
        self.details.setVisible(bool(details))
        self.warnings.hide()
        self._paint(status)

    def show_result(self, result: RunResult) -> None:
        """How `result` ended, its numbers, and its posture warnings."""
        self.sentence.setText(outcome_sentence(result))
        self.details.setText(details_line(result))
        self.details.show()
        leftover = result.leftover_processes > 0
        set_status(self.details, "danger" if leftover else "")
        texts = [w.text for w in result.warnings if w.severity != "info"]
        self.warnings.setText("⚠ " + "  ·  ".join(texts) if texts else "")
        self.warnings.setVisible(bool(texts))
        set_status(self.warnings, "warning")
        self._paint(STATUS_LOOK.get(result.status, "danger"))

    def status(self) -> str:
        """The look of the banner now: `ok`, `warning`, `danger` or `muted`."""
        return str(self.property("status"))

    def _paint(self, status: str) -> None:
        self.setProperty("status", status)
        set_status(self.sentence, status)
        colours = status_colors(self.palette())
        colour = {
            "ok": colours.ok,
            "warning": colours.warning,
            "danger": colours.danger,
        }.get(status, colours.muted)
        name, rgb = colour.name(), f"{colour.red()}, {colour.green()}, {colour.blue()}"
        self.setStyleSheet(
            f"QFrame#outcomeBanner {{ border: 1px solid {name}; border-left: 5px solid {name}; "
            f"border-radius: 4px; background: rgba({rgb}, 28); }}"
        )


def _processes(count: int) -> str:
    return f"{count:,} process{'' if count == 1 else 'es'}"
