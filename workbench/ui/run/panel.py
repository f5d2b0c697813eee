"""The run panel: run the selected skill's command under the chosen posture and watch it.

`RunPanel` holds the command field (the skill's suggested command and its history), the limits
(`LimitControls`) and workspace (`WorkspaceChoice`); Run (Ctrl+Return) runs the command through the
run service with the skill's built environment for the posture (looked up before each run; a
missing or out-of-date one is said in the banner), and while it runs the panel shows the
countdown, live output (`OutputView`), the process tree (`ProcessTreeView`) and charts, then the
outcome banner, the workspace changes with Restore and the effective posture card, under a line
naming the run they belong to; the banner's re-run button runs the command again with a failed
run's suggested change (`rerun`). Stop is Ctrl+.; nothing here blocks the event loop.
"""

import asyncio
import shlex
import time
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QSettings, QStringListModel, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCompleter,
    QHBoxLayout,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.environments.resolve import for_run
from workbench.errors import UsageError, WorkbenchError
from workbench.executors.types import CancelToken, new_run_id
from workbench.monitor.sample import ResourceSample
from workbench.postures.description import POSTURE_INFO
from workbench.postures.model import Posture, PostureId
from workbench.runs.diagnosis import Change
from workbench.runs.service import CompletedRun, RunPlan, RunService
from workbench.skills import Skill
from workbench.ui.common.tasks import Tasks
from workbench.ui.common.widgets import (
    LiveLabel,
    ask,
    plain_label,
    remember_sizes,
    set_status,
)
from workbench.ui.run.banner import OutcomeBanner
from workbench.ui.run.card import CardView
from workbench.ui.run.changes import ChangesView
from workbench.ui.run.charts import ResourceCharts
from workbench.ui.run.controls import (
    CommandHistory,
    LimitControls,
    WorkspaceChoice,
    warning_text,
)
from workbench.ui.run.network import NetworkView
from workbench.ui.run.output import OutputView
from workbench.ui.run.processes import ProcessTreeView

COUNTDOWN_MS = 200
COMMAND_HINT = "Command to run in the workspace (sh -c)"
OUTPUT_TAB, CHANGES_TAB, CARD_TAB, NETWORK_TAB = range(4)


