"""`workbench gui` refuses options it would otherwise ignore, before it loads Qt."""

from pathlib import Path

import pytest

from tests.e2e.test_cli_skills import workbench


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--view", "history"], "error: --view belongs to a screenshot scene: give --run SKILL "),
        (["--posture", "local", "--show", "card"], "error: --posture, --show belong to a "),
        (["--run", "runaway"], "error: --run stages a screenshot: give --screenshot FILE too."),
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
