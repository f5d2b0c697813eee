"""The posture picker: checking state, default choice, DANGER text, confirmation for local."""

from collections.abc import Callable
from dataclasses import replace

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QLabel, QMessageBox, QRadioButton

from tests.ui.conftest import PROBE
from workbench.errors import PostureError
from workbench.platform.paths import example_skills_dir
from workbench.postures.model import Availability, PostureId
from workbench.ui.mainwindow import MainWindow
from workbench.ui.postures.picker import CARD_ORDER
from workbench.ui.services import PostureProbe, Services


def test_cards_say_checking_until_the_probe_answers(make_window: Callable[[], MainWindow]) -> None:
    window = make_window()
    for posture_id in PostureId:
        card = window.postures.card(posture_id)
        assert card.availability.text() == "checking…"
        assert not card.radio.isEnabled()
    assert window.postures.chosen() is None


def test_strongest_available_posture_is_chosen(window: MainWindow) -> None:
    picker = window.postures
    window.browser.select_path(example_skills_dir() / "workspace-report")  # not a .js skill
    assert picker.chosen() is PostureId.HARDENED
    assert picker.card(PostureId.HARDENED).radio.isChecked()
    docker = picker.card(PostureId.DOCKER)
    assert not docker.radio.isEnabled()
    assert docker.availability.text().startswith("Unavailable")


