"""The New Skill dialog: the validator's own message as the name is typed, Create only when
it passes, and the request it sends; the roots it offers."""

from pathlib import Path

from workbench.platform.paths import example_skills_dir
from workbench.ui.authoring.newskill import NewSkillDialog
from workbench.ui.mainwindow import MainWindow


def test_the_name_is_checked_as_it_is_typed(qtbot, tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    dialog = NewSkillDialog([tmp_path])
    qtbot.addWidget(dialog)
    assert dialog.problems.text() == ""  # nothing typed yet: no scolding
    assert not dialog.create_button.isEnabled()
    qtbot.keyClicks(dialog.name, "My_Skill")
    qtbot.keyClicks(dialog.description, "Does <b>things</b>.")
    assert "has capital letters" in dialog.problems.text()
    assert not dialog.create_button.isEnabled()
    dialog.name.setText("taken")
    assert "already exists" in dialog.problems.text()
    dialog.name.setText("my-skill")
    assert dialog.problems.text() == ""
    assert dialog.create_button.isEnabled()

    dialog.folders["references"].setChecked(True)
    with qtbot.waitSignal(dialog.create_requested) as request:
        dialog.create_button.click()
    assert request.args == [
        tmp_path,
        "my-skill",
        "Does <b>things</b>.",
        frozenset({"scripts", "references"}),
    ]


def test_a_description_is_required(qtbot, tmp_path: Path) -> None:
    dialog = NewSkillDialog([tmp_path])
    qtbot.addWidget(dialog)
    dialog.name.setText("fine-name")
    assert "description" in dialog.problems.text().lower()
    assert not dialog.create_button.isEnabled()


def test_without_a_root_the_user_must_choose_one(qtbot, tmp_path: Path) -> None:
    dialog = NewSkillDialog([])
    qtbot.addWidget(dialog)
    dialog.name.setText("fine-name")
    dialog.description.setText("Fine.")
    assert "Choose a folder" in dialog.problems.text()
    dialog.add_root(tmp_path)
    assert dialog.chosen_root() == tmp_path and dialog.create_button.isEnabled()


def test_new_skills_never_go_into_the_bundled_examples(window: MainWindow, extra_root: Path):
    roots = window.authoring.writable_roots()
    assert extra_root in roots
    assert example_skills_dir() not in roots
