"""`workbench probe` end to end: each posture's containment claims hold against real runs.

Every cell's measured verdict must be the one its posture claims for the aspect the probe tries
(`postures.containment`, through `probes.expected`): a claim the lab disproves fails here.

One CLI subprocess probes every posture this machine and build can run (as `workbench probe`
does by default), with its own data and temporary folders, so the lab's canaries, workspaces and
history never touch the user's; each posture's cells are then checked by a test of their own.
Container postures are checked only when an engine answers (the `docker_runtimes` fixture).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from workbench.executors import implemented_postures
from workbench.postures.model import PostureId
from workbench.probes.catalogue import ProbeId
from workbench.probes.expected import expected
from workbench.probes.verdict import Verdict


def cli_env(data: Path) -> Iterator[dict[str, str]]:
    """A CLI environment with its own data folder (under `data`) and temporary folder.

    The temporary folder is made in the system's, open to other users (0755): as root, the
    hardened posture runs probes as a throwaway uid that must reach the lab's folders, and
    pytest's own tmp folders are closed to other users.
    """
    lab_tmp = Path(tempfile.mkdtemp(prefix="workbench-probe-e2e-"))
    lab_tmp.chmod(0o755)
    yield {**os.environ, "XDG_DATA_HOME": str(data / "xdg"), "TMPDIR": str(lab_tmp)}
    shutil.rmtree(lab_tmp)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A CLI environment of the test's own (see `cli_env`)."""
    yield from cli_env(tmp_path)


@dataclass(frozen=True)
class Lab:
    """The one lab over every posture that can run here: its document and environment."""

    document: dict[str, Any]
    env: dict[str, str]

    def of(self, posture_id: PostureId) -> dict[str, Any]:
        """The document with only the cells of `posture_id`."""
        cells = [cell for cell in self.document["cells"] if cell["posture"] == posture_id]
        return {**self.document, "cells": cells}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """`workbench probe --json` over every posture this machine and build can run."""
    for env in cli_env(tmp_path_factory.mktemp("probe")):
        done = probe(env, "--json")
        document: dict[str, Any] = json.loads(done.stdout)
        assert document["schema"] == "skill-workbench/probe/1"
        assert done.returncode in (0, 1), done.stderr
        yield Lab(document, env)


def probe(
    env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `python -m workbench probe ARGS...`."""
    command = [sys.executable, "-m", "workbench", "probe", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)


def check_every_cell(document: dict[str, Any], posture_id: PostureId, env: dict[str, str]) -> None:
    """Every probe ran, each verdict is the one the posture claims, and each cell's run is in
    history."""
    cells = {cell["probe"]: cell for cell in document["cells"]}
    assert set(cells) == {probe.value for probe in ProbeId}
    claimed = {
        name: expected(posture_id, ProbeId(name), as_root=document["as_root"]) for name in cells
    }
    wrong = [
        f"{name}: measured {cell['verdict']} ({cell['detail']}), but the {posture_id} posture "
        f"claims {claimed[name].verdict} ({claimed[name].note}); {_what_it_left(cell, env)}"
        for name, cell in cells.items()
        if Verdict(cell["verdict"]) is not claimed[name].verdict
    ]
    assert wrong == []
    assert not any(cell["unexpected"] for cell in cells.values())
    busy, control = cells[ProbeId.CPU.value], claimed[ProbeId.CPU.value].note
    assert busy["detail"].startswith(control.split()[0]), (
        f"the busy loop was stopped by {busy['detail']}, not by {control} as promised"
    )
    listed = subprocess.run(
        [sys.executable, "-m", "workbench", "history", "list", "--limit", "1000", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    recorded = {run["run_id"] for run in json.loads(listed.stdout)["runs"]}
    assert {cell["run_id"] for cell in cells.values()} <= recorded


def _what_it_left(cell: dict[str, Any], env: dict[str, str]) -> str:
    """What the history holds of a cell's run: its output, warnings and notes (for a failure
    to show why a probe gave the verdict it did)."""
    shown = subprocess.run(
        [sys.executable, "-m", "workbench", "history", "show", cell["run_id"], "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if shown.returncode != 0:
        return f"its run is not in the history: {shown.stderr.strip()}"
    record = json.loads(shown.stdout)
    result = record["result"] or {}
    return repr(
        {
            "stdout": result.get("stdout"),
            "stderr": result.get("stderr"),
            "warnings": [warning["text"] for warning in result.get("warnings", ())],
            "notes": record["notes"],
        }
    )


def lab_leftovers(env: dict[str, str]) -> list[Path]:
    """Lab folders left in the subprocess's temporary folder."""
    return sorted(Path(env["TMPDIR"]).glob("workbench-probe-lab-*"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "posture_id", [PostureId.LOCAL, PostureId.HARDENED, PostureId.BUBBLEWRAP, PostureId.QUICKJS]
)
def test_host_postures_keep_their_promises(posture_id: PostureId, lab: Lab) -> None:
    if posture_id not in implemented_postures():
        pytest.skip(f"the {posture_id} executor is not in this build yet")
    check_every_cell(lab.of(posture_id), posture_id, lab.env)
    assert lab_leftovers(lab.env) == []


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("posture_id", [PostureId.DOCKER, PostureId.GVISOR])
def test_container_postures_keep_their_promises(
    posture_id: PostureId, lab: Lab, docker_runtimes: set[str]
) -> None:
    if posture_id not in implemented_postures():
        pytest.skip(f"the {posture_id} executor is not in this build yet")
    if posture_id is PostureId.GVISOR and "runsc" not in docker_runtimes:
        pytest.skip("the Docker engine has no runsc runtime")
    check_every_cell(lab.of(posture_id), posture_id, lab.env)
    assert lab_leftovers(lab.env) == []


def test_an_unknown_posture_is_a_usage_error(env: dict[str, str]) -> None:
    done = probe(env, "--postures", "local,nope")
    assert done.returncode == 2
    assert "Unknown posture 'nope'" in done.stderr
    assert done.stdout == ""


def test_ctrl_c_stops_the_lab_and_removes_what_it_planted(env: dict[str, str]) -> None:
    command = [sys.executable, "-m", "workbench", "probe", "--postures", "local"]
    lab = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert lab.stderr is not None
    try:
        first = ""
        while "local/" not in first:  # the first cell is judged: the lab is planted and running
            first = lab.stderr.readline()
            assert first, "the lab ended before its first cell"
        lab.send_signal(signal.SIGINT)
        out, _ = lab.communicate(timeout=60)
    finally:
        lab.kill()
        lab.wait()
    assert lab.returncode == 130
    assert "INTERRUPTED" in out
    assert lab_leftovers(env) == []
