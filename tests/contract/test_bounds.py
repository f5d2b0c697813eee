"""Disk bounds under every posture: the workspace size limit and the run logs' cap."""

import pytest

from tests.contract.conftest import Harness
from workbench.executors.types import RunStatus
from workbench.postures.model import MIB

pytestmark = pytest.mark.timeout(90)

FILL = (
    "i=0; while [ $i -lt 200 ]; do head -c 1048576 /dev/zero > f$i; i=$((i + 1)); "
    "sleep 0.02; done; echo finished"
)


def test_a_run_that_fills_the_workspace_is_stopped_at_its_limit(harness: Harness) -> None:
    executor = harness.start(harness.posture(disk_bytes=4 * MIB, timeout_s=60))
    result = harness.run("sh", "-c", FILL, executor=executor).result
    assert result.status is RunStatus.LIMIT_EXCEEDED, (result.cause, result.stderr.text)
    assert result.cause.startswith(  # bubblewrap counts what is written, the others watch
        ("workspace size limit 4 MiB: the run added ", "disk limit 4 MiB (it wrote ")
    )
    assert "finished" not in result.stdout.text
    assert result.leftover_processes == 0
    written = sum(path.stat().st_size for path in harness.workspace.iterdir())
    assert written < 100 * MIB  # of the 200 MiB it would have written
    disk_lines = ("Workspace size limit 4 MiB", "disk writes at most 4 MiB")
    assert any(label.startswith(disk_lines) for label, _ in result.card.checks)


def test_a_flood_of_output_keeps_the_log_within_its_cap(harness: Harness) -> None:
    executor = harness.start(harness.posture(log_bytes=MIB))
    result = harness.run("head", "-c", str(5 * MIB), "/dev/zero", executor=executor).result
    assert result.status is RunStatus.OK, result.cause
    stdout = result.stdout
    assert stdout.total_bytes == 5 * MIB
    assert stdout.log_dropped_bytes == 4 * MIB
    assert stdout.log_path is not None
    assert MIB < stdout.log_path.stat().st_size < MIB + 200
    assert any(label.startswith("Run logs capped at 1 MiB") for label, _ in result.card.checks)
