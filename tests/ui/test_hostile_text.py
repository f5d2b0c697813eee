"""Hostile text in the window: bidi controls in a skill's name, description and file names
show as markers (`⟨U+202E⟩`), so "evil\\u202etxt.exe" cannot read as "evilexe.txt"."""

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTreeWidget

from tests.ui.conftest import Run
from workbench.ui.mainwindow import MainWindow
from workbench.ui.skills.files import FileBrowser

RLO = "\u202e"


def test_bidi_controls_in_a_skill_show_as_markers(
    window: MainWindow, extra_root: Path, write_skill: Callable[..., Path], run: Run
) -> None:
    front_matter = f'name: "sne{RLO}aky"\ndescription: "evil{RLO}txt.exe"'
    folder = write_skill(extra_root, "sneaky", front_matter)
    (folder / f"evil{RLO}txt.exe").write_text("x")
    run(window.reload_catalog())
    window.browser.select_path(folder)
    assert window.view._description.text() == "evil⟨U+202E⟩txt.exe"
    assert window.windowTitle().startswith("sne⟨U+202E⟩aky — ")
    browser = window.view.findChild(FileBrowser)
    assert browser is not None
    files = browser.findChild(QTreeWidget)
    assert files is not None
    [sneaky] = files.findItems("evil", Qt.MatchFlag.MatchStartsWith)
    assert sneaky.text(0) == "evil⟨U+202E⟩txt.exe"
    assert "evil⟨U+202E⟩txt.exe" in sneaky.toolTip(0) and RLO not in sneaky.toolTip(0)


def test_open_skill_folder_on_a_missing_path_says_it_does_not_exist(
    window: MainWindow, tmp_path: Path, run: Run
) -> None:
    missing = tmp_path / "nonexistent" / "skills"
    run(window.open_folders([missing]))
    assert window.message_bar.text() == f"There is no folder {missing}."
