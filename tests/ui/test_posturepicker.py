"""The posture picker: checking state, default choice, DANGER text, confirmation for local."""

from collections.abc import Callable
from dataclasses import replace

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QLabel, QMessageBox

from workbench.errors import PostureError
from workbench.postures import PostureId
from workbench.ui.mainwindow import MainWindow
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
    assert picker.chosen() is PostureId.HARDENED
    assert picker.card(PostureId.HARDENED).radio.isChecked()
    docker = picker.card(PostureId.DOCKER)
    assert not docker.radio.isEnabled()
    assert docker.availability.text().startswith("Unavailable")


def test_local_card_shows_its_danger(window: MainWindow) -> None:
    card = window.postures.card(PostureId.LOCAL)
    danger = card.findChildren(QLabel)
    texts = [label.text() for label in danger if label.property("status") == "danger"]
    assert any(text.startswith("DANGER: NO SANDBOX") for text in texts)
    guarantees = [label.text() for label in card.details.findChildren(QLabel)]
    assert any(text.startswith("Does not isolate anything") for text in guarantees)


def test_local_needs_confirmation(window: MainWindow, qtbot) -> None:
    picker = window.postures
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
