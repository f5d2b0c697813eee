"""The skill's Environment tab: the proposal from its imports, an edit, Build with real packages
from PyPI, the state after it, and Reset; QuickJS has none. Looked at 1280x800 too."""

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.ui.conftest import Run
from workbench.environments.resolve import EnvState
from workbench.environments.store import EnvironmentStore
from workbench.postures.model import Posture, PostureId
from workbench.ui.mainwindow import MainWindow
from workbench.ui.services import Services
from workbench.workspace.safe_walk import remove_tree


@pytest.fixture
def environments(services: Services) -> Iterator[Path]:
    """The window's environments folder, removed after the test (as root it is in /var/tmp)."""
    root = services.runs.layout.environments
    yield root
    remove_tree(root)


async def settled(window: MainWindow, state: EnvState | None = None) -> None:
    """Wait until the panel shows a state (`state`, when given); the caller's timeout bounds it."""
    panel = window.view.environment
    for _ in range(1000):
        found = panel.status()
        if found is not None and (state is None or found.state is state):
            return
        await asyncio.sleep(0.05)


def shown_with_script(
    make_window: Callable[[], MainWindow], run: Run, folder: Path, script: str
) -> MainWindow:
    """A window on the skill at `folder` (given `scripts/use.py`), its Environment tab shown for
    hardened and settled."""
    (folder / "scripts").mkdir()
    (folder / "scripts" / "use.py").write_text(script)
    window = make_window()
    run(window.load())
    assert window.browser.select_path(folder)
    window.view.tabs().setCurrentWidget(window.view.environment)
    window.view.environment.set_posture(Posture(PostureId.HARDENED))
    run(settled(window))
    return window


def test_the_panel_proposes_builds_an_edit_and_resets(
    make_window: Callable[[], MainWindow],
    extra_root: Path,
    write_skill: Callable[..., Path],
    run: Run,
    environments: Path,
    tmp_path: Path,
) -> None:
    folder = write_skill(extra_root, "needs-six", "name: needs-six\ndescription: Uses six.")
    script = "import six\nimport yaml  # <b>markup</b>\n"
    window = shown_with_script(make_window, run, folder, script)
    panel = window.view.environment
    found = panel.status()
    assert found is not None and found.state is EnvState.MISSING
    assert panel.python.toPlainText() == "PyYAML\nsix"
    assert not panel.reset_button.isEnabled()
    panel.python.setPlainText("six==1.16.0\n")
    panel.build_button.click()
    run(settled(window, EnvState.BUILT))
    built = panel.status()
    assert built is not None and built.edited
    assert built.environment is not None
    assert built.environment.installed == ("six 1.16.0",)
    assert panel.progress.value() == panel.progress.maximum()
    assert "six 1.16.0" in panel.message.text()
    assert EnvironmentStore(environments).skill_record(folder)["python"] == ["six==1.16.0"]
    window.resize(1280, 800)
    window.grab().save(str(tmp_path / "environment-1280x800.png"))
    panel.reset_button.click()
    run(settled(window, EnvState.OUT_OF_DATE))  # the last build was of the edit
    assert panel.python.toPlainText() == "PyYAML\nsix"
    panel.set_posture(Posture(PostureId.QUICKJS))
    assert panel.status() is None
    assert "no environment" in panel.message.text()
    assert not panel.build_button.isEnabled()


def test_a_skill_that_needs_nothing_shows_no_build_progress(
    make_window: Callable[[], MainWindow],
    extra_root: Path,
    write_skill: Callable[..., Path],
    run: Run,
    environments: Path,
) -> None:
    folder = write_skill(extra_root, "plain", "name: plain\ndescription: Standard library.")
    panel = shown_with_script(make_window, run, folder, "import json\n").view.environment
    found = panel.status()
    assert found is not None and found.state is EnvState.NOT_NEEDED
    assert panel.progress.isHidden()
    assert panel.state.text() == "Not needed"
