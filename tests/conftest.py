"""Fixtures every test shares: an isolated user data area, and the Docker engine gate.

Docker tests skip with a reason when no engine answers, except under
WORKBENCH_REQUIRE_DOCKER=1 (CI), where any skip of a `docker`, `gvisor`, `podman` or
`remote_engine` test is a failure: a missing engine, runtime, image or executor must not pass
unnoticed. Under pytest-xdist (`--dist loadgroup`, as `python3 dev.py test` runs it) the tests of
a module stay in one worker, so its module-scoped fixtures start once, and the tests of each
container engine run in one worker, the engine's group (`ENGINES`: the Docker engine, Podman's
socket, the remote engine, each with its own containers): such tests drain the engine's pooled
containers and count what it holds, so they never run beside each other, while the tests of
another engine may. A test uses an engine when it has one of its marks or fixtures, or shares a
fixture that outlives one test with such a test; the others of its module (a host posture's
parameters) go with the module. (A fixture that two engines' tests share starts in each of
their workers.)
"""

import os
import shutil
import subprocess
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from workbench.executors.availability import docker_engine_runtimes


@pytest.fixture(autouse=True)
def isolated_user_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point the XDG folders at a temporary home so no test touches the user's history."""
    home = tmp_path_factory.mktemp("xdg")
    for variable in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(variable, str(home / variable.lower()))
    return home


@pytest.fixture
def remove_deep_trees(tmp_path: Path) -> Iterator[None]:
    """Empty `tmp_path` with `rm -rf` after the test: pytest's own cleanup recurses, so a tree
    thousands of folders deep that a failing test left behind would break later sessions."""
    yield
    subprocess.run(["rm", "-rf", "--", *map(str, tmp_path.iterdir())], check=False)


@pytest.fixture(scope="session")
def docker_runtimes() -> Iterator[set[str]]:
    """The engine's runtimes; skips without an engine (see the module doc)."""
    runtimes = docker_engine_runtimes()
    if runtimes is None:
        pytest.skip("no Docker engine answers (start dockerd, or see .ci/run)")
    yield runtimes


@pytest.fixture
def remote_engine(monkeypatch: pytest.MonkeyPatch) -> str:
    """`DOCKER_HOST` set to the engine that does not see this machine's files, named by
    WORKBENCH_REMOTE_ENGINE (`.ci/remote-engine` starts one); skips without it."""
    host = os.environ.get("WORKBENCH_REMOTE_ENGINE", "")
    if not host:
        pytest.skip("no remote engine: WORKBENCH_REMOTE_ENGINE is not set (see .ci/run)")
    monkeypatch.setenv("DOCKER_HOST", host)
    return host


ENGINE_MARKERS = ("docker", "gvisor", "podman", "remote_engine")
# Each engine's xdist group, and the marks or fixtures of its tests; the first that fits wins (a
# remote engine's test is marked `docker` for its posture).
ENGINES = (
    ("remote-engine", {"remote_engine"}),
    ("podman-engine", {"podman"}),
    ("docker-engine", {"docker", "gvisor", "docker_runtimes"}),
)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put each test in its xdist group: its engine's, or its module's (see the module doc)."""
    groups = {item: _engine_group(item) for item in items}
    # A fixture an engine's test shares starts once, in that engine's worker.
    for engine, _ in reversed(ENGINES):  # a fixture the Docker engine's tests share stays there
        used = [item for item, group in groups.items() if group == engine]
        shared = {instance for item in used for instance in _shared_fixtures(item)}
        for item, group in groups.items():
            if group is None and shared.intersection(_shared_fixtures(item)):
                groups[item] = engine
    for item, group in groups.items():
        item.add_marker(pytest.mark.xdist_group(group or str(item.path)))


def _engine_group(item: pytest.Item) -> str | None:
    """The group of the engine `item` uses, or None."""
    used = {mark.name for mark in item.iter_markers()} | set(getattr(item, "fixturenames", ()))
    return next((group for group, names in ENGINES if used & names), None)


def _shared_fixtures(item: pytest.Item) -> set[tuple[str, str]]:
    """The instances of the tests' own fixtures that `item` uses and that outlive one test:
    (its module, name) for a module's or class's, (where it is defined, name) for a package's or
    the session's. pytest's and its plugins' fixtures have no `baseid`."""
    info = getattr(item, "_fixtureinfo", None)
    shared = set()
    for name, defs in info.name2fixturedefs.items() if info else ():
        fixture = defs[-1]
        if fixture.baseid and fixture.scope in ("module", "class"):
            shared.add((str(item.path), name))
        elif fixture.baseid and fixture.scope != "function":
            shared.add((fixture.baseid, name))
    return shared


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Under WORKBENCH_REQUIRE_DOCKER=1, a skipped container test fails."""
    del call
    report = yield
    required = os.environ.get("WORKBENCH_REQUIRE_DOCKER") == "1"
    containers = any(map(item.get_closest_marker, ENGINE_MARKERS))
    if required and containers and report.skipped:
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"WORKBENCH_REQUIRE_DOCKER=1, but this test was skipped: {reason}"
    return report


@pytest.fixture
def traversable_tmp_path() -> Iterator[Path]:
    """A temporary folder every user may traverse (pytest's own sits in a 0700 folder, which
    the hardened and quickjs postures' throwaway uid cannot enter)."""
    folder = Path(tempfile.mkdtemp(prefix="workbench-test-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
