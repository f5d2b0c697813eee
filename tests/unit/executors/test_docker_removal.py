"""Removing a session container when the engine answers more slowly than the client waits."""

from typing import Any

import pytest
from docker.errors import NotFound
from requests.exceptions import ReadTimeout

from workbench.errors import ExecutorError
from workbench.executors.docker import session
from workbench.executors.docker.session import remove_container


class SlowEngine:
    """An engine whose forced removal outlasts the client's timeout, and which reports the
    container gone after `inspections_left` more inspections (never, with None)."""

    def __init__(self, inspections_left: int | None) -> None:
        self.inspections_left = inspections_left

    def remove_container(self, container_id: str, force: bool) -> None:
        raise ReadTimeout("Read timed out. (read timeout=10)")

    def inspect_container(self, container_id: str) -> dict[str, Any]:
        if self.inspections_left is not None:
            if self.inspections_left == 0:
                raise NotFound("No such container")
            self.inspections_left -= 1
        return {"State": {"Status": "removing"}}


def test_a_removal_that_outlasts_the_client_timeout_is_waited_for() -> None:
    engine = SlowEngine(inspections_left=3)
    remove_container(engine, "c0ffee")  # type: ignore[arg-type]
    assert engine.inspections_left == 0


def test_a_removal_that_never_ends_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "REMOVE_WAIT_S", 0.5)
    with pytest.raises(ExecutorError, match="Could not remove container c0ffee"):
        remove_container(SlowEngine(inspections_left=None), "c0ffee")  # type: ignore[arg-type]
