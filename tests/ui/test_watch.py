"""The skill watcher: edits in the skill folder and skills coming or going in a root are
reported once per burst, and a file replaced by an atomic save stays watched."""

import os
from collections.abc import Callable
from pathlib import Path

from workbench.ui.skills.watch import SkillWatcher, fingerprint

WriteSkill = Callable[..., Path]


def _watcher(root: Path, folder: Path | None) -> SkillWatcher:
    watcher = SkillWatcher()
    watcher.set_roots([root, root / "missing"])
    watcher.set_skill(folder)
    return watcher


def test_edits_in_the_skill_folder_are_reported_even_after_an_atomic_replace(
    qtbot, tmp_path: Path, write_skill: WriteSkill
) -> None:
    folder = write_skill(tmp_path, "demo", "name: demo\ndescription: D.")
    watcher = _watcher(tmp_path, folder)
    assert str(folder / "SKILL.md") in watcher.watched()
    assert str(tmp_path / "missing") not in watcher.watched()
    reports: list[Path] = []
    watcher.skill_changed.connect(reports.append)
    with qtbot.waitSignal(watcher.skill_changed, timeout=5000):
        with (folder / "SKILL.md").open("a", encoding="utf-8") as file:  # in place
            file.write("more\n")
        with (folder / "SKILL.md").open("a", encoding="utf-8") as file:
            file.write("and more\n")
    assert reports == [folder]  # one report for the burst
    replacement = folder / ".SKILL.md.tmp"
    replacement.write_text("---\nname: demo\ndescription: New.\n---\n", encoding="utf-8")
    with qtbot.waitSignal(watcher.skill_changed, timeout=5000):
        replacement.replace(folder / "SKILL.md")
    with qtbot.waitSignal(watcher.skill_changed, timeout=5000):
        (folder / "SKILL.md").write_text("after the replace\n", encoding="utf-8")


def test_a_new_skill_in_a_root_is_reported(qtbot, tmp_path: Path, write_skill: WriteSkill) -> None:
    watcher = _watcher(tmp_path, None)
    with qtbot.waitSignal(watcher.roots_changed, timeout=5000):
        write_skill(tmp_path, "new-one", "name: new-one\ndescription: N.")


def test_switching_skill_moves_the_watch(qtbot, tmp_path: Path, write_skill: WriteSkill) -> None:
    first = write_skill(tmp_path, "first", "name: first\ndescription: F.")
    second = write_skill(tmp_path, "second", "name: second\ndescription: S.")
    (second / "scripts").mkdir()
    watcher = _watcher(tmp_path, first)
    watcher.set_skill(second)
    watched = watcher.watched()
    assert str(second / "scripts") in watched and str(second / "SKILL.md") in watched
    assert not any(path.startswith(str(first)) for path in watched)


def test_fingerprint_tells_content_apart(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("aaaa", encoding="utf-8")
    before = fingerprint(path)
    stamp = path.stat().st_mtime_ns
    path.write_text("bbbb", encoding="utf-8")
    os.utime(path, ns=(stamp, stamp))  # same size, same time: only the hash differs
    assert before is not None and fingerprint(path) != before
    assert fingerprint(tmp_path / "missing") is None
