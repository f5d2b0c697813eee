"""The warm pools on the posture cards: size (remembered), live status, priming per skill."""

import asyncio
import threading
from dataclasses import replace
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QLabel

from tests.ui.conftest import PROBE, Run
from tests.waiting import until
from workbench.executors.availability import docker_engine_runtimes
from workbench.executors.contract import Executor
from workbench.executors.types import RunStatus, SessionSpec
from workbench.executors.warm.containers import ContainerPool
from workbench.executors.warm.quickjs import QuickJsWorkerPool
from workbench.executors.warm.starts import PoolStatus, WarmStarts
from workbench.platform.paths import example_skills_dir
from workbench.postures.model import MIB, Availability, Posture, PostureId
from workbench.runs.service import RunService
from workbench.ui.mainwindow import MainWindow
from workbench.ui.services import Services

WITH_DOCKER = replace(
    PROBE,
    availability={**PROBE.availability, PostureId.DOCKER: Availability(True, "Engine.")},
    docker_runtimes=frozenset({"runc"}),
)


class FakePool:
    """A `WarmPool` that records what the picker asks of it and reports a set status."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.primed: list[tuple[Posture, SessionSpec]] = []
        self.now = PoolStatus(size=0, ready=0, starting=0, key="")

    def status(self) -> PoolStatus:
        return self.now

    def executor(self, posture: Posture) -> Executor:
        raise AssertionError("the picker never builds executors")

    async def resize(self, size: int) -> None:
        self.sizes.append(size)

    async def prime(self, posture: Posture, session: SessionSpec) -> None:
        self.primed.append((posture, session))

    async def close(self) -> None:
        raise AssertionError("the app closes the pools, not the picker")


def test_only_cards_with_a_pool_show_one_at_the_remembered_size(
    qtbot: Any, services: Services, settings: QSettings, run: Run
) -> None:
    window = MainWindow(replace(services, probe_postures=lambda: WITH_DOCKER), settings)
    qtbot.addWidget(window)
    picker = window.postures
    assert all(not picker.card(p).pool.isVisibleTo(picker) for p in PostureId)
    settings.setValue("pool/docker", 2)
    docker, gvisor = FakePool(), FakePool()
    picker.set_pools({PostureId.DOCKER: docker, PostureId.GVISOR: gvisor}, settings)
    run(window.load())
    run(picker.shutdown())
    for posture_id in PostureId:  # the pool row is in a card's unfolded part
        picker.card(posture_id).set_unfolded(True)
    shown = {p for p in PostureId if picker.card(p).pool.isVisibleTo(picker)}
    assert shown == {PostureId.DOCKER}  # gVisor has a pool too, but cannot run here
    assert picker.card(PostureId.DOCKER).pool.size_box.value() == 2
    assert (docker.sizes, gvisor.sizes) == ([2], [0])
    assert picker.card(PostureId.GVISOR).pool.size_box.text() == "off"
    status = picker.card(PostureId.DOCKER).pool.status_line
    docker.now = PoolStatus(size=0, ready=0, starting=0, key="")
    picker.on_pool_timer_timeout()
    assert status.text() == "Warm pool off: every run starts its container."
    run(window.shutdown())


def test_an_unavailable_posture_says_nothing_about_its_pool(
    window: MainWindow, settings: QSettings, run: Run
) -> None:
    picker = window.postures  # the test probe has no Docker engine
    picker.set_pools({PostureId.DOCKER: FakePool(), PostureId.GVISOR: FakePool()}, settings)
    run(picker.shutdown())
    for posture in (PostureId.DOCKER, PostureId.GVISOR):
        card = picker.card(posture)
        assert not card.pool.isVisibleTo(picker)
        shown = [label.text() for label in card.findChildren(QLabel) if label.isVisibleTo(card)]
        assert not any("pool" in text.lower() for text in shown)


def test_a_new_size_is_kept_and_the_status_follows_the_pool(
    qtbot: Any, services: Services, settings: QSettings, run: Run
) -> None:
    window = MainWindow(replace(services, probe_postures=lambda: WITH_DOCKER), settings)
    qtbot.addWidget(window)
    run(window.load())
    picker, pool = window.postures, FakePool()
    picker.set_pools({PostureId.DOCKER: pool}, settings)
    card = picker.card(PostureId.DOCKER)
    card.pool.size_box.setValue(3)
    run(picker.shutdown())
    assert pool.sizes == [0, 3] and settings.value("pool/docker") == 3
    pool.now = PoolStatus(size=3, ready=0, starting=0, key="")
    picker.on_pool_timer_timeout()
    assert (
        card.pool.status_line.text() == "Warm pool: 3 wanted; fills for the next run chosen here."
    )
    pool.now = PoolStatus(size=3, ready=1, starting=2, key="<b>demo</b> in a fresh workspace")
    picker.on_pool_timer_timeout()
    text = "Warm pool: 1 ready, starting 2 for <b>demo</b> in a fresh workspace"
    assert card.pool.status_line.text() == text
    assert card.pool.status_line.textFormat() is Qt.TextFormat.PlainText
    assert card.pool.status_line.property("status") == "ok"
    pool.now = replace(pool.now, problem="No Docker engine answers: refused")
    picker.on_pool_timer_timeout()
    assert (
        card.pool.status_line.text() == "Warm pool cannot fill: No Docker engine answers: refused"
    )
    assert card.pool.status_line.property("status") == "warning"


def test_choosing_a_skill_primes_the_chosen_postures_pool_for_a_fresh_workspace(
    qtbot: Any, services: Services, settings: QSettings, run: Run
) -> None:
    pool = FakePool()
    opened = replace(
        services, probe_postures=lambda: WITH_DOCKER, open_pools=lambda: {PostureId.DOCKER: pool}
    )
    window = MainWindow(opened, settings)
    qtbot.addWidget(window)
    run(window.load())  # opens the pools
    window.browser.select_path(example_skills_dir() / "workspace-report")
    assert window.postures.chosen() is PostureId.DOCKER
    window.run_panel.limits.memory.setValue(256)
    assert not pool.primed  # not before the user has stopped choosing
    assert window.postures._prime_timer.isActive()
    run(primes(pool))
    run(window.postures.shutdown())
    (primed,) = pool.primed
    posture, session = primed
    skill = window.browser.current_skill()
    assert skill is not None
    assert (session.skill_dir, session.skill_name) == (skill.path, skill.name)
    layout = services.runs.layout
    assert session.workspace.parent == layout.fresh_workspace("x").parent
    assert not session.workspace.exists() and session.runs_dir == layout.runs_root
    assert posture == window.run_panel.limits.posture(PostureId.DOCKER)
    assert posture.limits.memory_bytes == 256 * MIB
    run(window.shutdown())


def test_pools_that_open_after_the_skill_is_chosen_are_primed_for_it(
    qtbot: Any, services: Services, settings: QSettings, run: Run
) -> None:
    """The catalog and the probe may be done (the first skill chosen) before the pools are."""
    pool, release = FakePool(), threading.Event()

    def open_pools() -> dict[PostureId, FakePool]:
        release.wait(10)
        return {PostureId.DOCKER: pool}

    opened = replace(services, probe_postures=lambda: WITH_DOCKER, open_pools=open_pools)
    window = MainWindow(opened, settings)
    qtbot.addWidget(window)
    loading = asyncio.ensure_future(window.load())
    try:
        run(until(window.browser.current_skill))
        window.browser.select_path(example_skills_dir() / "workspace-report")
        run(until(lambda: window.postures.chosen() is PostureId.DOCKER))
        assert not pool.primed
    finally:
        release.set()
        run(loading)
    run(primes(pool))
    (primed,) = pool.primed
    assert primed[1].skill_dir == example_skills_dir() / "workspace-report"
    run(window.postures.shutdown())


async def primes(pool: FakePool) -> None:
    """Wait until the picker has primed `pool`."""
    await until(lambda: pool.primed)


async def shows(label: QLabel, start: str) -> None:
    """Wait until `label` (refreshed by the picker's timer) starts with `start`."""
    await until(lambda: label.text().startswith(start))


@pytest.mark.docker
def test_a_run_in_the_app_takes_the_warm_container_the_pool_got_ready(
    qtbot: Any, services: Services, settings: QSettings, run: Run, docker_runtimes: set[str]
) -> None:
    del docker_runtimes
    layout = services.runs.layout
    warm = WarmStarts({PostureId.DOCKER: ContainerPool(layout.fresh_workspace("x").parent)})
    runs = RunService(layout, services.runs.history, warm.build_executor)
    probe = replace(WITH_DOCKER, docker_runtimes=frozenset(docker_engine_runtimes() or ()))
    opened = replace(
        services, runs=runs, probe_postures=lambda: probe, open_pools=lambda: warm.pools
    )
    window = MainWindow(opened, settings)
    qtbot.addWidget(window)
    settings.setValue("pool/docker", 1)
    card = window.postures.card(PostureId.DOCKER)
    try:
        run(window.load())
        window.browser.select_path(example_skills_dir() / "workspace-report")
        run(shows(card.pool.status_line, "Warm pool: 1 ready"))
        window.run_panel.command.setText("echo warm > made.txt")
        task = window.run_panel.start()
        assert task is not None
        run(task)
        done = window.run_panel.last_run
        assert done is not None and done.result.status is RunStatus.OK
        assert done.result.card.started.startswith("Warm container from the pool")
        assert (done.record.workspace / "made.txt").read_text() == "warm\n"
        run(shows(card.pool.status_line, "Warm pool: 1 ready"))
    finally:
        run(window.shutdown())
        run(warm.close())


def test_a_quickjs_run_in_the_app_adopts_the_warm_worker(
    qtbot: Any, services: Services, settings: QSettings, run: Run
) -> None:
    warm = WarmStarts({PostureId.QUICKJS: QuickJsWorkerPool()})
    runs = RunService(services.runs.layout, services.runs.history, warm.build_executor)
    window = MainWindow(replace(services, runs=runs, open_pools=lambda: warm.pools), settings)
    qtbot.addWidget(window)
    settings.setValue("pool/quickjs", 1)
    card = window.postures.card(PostureId.QUICKJS)
    assert card.pool.size_box.accessibleName() == "Warm workers to keep ready for QuickJS worker"
    try:
        run(window.load())
        assert window.browser.select_path(example_skills_dir() / "csv-to-markdown")
        window.postures.choose(PostureId.QUICKJS)
        run(shows(card.pool.status_line, "Warm pool: 1 ready"))
        task = window.run_panel.start()
        assert task is not None
        run(task)
        done = window.run_panel.last_run
        assert done is not None
        assert done.result.status is RunStatus.OK, done.result.cause
        assert done.result.card.started.startswith("warm worker: started")
        assert (done.record.workspace / "data.md").read_text().startswith("|")
    finally:
        run(window.shutdown())
        run(warm.close())
