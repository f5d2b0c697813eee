"""`workbench run` on an engine that does not see this machine's files (the issue's "done
when"): a bundled skill writes its report into the user's workspace, the diff and restore
work, and the posture card says the engine is remote. CI's second engine serves
(`.ci/remote-engine`: Podman in a mount namespace of its own, where /tmp is empty)."""

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli_run import workbench
from workbench.executors.docker.spec import COPIED

pytestmark = [pytest.mark.docker, pytest.mark.remote_engine, pytest.mark.timeout(120)]

SKILL = Path(__file__).parents[2] / "resources" / "skills" / "workspace-report"


def _json(env: dict[str, str], *args: str | Path) -> dict[str, Any]:
    done = workbench(env, *args)
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def test_a_bundled_skill_writes_its_report_and_restore_takes_it_back(
    remote_engine: str, tmp_path: Path
) -> None:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "data.csv").write_text("a,b\n1,2\n")

    document = _json(
        env, "run", "--skill", SKILL, "--posture", "docker", "--workspace", workspace, "--json",
        "--", "sh", "-c", 'python3 "$SKILL_DIR/scripts/report.py"',
    )  # fmt: skip

    result = document["result"]
    assert result["status"] == "ok", result["cause"]
    assert [c["path"] for c in result["changes"]] == ["report.md"]
    assert "data.csv" in (workspace / "report.md").read_text()
    checks = dict(map(tuple, result["card"]["checks"]))
    assert checks[COPIED] is True
    assert all(checks.values()), checks

    report = workbench(env, "history", "export", "last", "--format", "md").stdout
    assert "+++ b/report.md" in report
    assert "+| data.csv | 8 | 2 |" in report

    restored = _json(env, "history", "restore", "last", "--json")
    assert restored["restored"] is True and restored["complete"] is True
    assert sorted(p.name for p in workspace.iterdir()) == ["data.csv"]
