"""The main window's permanent status-bar labels: the default posture, the skill count and the
Docker engine, each with its state colour, and the "Check again" button that asks the engine
anew (after starting dockerd, say)."""

import contextlib
from collections.abc import Iterable

from PySide6.QtWidgets import QStatusBar, QToolButton

from workbench.errors import PostureError
from workbench.postures.description import POSTURE_INFO, default_reason
from workbench.postures.model import PostureId
from workbench.skills import Skill
from workbench.ui.common.text import plural, tooltip
from workbench.ui.common.widgets import plain_label, set_status
from workbench.ui.services import PostureProbe

STATUS_PADDING = 6  # pixels either side of each label


class StatusLine:
    """Adds the labels and the button to `bar` and keeps them current."""

    def __init__(self, bar: QStatusBar) -> None:
        self.posture_label = plain_label("Posture: checking…", bar)
        self.count_label = plain_label("Loading skills…", bar)
        self.engine_label = plain_label("Docker engine: checking…", bar)
        self.check_again = QToolButton(bar)
        self.check_again.setText("Check again")
        self.check_again.setAutoRaise(True)
        self.check_again.setToolTip("Ask the Docker engine again whether it answers")
        self.check_again.setEnabled(False)
        bar.setSizeGripEnabled(False)  # window managers give a resize border
        for label in (self.posture_label, self.count_label, self.engine_label):
            label.setContentsMargins(STATUS_PADDING, 0, STATUS_PADDING, 0)
        for widget in (self.posture_label, self.count_label, self.engine_label, self.check_again):
            bar.addPermanentWidget(widget)

    def show_posture(self, posture_id: PostureId) -> None:
        """The posture the next run uses; `local` in the danger colour."""
        self.posture_label.setText(f"Posture: {POSTURE_INFO[posture_id].title}")
        set_status(self.posture_label, "danger" if posture_id is PostureId.LOCAL else "")

    def show_skills(self, skills: Iterable[Skill]) -> None:
        """How many skills the browser lists, and how many of them have errors."""
        listed = list(skills)
        broken = sum(1 for skill in listed if not skill.usable)
        text = plural(len(listed), "skill")
        self.count_label.setText(f"{text} ({broken} with errors)" if broken else text)

    def show_engine_checking(self) -> None:
        """The engine is being asked; "Check again" waits for the answer."""
        self.engine_label.setText("Docker engine: checking…")
        set_status(self.engine_label, "muted")
        self.check_again.setEnabled(False)

    def show_engine(self, probe: PostureProbe) -> None:
        """Whether a Docker engine answered, and its runtimes or why it did not; the posture's
        tooltip says why the default is the one it is."""
        self.check_again.setEnabled(True)
        with contextlib.suppress(PostureError):
            self.posture_label.setToolTip(tooltip(default_reason(probe.availability)))
        runtimes = probe.docker_runtimes
        if runtimes is None:
            self.engine_label.setText("Docker engine: not reachable")
            reason = probe.availability[PostureId.DOCKER].reason
            self.engine_label.setToolTip(
                tooltip(f"{reason}\nThe docker and gvisor postures need a Docker engine.")
            )
            set_status(self.engine_label, "muted")
            return
        gvisor = " · gVisor" if "runsc" in runtimes else ""
        self.engine_label.setText(f"Docker engine: reachable{gvisor}")
        names = ", ".join(sorted(runtimes)) or "none"
        self.engine_label.setToolTip(tooltip(f"Engine runtimes: {names}"))
        set_status(self.engine_label, "ok")