class RunPanel(QWidget):
    """Command and limits, Run/Stop with a countdown, and everything a run shows.

    Signals:
        run_finished(object): the `CompletedRun` of a run that ended (any status).
        run_refused(str): why a run could not start (its engine did not answer, say).
    """

    run_finished = Signal(object)
    run_refused = Signal(str)

    def __init__(
        self, service: RunService, settings: QSettings, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._service = service
        self._history = CommandHistory(settings)
        self._skill: Skill | None = None
        self._posture: PostureId | None = None
        self._cancel: CancelToken | None = None
        self.tasks = Tasks(self)  # the run in progress
        self._started = 0.0
        self._timeout = 0.0
        self._browse = -1  # position in the command history while browsing with Up/Down
        self.last_run: CompletedRun | None = None
        self._question: QMessageBox | None = None
        self._last_request: tuple[Skill, Posture, str, Path | None] | None = None
        self._run_of: Skill | None = None  # the skill of the run the results below belong to
        self._run_words = ""  # that run's skill, posture, time and workspace
        self._countdown_timer = QTimer(self)
        self._countdown_timer.setInterval(COUNTDOWN_MS)

        self.posture_label = plain_label("No posture", self)
        self.posture_label.setToolTip("The posture the next run uses (choose it on the right)")
        self.command = QLineEdit(self)
        self.command.setPlaceholderText(COMMAND_HINT)
        self.command.setAccessibleName("Command")
        self.command.setToolTip("Up and Down go through the commands run before for this skill")
        self._recent = QStringListModel(self)
        self._completer = QCompleter(self._recent, self)
        self._completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self._completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.command.setCompleter(self._completer)
        self.run_button = QPushButton("Run", self)
        self.run_button.setToolTip("Run the command (Ctrl+Return)")
        self.stop_button = QPushButton("Stop", self)
        self.stop_button.setToolTip("Stop the run and everything it started (Ctrl+.)")
        self.countdown = LiveLabel("", self)
        self.countdown.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.limits = LimitControls(self)
        self.workspace = WorkspaceChoice(settings, self)
        self.loosened = plain_label("", self, wrap=True)
        self.run_title = plain_label("", self, wrap=True)
        self.run_title.setAccessibleName("Run shown below")
        self.banner = OutcomeBanner(self)
        self.output = OutputView(self)
        self.changes = ChangesView(service, self)
        self.card_view = CardView(self)
        self.network = NetworkView(self)
        self.charts = ResourceCharts(self)
        self.processes = ProcessTreeView(self)
        self.tabs = QTabWidget(self)
        self.watched = QSplitter(Qt.Orientation.Vertical, self)
        self.watched.setChildrenCollapsible(False)
        self.watched.addWidget(self.output)
        self.watched.addWidget(self.processes)
        self.watched.setStretchFactor(0, 3)
        self.watched.setStretchFactor(1, 1)
        self.watched.setSizes([300, 100])
        self.live = QSplitter(Qt.Orientation.Horizontal, self)
        self.live.setChildrenCollapsible(False)
        self.live.addWidget(self.watched)
        self.live.addWidget(self.charts)
        self.live.setStretchFactor(0, 3)
        self.live.setStretchFactor(1, 1)
        self.live.setSizes([520, 200])
        remember_sizes(self.watched, settings, "run/outputSplitter")
        remember_sizes(self.live, settings, "run/chartsSplitter")
        self.tabs.addTab(self.live, "Output and resources")
        self.tabs.addTab(self.changes, "Workspace changes")
        self.tabs.addTab(self.card_view, "Posture card")
        self.tabs.addTab(self.network, "Network")
        self.tabs.setAccessibleName("Run details")
        self._run_shortcut = QShortcut(QKeySequence("Ctrl+Return"), self)
        self._stop_shortcut = QShortcut(QKeySequence("Ctrl+."), self)
        self._up = QShortcut(QKeySequence(Qt.Key.Key_Up), self.command)
        self._down = QShortcut(QKeySequence(Qt.Key.Key_Down), self.command)
        for shortcut in (self._up, self._down):
            shortcut.setContext(Qt.ShortcutContext.WidgetShortcut)

        controls = QHBoxLayout()
        controls.setSpacing(6)
        controls.addWidget(self.posture_label)
        controls.addWidget(self.command, 1)
        controls.addWidget(self.run_button)
        controls.addWidget(self.stop_button)
        workspace_row = QHBoxLayout()
        workspace_row.addWidget(plain_label("Workspace:", self))
        workspace_row.addWidget(self.workspace)
        workspace_row.addStretch(1)
        workspace_row.addWidget(self.countdown)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 6, 0, 0)
        layout.setSpacing(6)
        layout.addLayout(controls)
        layout.addWidget(self.limits)
        layout.addLayout(workspace_row)
        layout.addWidget(self.loosened)
        layout.addWidget(self.run_title)
        layout.addWidget(self.banner)
        layout.addWidget(self.tabs, 1)
        self.loosened.hide()
        self.run_title.hide()
        self._connect_signals()
        self._update_buttons()

    def _connect_signals(self) -> None:
        self.run_button.clicked.connect(self.on_run_button_clicked)
        self.stop_button.clicked.connect(self.on_stop_button_clicked)
        self._run_shortcut.activated.connect(self.on_run_button_clicked)
        self._stop_shortcut.activated.connect(self.on_stop_button_clicked)
        self._up.activated.connect(self.on_up_activated)
        self._down.activated.connect(self.on_down_activated)
        self.command.returnPressed.connect(self.on_run_button_clicked)
        self.command.textChanged.connect(self._update_buttons)
        self.limits.changed.connect(self.on_limits_changed)
        self.banner.rerun_requested.connect(self.on_banner_rerun_requested)
        self._countdown_timer.timeout.connect(self.on_countdown_timer_timeout)
        self.tasks.busy_changed.connect(self.on_tasks_busy_changed)
        self.changes.tasks.failed.connect(self.tasks.failed)

    # Public API -------------------------------------------------------------------------

    def set_skill(self, skill: Skill | None) -> None:
        """Run commands of `skill` from now on; the command field takes its suggestion (and is
        emptied when no skill is selected)."""
        if skill is None:
            self.command.clear()
            self.command.setPlaceholderText("Select a skill to run its command")
        elif self._skill is None or skill.path != self._skill.path:
            self.command.setText(skill.command or "")
            self.command.setCursorPosition(0)  # show the start of a long command
            self.command.setPlaceholderText(
                COMMAND_HINT
                if skill.command
                else "This skill suggests no command: type one to run in the workspace (sh -c)"
            )
        self._skill = skill
        self._browse = -1
        self._recent.setStringList(self._commands())
        self.workspace.set_skill(skill.name if skill is not None else None)
        self._update_run_title()
        self._update_buttons()

    def set_posture(self, posture_id: PostureId | None) -> None:
        """Run under `posture_id` from the next run on."""
        self._posture = posture_id
        title = POSTURE_INFO[posture_id].title if posture_id is not None else "No posture"
        self.posture_label.setText(f"{title}:")
        set_status(self.posture_label, "danger" if posture_id is PostureId.LOCAL else "")
        self.limits.set_posture(posture_id)
        self._update_buttons()

    def is_running(self) -> bool:
        """Whether a run is in progress."""
        return self.tasks.busy()

    def start(self) -> "asyncio.Task[None] | None":
        """Start running the command (what Run does); None when nothing can run now, or when
        the user is first asked whether the skill may change files in the chosen folder (the
        run starts on yes)."""
        skill, posture_id = self._skill, self._posture
        if not self.run_button.isEnabled() or skill is None or posture_id is None:
            return None
        folder = self.workspace.folder()
        if folder is not None and not self.workspace.is_confirmed(folder):
            self.workspace.ask(folder, self.start)
            return None
        return self._start(
            skill, self.limits.posture(posture_id), self.command.text().strip(), folder
        )

    def rerun(self, change: Change) -> "asyncio.Task[None] | None":
        """Run the last run's command again with `change` (another posture, the network, a
        bigger limit), in the same folder, linked to it; None when there is nothing to re-run
        or a run is in progress. A change to local asks first; the run starts on yes."""
        last, request = self.last_run, self._last_request
        if last is None or request is None or self.is_running():
            return None
        skill, posture, text, folder = request
        rerun_of = last.record.run_id
        again = change.apply(posture)
        if again.id is not PostureId.LOCAL or posture.id is PostureId.LOCAL:
            return self._start(skill, again, text, folder, rerun_of)
        if self._question is None:
            self._question = ask(
                self,
                "Re-run without a sandbox?",
                "The local posture runs the command as you, with NO SANDBOX: it can read, "
                "change and delete any of your files, reach the network and read every secret "
                "in your environment.",
                "Re-run locally — no sandbox",
                lambda: self._start(skill, again, text, folder, rerun_of),
            )
            self._question.finished.connect(self.on_question_finished)
        return None

    def question(self) -> QMessageBox | None:
        """The open question (a re-run without a sandbox), if one is open."""
        return self._question

    def _start(
        self,
        skill: Skill,
        posture: Posture,
        text: str,
        folder: Path | None,
        rerun_of: str | None = None,
    ) -> "asyncio.Task[None]":
        self._cancel = CancelToken()
        self._last_request = (skill, posture, text, folder)
        task = self.tasks.spawn(self._run(skill, posture, text, folder, self._cancel, rerun_of))
        self._update_buttons()
        return task

    def stop(self) -> None:
        """Stop the run in progress (the executor kills everything it started)."""
        if self._cancel is not None and not self._cancel.cancelled:
            self._cancel.cancel()
            self.banner.show_message("Stopping: killing the command and all it started…", "muted")

    async def shutdown(self, grace_s: float = 15.0) -> None:
        """Stop the run in progress and wait (at most `grace_s`, then cancel it) until it has
        been cleaned up."""
        self.stop()
        await self.tasks.close(grace_s)
        await self.changes.settle()

    # Slots ------------------------------------------------------------------------------

    def on_run_button_clicked(self) -> None:
        self.start()

    def on_stop_button_clicked(self) -> None:
        self.stop()

    def on_up_activated(self) -> None:
        self._step_history(+1)

    def on_down_activated(self) -> None:
        self._step_history(-1)

    def on_banner_rerun_requested(self, change: Change) -> None:
        self.rerun(change)

    def on_question_finished(self, _result: int) -> None:
        self._question = None

    def on_limits_changed(self) -> None:
        text, status = warning_text(self.limits.loosened())
        self.loosened.setText(text)
        set_status(self.loosened, status)
        self.loosened.setVisible(bool(text))

    def on_tasks_busy_changed(self, running: bool) -> None:
        if not running:
            self._cancel = None
            self._update_run_title()
            self._update_buttons()

    def on_countdown_timer_timeout(self) -> None:
        elapsed = time.monotonic() - self._started
        left = max(0.0, self._timeout - elapsed)
        self.countdown.setText(f"{elapsed:.1f} s · timeout in {left:.0f} s")
        set_status(self.countdown, "warning" if left <= min(10.0, self._timeout / 4) else "")

    # Internals --------------------------------------------------------------------------

    async def _run(
        self,
        skill: Skill,
        posture: Posture,
        text: str,
        folder: Path | None,
        cancel: CancelToken,
        rerun_of: str | None,
    ) -> None:
        self._show_run_title(skill, posture, folder)
        self._history.remember(skill.name, text)
        self._recent.setStringList(self._commands())
        self.output.begin()
        limited = posture.id is not PostureId.LOCAL
        self.charts.reset(posture.limits.memory_bytes if limited else None)
        self.processes.reset()
        self.card_view.set_card(None)
        self.network.set_result(None)
        self.tabs.setTabText(NETWORK_TAB, "Network")
        self.tabs.setTabText(CHANGES_TAB, "Workspace changes")
        self.tabs.setCurrentIndex(OUTPUT_TAB)
        self.banner.show_message(
            f"Running under {POSTURE_INFO[posture.id].title}… (Stop or Ctrl+. ends it and all "
            "it started)",
            "muted",
        )
        self._started, self._timeout = time.monotonic(), posture.limits.timeout_s
        self._countdown_timer.start()
        self.on_countdown_timer_timeout()
        try:
            plan = _plan(skill, posture, text, folder, self._service, rerun_of)
            plan = await self._with_environment(plan, skill)
            await self.changes.watch(plan.workspace)
            done = await self._service.run_once(
                plan, self.output.append, cancel, self._add_sample, self._show_progress
            )
        except WorkbenchError as error:
            self.banner.show_message(f"Not run: {error}", "danger")
            self.run_refused.emit(str(error))
            self.changes.set_run(None, "No changes: the run did not take place.")
        else:
            self._show_result(done)
            self.run_finished.emit(done)
        finally:
            self.changes.stop_watching()
            self._countdown_timer.stop()
            self.countdown.restart("")
            self.output.finish()

    async def _with_environment(self, plan: RunPlan, skill: Skill) -> RunPlan:
        """`plan` with the skill's built environment for its posture; what is missing or out
        of date is said in the banner while the run goes on."""
        store = self._service.layout.environment_store()
        try:
            found, warning = await asyncio.to_thread(for_run, skill, plan.posture, store)
        except WorkbenchError as error:
            found, warning = None, f"running without the skill's environment: {error}"
        if warning:
            self.banner.show_message(self.banner.sentence.text(), "muted", warning)
        return replace(plan, environment=found.for_run() if found else None)

    def _show_result(self, done: CompletedRun) -> None:
        result = done.result
        self.last_run = done
        diagnosis = done.record.diagnosis
        self.banner.show_result(result, diagnosis)
        self.output.highlight(None if diagnosis is None else diagnosis.evidence)
        self.charts.set_peaks(result.peak_rss_bytes, result.peak_processes)
        self.processes.finish(result)
        self.output.set_logs(result.stdout.log_path, result.stderr.log_path)
        self.changes.set_run(done)
        self.card_view.set_card(result.card)
        self.network.set_result(result)
        self.tabs.setTabText(NETWORK_TAB, f"Network ({len(result.network_log)})")
        self.tabs.setTabText(CHANGES_TAB, f"Workspace changes ({len(result.changes)})")

    def _show_progress(self, text: str) -> None:
        """What the run does around the command (copying the workspace to a remote engine)."""
        self.banner.show_message(f"{text}… (Stop or Ctrl+. ends the run)", "muted")

    def _add_sample(self, sample: ResourceSample) -> None:
        self.charts.add_sample(sample)
        self.processes.add_sample(sample)

    def _show_run_title(self, skill: Skill, posture: Posture, folder: Path | None) -> None:
        where = f"in {folder}" if folder is not None else "in a fresh folder"
        started = time.strftime("%H:%M:%S")
        self._run_of = skill
        self._run_words = f"{skill.name} · {POSTURE_INFO[posture.id].title} · {started} · {where}"
        self._update_run_title()

    def _update_run_title(self) -> None:
        """Name the run the results below belong to; flag it when another skill is selected."""
        run_of = self._run_of
        self.run_title.setVisible(run_of is not None)
        if run_of is None:
            return
        lead = "Running" if self.is_running() else "Last run"
        other = self._skill is None or self._skill.path != run_of.path
        suffix = " · not the selected skill" if other else ""
        self.run_title.setText(f"{lead}: {self._run_words}{suffix}")
        set_status(self.run_title, "warning" if other else "muted")

    def _update_buttons(self) -> None:
        running = self.tasks.busy()
        ready = self._skill is not None and self._posture is not None
        self.run_button.setEnabled(not running and ready and bool(self.command.text().strip()))
        self.stop_button.setEnabled(running)
        self.command.setReadOnly(running)
        self.limits.set_running(running)
        self.workspace.setEnabled(not running)

    def _commands(self) -> list[str]:
        return self._history.commands(self._skill.name) if self._skill is not None else []

    def _step_history(self, step: int) -> None:
        commands = self._commands()
        if self.is_running() or not commands:
            return
        self._browse = max(-1, min(len(commands) - 1, self._browse + step))
        suggested = self._skill.command if self._skill is not None else ""
        self.command.setText(commands[self._browse] if self._browse >= 0 else suggested or "")


def _plan(
    skill: Skill,
    posture: Posture,
    text: str,
    folder: Path | None,
    service: RunService,
    rerun_of: str | None,
) -> RunPlan:
    if posture.id is PostureId.QUICKJS:
        try:
            argv = tuple(shlex.split(text))
        except ValueError as error:
            message = f"Cannot split the command into a script and arguments: {error}."
            raise UsageError(message) from None
    else:
        argv = ("sh", "-c", text)
    if folder is not None and not folder.is_dir():
        raise UsageError(
            f"The workspace folder {folder} is gone; choose another or a fresh folder."
        )
    run_id = new_run_id()
    workspace = folder if folder is not None else service.layout.fresh_workspace(run_id)
    return RunPlan(
        skill.name, skill.path, posture, argv, workspace, run_id=run_id, rerun_of=rerun_of
    )
