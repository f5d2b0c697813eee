"""The status line follows the Docker engine: a run refused because the engine went away, and
"Check again" after it is back, both ask the engine anew (the real probe, the real engine)."""

from dataclasses import replace
from typing import Any

import pytest
from PySide6.QtCore import QSettings

from tests.ui.conftest import Run
from tests.waiting import until
from workbench.platform.paths import example_skills_dir
from workbench.postures.model import PostureId
from workbench.ui.app import _probe_postures
from workbench.ui.mainwindow import MainWindow
from workbench.ui.services import Services

GONE = "unix:///nonexistent/docker.sock"


@pytest.mark.docker
def test_the_engine_status_follows_the_engine_going_away_and_coming_back(
    qtbot: Any,
    services: Services,
    settings: QSettings,
    run: Run,
    docker_runtimes: set[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    del docker_runtimes
    window = MainWindow(replace(services, probe_postures=_probe_postures), settings)
    qtbot.addWidget(window)
    window.show()
    run(window.load())
    engine = window.status_line.engine_label
    assert engine.text().startswith("Docker engine: reachable")
    window.browser.select_path(example_skills_dir() / "workspace-report")
    window.postures.choose(PostureId.DOCKER)

    monkeypatch.setenv("DOCKER_HOST", GONE)  # the engine goes away mid-session
    task = window.run_panel.start()
    assert task is not None
    run(task)
    assert window.run_panel.banner.sentence.text().startswith(
        f"Not run: The container engine docker at {GONE} (DOCKER_HOST) does not answer "
        "(no socket at that path)."
    )
    run(until(lambda: engine.text() == "Docker engine: not reachable"))
    assert f"docker at {GONE} (DOCKER_HOST) does not answer" in engine.toolTip()
    assert not window.postures.card(PostureId.DOCKER).radio.isEnabled()

    monkeypatch.delenv("DOCKER_HOST")  # ... and comes back
    window.status_line.check_again.click()
    assert engine.text() == "Docker engine: checking…"
    run(until(lambda: engine.text().startswith("Docker engine: reachable")))
    assert window.postures.card(PostureId.DOCKER).radio.isEnabled()
    run(window.shutdown())
