"""Fixtures every test shares: an isolated user data area, and the Docker engine gate."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench.postures import docker_engine_runtimes


@pytest.fixture(autouse=True)
def isolated_user_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point the XDG folders at a temporary home so no test touches the user's history."""
    home = tmp_path_factory.mktemp("xdg")
    for variable in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(variable, str(home / variable.lower()))
    return home


@pytest.fixture(scope="session")
def docker_runtimes() -> Iterator[set[str]]:
    """The local engine's runtimes; skips without an engine unless WORKBENCH_REQUIRE_DOCKER=1."""
    runtimes = docker_engine_runtimes()
    if runtimes is None:
        message = "no Docker engine answers (start dockerd, or see .ci/run)"
        if os.environ.get("WORKBENCH_REQUIRE_DOCKER") == "1":
            pytest.fail(f"WORKBENCH_REQUIRE_DOCKER=1 but {message}")
        pytest.skip(message)
    yield runtimes
