"""`workbench probe` end to end: each posture's containment claims hold against real runs.

Every cell's measured verdict must be the one its posture claims for the aspect the probe tries
(`postures.containment`, through `probes.expected`): a claim the lab disproves fails here.

Each posture runs in its own CLI subprocess with its own data and temporary folders, so the
lab's canaries, workspaces and history never touch the user's. Container postures run only
when an engine answers (the `docker_runtimes` fixture) and this build has their executor.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.executors import implemented_postures
from workbench.postures.model import PostureId
from workbench.probes.catalogue import ProbeId
from workbench.probes.expected import expected
from workbench.probes.verdict import Verdict


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A CLI environment with its own data folder and temporary folder.

    The temporary folder is made in the system's, open to other users (0755): as root, the
    hardened posture runs probes as a throwaway uid that must reach the lab's folders, and
    pytest's own tmp folders are closed to other users.
    """
    lab_tmp = Path(tempfile.mkdtemp(prefix="workbench-probe-e2e-"))
    lab_tmp.chmod(0o755)
    yield {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg"), "TMPDIR": str(lab_tmp)}
    shutil.rmtree(lab_tmp)


def probe(
    env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `python -m workbench probe ARGS...`."""
    command = [sys.executable, "-m", "workbench", "probe", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)


def scoreboard(env: dict[str, str], posture_id: PostureId) -> dict[str, Any]:
    """The JSON scoreboard of one posture; the run must exit 0 (every cell as promised)."""
    done = probe(env, "--postures", posture_id.value, "--json")
    document: dict[str, Any] = json.loads(done.stdout)
    assert document["schema"] == "skill-workbench/probe/1"
    assert done.returncode in (0, 1), done.stderr
    return document


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
        f"claims {claimed[name].verdict} ({claimed[name].note})"
        for name, cell in cells.items()
        if Verdict(cell["verdict"]) is not claimed[name].verdict
    ]
    assert wrong == []
    assert not any(cell["unexpected"] for cell in cells.values())
    listed = subprocess.run(
        [sys.executable, "-m", "workbench", "history", "list", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    recorded = {run["run_id"] for run in json.loads(listed.stdout)["runs"]}
    assert {cell["run_id"] for cell in cells.values()} <= recorded


def lab_leftovers(env: dict[str, str]) -> list[Path]:
    """Lab folders left in the subprocess's temporary folder."""
    return sorted(Path(env["TMPDIR"]).glob("workbench-probe-lab-*"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "posture_id", [PostureId.LOCAL, PostureId.HARDENED, PostureId.BUBBLEWRAP, PostureId.QUICKJS]
)
def test_host_postures_keep_their_promises(posture_id: PostureId, env: dict[str, str]) -> None:
    if posture_id not in implemented_postures():
        pytest.skip(f"the {posture_id} executor is not in this build yet")
    document = scoreboard(env, posture_id)
    check_every_cell(document, posture_id, env)
    assert lab_leftovers(env) == []


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("posture_id", [PostureId.DOCKER, PostureId.GVISOR])
def test_container_postures_keep_their_promises(
    posture_id: PostureId, env: dict[str, str], docker_runtimes: set[str]
) -> None:
    if posture_id not in implemented_postures():
        pytest.skip(f"the {posture_id} executor is not in this build yet")
    if posture_id is PostureId.GVISOR and "runsc" not in docker_runtimes:
        pytest.skip("the Docker engine has no runsc runtime")
    document = scoreboard(env, posture_id)
    check_every_cell(document, posture_id, env)
    assert lab_leftovers(env) == []


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
