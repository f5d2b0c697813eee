"""The main window's permanent status-bar labels: the default posture, the skill count and the
Docker engine, each with its state colour."""

from collections.abc import Iterable

from PySide6.QtWidgets import QStatusBar

from workbench.postures import POSTURE_INFO, PostureId
from workbench.skills import Skill
from workbench.ui.text import plural, tooltip
from workbench.ui.widgets import plain_label, set_status


class StatusLine:
    """Adds the three labels to `bar` and keeps them current."""

    def __init__(self, bar: QStatusBar) -> None:
        self.posture_label = plain_label("Posture: checking…", bar)
        self.count_label = plain_label("Loading skills…", bar)
        self.engine_label = plain_label("Docker: checking…", bar)
        bar.setSizeGripEnabled(False)  # window managers give a resize border
        for label in (self.posture_label, self.count_label, self.engine_label):
            bar.addPermanentWidget(label)

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

    def show_engine(self, runtimes: frozenset[str] | None) -> None:
        """Whether a Docker engine answered (`None`: it did not), and its runtimes."""
        if runtimes is None:
            self.engine_label.setText("Docker engine: not reachable")
            self.engine_label.setToolTip("The docker and gvisor postures need a Docker engine.")
            set_status(self.engine_label, "muted")
            return
        gvisor = " · gVisor" if "runsc" in runtimes else ""
        self.engine_label.setText(f"Docker engine: reachable{gvisor}")
        names = ", ".join(sorted(runtimes)) or "none"
        self.engine_label.setToolTip(tooltip(f"Engine runtimes: {names}"))
        set_status(self.engine_label, "ok")
