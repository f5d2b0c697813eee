"""`workbench gui` refuses options it would otherwise ignore, before it loads Qt."""

from pathlib import Path

import pytest

from tests.e2e.test_cli_skills import workbench


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--during", "1"], "error: --during shoots into a run: give --run too."),
        (["--skill", "runaway", "--run"], "error: --run stages a screenshot: give --skill SKILL"),
        (["--run", "--screenshot", "x.png"], "error: --run stages a screenshot: give --skill "),
        (["--skill", "./no/such/skill"], "error: --skill: there is no folder ./no/such/skill"),
        (["--tab", "nope"], "error: workbench gui: argument --tab: invalid choice: 'nope'"),
        (["--skills", "/nonexistent/skills"], "error: --skills: there is no folder /nonexistent"),
    ],
)
def test_options_that_would_be_ignored_are_usage_errors(args: list[str], message: str) -> None:
    done = workbench("gui", *args)
    assert done.returncode == 2
    assert done.stderr.startswith(message), done.stderr


def test_a_skills_folder_that_exists_is_accepted_with_a_screenshot(tmp_path: Path) -> None:
    done = workbench("gui", "--skills", str(tmp_path), "--screenshot", str(tmp_path / "s.png"))
    assert done.returncode == 0, done.stderr


def test_the_window_opens_on_a_skill_folder_page_and_tab(tmp_path: Path) -> None:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: outside\ndescription: Far away.\n---\n# Hi\n")
    shot = tmp_path / "s.png"
    done = workbench(
        "gui", "--skill", str(folder), "--tab", "files", "--screenshot", str(shot), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