def test_the_chosen_card_alone_is_framed_in_the_highlight_colour(window: MainWindow) -> None:
    picker = window.postures
    window.browser.select_path(example_skills_dir() / "workspace-report")
    highlight = window.palette().color(QPalette.ColorRole.Highlight)

    def edge(posture_id: PostureId) -> QColor:
        card = picker.card(posture_id)
        return card.grab().toImage().pixelColor(0, card.height() // 2)

    assert picker.card(PostureId.HARDENED).is_chosen()
    assert edge(PostureId.HARDENED) == highlight
    assert not picker.card(PostureId.LOCAL).is_chosen()
    assert edge(PostureId.LOCAL) != highlight


def test_local_card_shows_its_danger(window: MainWindow) -> None:
    card = window.postures.card(PostureId.LOCAL)
    danger = card.findChildren(QLabel)
    texts = [label.text() for label in danger if label.property("status") == "danger"]
    assert any(text.startswith("DANGER: NO SANDBOX") for text in texts)
    guarantees = [label.text() for label in card.details.findChildren(QLabel)]
    assert any(text.startswith("Does not isolate anything") for text in guarantees)


def test_local_needs_confirmation(window: MainWindow, qtbot) -> None:
    picker = window.postures
    window.browser.select_path(example_skills_dir() / "workspace-report")
    picker.choose(PostureId.LOCAL)
    box = picker.confirmation_box()
    assert box is not None and box.isVisible()
    assert "NO SANDBOX" in box.text()
    assert picker.chosen() is PostureId.HARDENED
    assert not picker.card(PostureId.LOCAL).radio.isChecked()

    box.button(QMessageBox.StandardButton.Cancel).click()
    qtbot.waitUntil(lambda: picker.confirmation_box() is None)
    assert picker.chosen() is PostureId.HARDENED

    picker.choose(PostureId.LOCAL)
    box = picker.confirmation_box()
    assert box is not None
    accept = next(
        b for b in box.buttons() if box.buttonRole(b) == QMessageBox.ButtonRole.AcceptRole
    )
    with qtbot.waitSignal(picker.posture_changed) as changed:
        accept.click()
    assert changed.args == [PostureId.LOCAL]
    assert picker.chosen() is PostureId.LOCAL
    assert picker.card(PostureId.LOCAL).radio.isChecked()
    assert "Local" in window.status_line.posture_label.text()


def test_a_failing_probe_is_shown_and_the_catalog_still_loads(
    services: Services, settings: QSettings, qtbot, run
) -> None:
    def broken_probe() -> PostureProbe:
        raise PostureError("The probe <b>broke</b>.")

    window = MainWindow(replace(services, probe_postures=broken_probe), settings)
    qtbot.addWidget(window)
    run(window.load())
    assert window.message_bar.text() == "The probe <b>broke</b>."
    assert window.browser.skills()
    assert window.postures.chosen() is None


def test_a_js_skill_gets_the_posture_that_can_run_it(window: MainWindow) -> None:
    picker = window.postures
    skill = window.browser.current_skill()
    assert skill is not None and skill.name == "csv-to-markdown"  # the first skill, at startup
    assert picker.chosen() is PostureId.QUICKJS
    assert "QuickJS worker" in window.run_panel.posture_label.text()
    assert picker._hint.text().startswith(
        "QuickJS worker chosen for csv-to-markdown: its command is a .js file"
    )
    hardened = picker.card(PostureId.HARDENED).unrunnable
    assert hardened.isVisibleTo(picker)
    assert hardened.text() == "Cannot run csv-to-markdown."  # why: in the hint, the tool tip
    assert "its command is a .js file" in hardened.toolTip()
    assert hardened.property("status") == "warning"
    assert not picker.card(PostureId.QUICKJS).unrunnable.isVisibleTo(picker)

    window.browser.select_path(example_skills_dir() / "workspace-report")
    assert picker.chosen() is PostureId.HARDENED
    assert picker._hint.text().startswith("Default: Hardened local")
    assert not hardened.isVisibleTo(picker)
    quickjs = picker.card(PostureId.QUICKJS).unrunnable
    assert quickjs.text() == "Cannot run workspace-report."
    assert "QuickJS runs only .js files, and the command runs python3" in quickjs.toolTip()


def test_a_posture_the_user_chose_stays_and_its_card_warns(window: MainWindow) -> None:
    picker = window.postures
    window.browser.select_path(example_skills_dir() / "workspace-report")
    picker.choose(PostureId.HARDENED)  # already the default, so nothing changes
    picker.choose(PostureId.QUICKJS)
    assert picker._hint.text().startswith("Your choice: QuickJS worker. Default: Hardened local")
    picker.choose(PostureId.HARDENED)
    window.browser.select_path(example_skills_dir() / "csv-to-markdown")
    assert picker.chosen() is PostureId.HARDENED
    warning = picker.card(PostureId.HARDENED).unrunnable
    assert warning.isVisibleTo(picker) and warning.property("status") == "danger"
    assert warning.text().startswith("Cannot run csv-to-markdown: its command is a .js file")


def test_a_chosen_posture_that_goes_away_leaves_the_choice_to_the_skill_again(
    window: MainWindow,
) -> None:
    picker = window.postures
    window.browser.select_path(example_skills_dir() / "workspace-report")
    picker.choose(PostureId.QUICKJS)
    gone = {**PROBE.availability, PostureId.QUICKJS: Availability(False, "Gone.")}
    picker.set_availability(gone)  # a second probe ("Check again")
    assert picker.chosen() is PostureId.HARDENED
    picker.set_availability(PROBE.availability)
    window.browser.select_path(example_skills_dir() / "csv-to-markdown")
    assert picker.chosen() is PostureId.QUICKJS  # fitted to the skill, not kept as a choice


def test_tab_lands_on_the_chosen_posture_and_arrows_choose(
    services: Services, settings: QSettings, qtbot, run
) -> None:
    every = {p: Availability(True, "Here.") for p in PostureId}
    probe = PostureProbe(availability=every, docker_runtimes=frozenset({"runc", "runsc"}))
    window = MainWindow(replace(services, probe_postures=lambda: probe), settings)
    qtbot.addWidget(window)
    window.show()
    run(window.load())
    picker = window.postures
    window.browser.select_path(example_skills_dir() / "workspace-report")
    picker.choose(PostureId.HARDENED)
    hardened = picker.card(PostureId.HARDENED).radio
    before = picker.card(CARD_ORDER[0]).radio.previousInFocusChain()  # just before the cards
    while before is not None and not (
        before.focusPolicy() & Qt.FocusPolicy.TabFocus and before.isVisible()
    ):
        before = before.previousInFocusChain()
    assert before is not None
    window.activateWindow()
    before.setFocus(Qt.FocusReason.TabFocusReason)
    for _ in range(20):
        qtbot.keyClick(window.focusWidget(), Qt.Key.Key_Tab)
        if isinstance(window.focusWidget(), QRadioButton):
            break
    assert window.focusWidget() is hardened  # not the first card's (unchecked) radio
    qtbot.keyClick(hardened, Qt.Key.Key_Down)
    assert picker.chosen() is PostureId.QUICKJS
    assert picker.card(PostureId.QUICKJS).radio.hasFocus()
    qtbot.keyClick(picker.card(PostureId.QUICKJS).radio, Qt.Key.Key_Up)
    assert picker.chosen() is PostureId.HARDENED
    qtbot.keyClick(hardened, Qt.Key.Key_Up)
    assert picker.chosen() is PostureId.BUBBLEWRAP
    qtbot.keyClick(picker.card(PostureId.BUBBLEWRAP).radio, Qt.Key.Key_Up)
    assert picker.chosen() is PostureId.DOCKER
    qtbot.keyClick(picker.card(PostureId.DOCKER).radio, Qt.Key.Key_Up)
    qtbot.keyClick(picker.card(PostureId.GVISOR).radio, Qt.Key.Key_Up)  # round to local:
    assert picker.confirmation_box() is not None  # it asks first
    assert picker.chosen() is PostureId.GVISOR
    run(window.shutdown())


def test_an_available_posture_says_so_once(window: MainWindow) -> None:
    card = window.postures.card(PostureId.HARDENED)
    assert card.availability.text() == "Available on this Linux machine."
    quickjs = window.postures.card(PostureId.QUICKJS)
    assert quickjs.availability.text() == "Available — The quickjs package is installed."
    docker = window.postures.card(PostureId.DOCKER)
    assert docker.availability.text() == "Unavailable — No engine."
