"""The Network tab of a finished run: every connection its command asked the allow-list proxy
for (bubblewrap with allowed hosts), allowed, refused or failed, with the bytes each way. Hosts
and details come from the command's requests and are shown as plain text."""

from PySide6.QtWidgets import QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from workbench.executors.types import NetworkAttempt, RunResult
from workbench.postures.model import PostureId
from workbench.ui.common.text import plural
from workbench.ui.common.widgets import plain_label
from workbench.ui.theme import status_colors

COLUMNS = ("Time", "Verdict", "Request", "Host", "Port", "Sent", "Received", "Detail")


class NetworkView(QWidget):
    """The network log of the last run."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.heading = plain_label("After a run: the connections it asked for.", self, wrap=True)
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setAccessibleName("Network log")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.heading)
        layout.addWidget(self.table, 1)

    def set_result(self, result: RunResult | None) -> None:
        """Show `result`'s network log (None: clear)."""
        log = result.network_log if result is not None else ()
        self.table.setRowCount(len(log))
        colours = status_colors(self.palette())
        for row, attempt in enumerate(log):
            for column, text in enumerate(_cells(attempt)):
                item = QTableWidgetItem(text)
                if column == 1:
                    item.setForeground(
                        colours.ok if attempt.verdict == "allowed" else colours.danger
                    )
                self.table.setItem(row, column, item)
        self.table.resizeColumnsToContents()
        self.heading.setText(_heading(result))


def _cells(attempt: NetworkAttempt) -> tuple[str, ...]:
    return (
        f"{attempt.t:.2f} s",
        attempt.verdict,
        attempt.method,
        attempt.host,
        str(attempt.port),
        f"{attempt.bytes_sent:,}",
        f"{attempt.bytes_received:,}",
        attempt.detail,
    )


def _heading(result: RunResult | None) -> str:
    if result is None:
        return "After a run: the connections it asked for."
    posture = result.card.posture
    if posture.id is not PostureId.BUBBLEWRAP:
        return "Only the bubblewrap posture logs connections (through its allow-list proxy)."
    if not posture.allow_hosts:
        return "Network off: the sandbox had only its own loopback, so nothing could be asked."
    allowed = sum(1 for attempt in result.network_log if attempt.verdict == "allowed")
    return (
        f"{plural(len(result.network_log), 'connection')} asked for through the proxy, "
        f"{allowed} allowed. Allowed hosts: {', '.join(posture.allow_hosts)}."
    )
