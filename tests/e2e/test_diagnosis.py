"""Diagnoses of real runs: held-out skills that fail for sandbox reasons, under real postures.

Each skill in `tests/fixtures/failing` fails for one reason a posture gives it (a write outside
the workspace, the network, a missing tool or module, a process or file-size limit, the home
folder, no input, a dropped privilege; QuickJS's fetch and confined fs), and a bundled example's
`.js` command is not executable for a shell. Each case runs it through the real run service under
every posture that refuses it and checks that the recorded diagnosis names the kind and the
control, with an evidence line that really is in the output, and that a re-run with the
suggested change links back to it.
"""

import asyncio
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import pytest

from workbench.executors import build_executor
from workbench.executors.types import CancelToken, OutputChunk
from workbench.postures.model import Posture, PostureId
from workbench.runs.compare import shell_command
from workbench.runs.diagnosis import Kind
from workbench.runs.history import RunHistory
from workbench.runs.layout import DataLayout
from workbench.runs.rerun import rerun_plan
from workbench.runs.service import CompletedRun, RunPlan, RunService

FAILING = Path(__file__).parents[1] / "fixtures" / "failing"
ROOT = os.geteuid() == 0
CONTAINERS = ("docker", "gvisor")
MISSING = "workbench-diag-no-such-tool"  # a program no computer has


@dataclass(frozen=True)
class Case:
    """One held-out skill, the command that runs it, and what each posture's diagnosis says:
    `controls` maps a posture to the words its control must contain."""

    skill: str
    command: str
    kind: Kind
    controls: dict[str, str]
    limits: tuple[tuple[str, float], ...] = ()


WRITE_TARGET = f"/usr/local/share/workbench-diag-{secrets.token_hex(4)}"
CASES = [
    Case(
        "save-report",
        f'python3 "$SKILL_DIR/scripts/save.py" {WRITE_TARGET}',
        Kind.WRITE_OUTSIDE,
        {"docker": "read-only root", "gvisor": "read-only root", "bubblewrap": "read-only view"}
        | ({"hardened": "throwaway uid"} if ROOT else {}),
    ),
    Case(
        "fetch-index",
        'python3 "$SKILL_DIR/scripts/fetch.py" pip',
        Kind.NETWORK_OFF,
        {"docker": "network none", "gvisor": "network none", "bubblewrap": "allow-list"},
    ),
    Case(
        "pdf-text",
        'sh "$SKILL_DIR/scripts/extract.sh" pdftotext input.pdf',
        Kind.MISSING_TOOL,
        {"docker": "sandbox image", "gvisor": "sandbox image"},
    ),
    Case(
        "pdf-text",
        f'sh "$SKILL_DIR/scripts/extract.sh" {MISSING} input.pdf',
        Kind.MISSING_TOOL,
        dict.fromkeys(("local", "hardened", "bubblewrap"), "this computer"),
    ),
    Case(
        "yaml-config",
        'python3 "$SKILL_DIR/scripts/config.py"',
        Kind.MISSING_MODULE,
        {"docker": "environment", "gvisor": "environment"},
    ),
    Case(
        "parallel-jobs",
        'python3 "$SKILL_DIR/scripts/jobs.py" 40',
        Kind.PROCESS_LIMIT,
        dict.fromkeys(("hardened", "bubblewrap", *CONTAINERS), "limit 16"),
        (("pids", 16),),
    ),
    Case(
        "big-export",
        'python3 "$SKILL_DIR/scripts/export.py" 4',
        Kind.FILE_SIZE_LIMIT,
        dict.fromkeys(("hardened", "bubblewrap"), "file-size limit 1 MiB"),
        (("file_size_bytes", 1024 * 1024),),
    ),
    Case(
        "read-settings",
        'python3 "$SKILL_DIR/scripts/settings.py"',
        Kind.HIDDEN_FILE,
        {"hardened": "private HOME", "bubblewrap": "private HOME"}
        | dict.fromkeys(CONTAINERS, "mounted"),
    ),
    Case(
        "confirm-delete",
        'sh "$SKILL_DIR/scripts/confirm.sh"',
        Kind.WAITING_FOR_INPUT,
        dict.fromkeys(("local", "hardened", "bubblewrap", *CONTAINERS), "no input"),
    ),
    Case(
        "js-export",
        "$SKILL_DIR/scripts/fetch.js",
        Kind.NETWORK_OFF,
        {"quickjs": "fetch off"},
    ),
    Case(
        "js-export",
        "$SKILL_DIR/scripts/save.js",
        Kind.WRITE_OUTSIDE,
        {"quickjs": "workspace-confined fs"},
    ),
    Case(
        "../../../resources/skills/csv-to-markdown",
        '"$SKILL_DIR/scripts/csv-to-markdown.js" data.csv',
        Kind.NOT_RUN,
        {"local": "executable", "docker": "executable"},
    ),
    Case(
        "take-ownership",
        'sh "$SKILL_DIR/scripts/own.sh"',
        Kind.PERMISSION,
        {"docker": "capability", "gvisor": "capability", "bubblewrap": "no root"}
        | ({"hardened": "throwaway uid"} if ROOT else {}),
    ),
]
MARKS = {"docker": [pytest.mark.docker], "gvisor": [pytest.mark.docker, pytest.mark.gvisor]}


def _params() -> list[object]:
    return [
        pytest.param(
            case, posture, id=f"{Path(case.skill).name}-{posture}", marks=MARKS.get(posture, [])
        )
        for case in CASES
        for posture in case.controls
    ]


@pytest.fixture(autouse=True)
def engine_for_containers(request: pytest.FixtureRequest) -> None:
    """A case under a container posture skips where no engine answers (tests/conftest.py)."""
    if request.node.get_closest_marker("docker"):
        request.getfixturevalue("docker_runtimes")


@pytest.fixture
def service(tmp_path: Path) -> RunService:
    """A run service over a tmp data folder."""
    layout = DataLayout(tmp_path / "data")
    return RunService(layout, RunHistory(layout.history_path), build_executor)


@pytest.fixture
def home_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME with the settings file `read-settings` reads."""
    home = tmp_path / "home"
    settings = home / ".config" / "diag-tool" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"level": 2}\n')
    monkeypatch.setenv("HOME", str(home))
    return home


def _ignore(chunk: OutputChunk) -> None:
    del chunk


def run(service: RunService, plan: RunPlan) -> CompletedRun:
    """Run `plan` to its end."""
    return asyncio.run(service.run_once(plan, _ignore, CancelToken()))


def plan(case: Case, posture_id: str, service: RunService) -> RunPlan:
    """The plan that runs `case` under `posture_id`, in a fresh workspace."""
    posture = Posture(PostureId(posture_id)).with_limits(**dict(case.limits))
    skill = (FAILING / case.skill).resolve()
    argv = shell_command(posture.id, case.command)
    workspace = service.layout.fresh_workspace(f"ws-{secrets.token_hex(4)}")
    return RunPlan(skill.name, skill, posture, argv, workspace)


@pytest.mark.parametrize(("case", "posture_id"), _params())
@pytest.mark.usefixtures("home_settings")
def test_a_sandbox_failure_names_its_control(
    case: Case, posture_id: str, service: RunService
) -> None:
    done = run(service, plan(case, posture_id, service))
    diagnosis = done.record.diagnosis
    assert diagnosis is not None, done.result
    assert diagnosis.kind is case.kind, (diagnosis, done.result.stderr.text)
    assert case.controls[posture_id] in diagnosis.control, diagnosis
    assert diagnosis.evidence is not None and diagnosis.cause and diagnosis.suggestion
    if diagnosis.evidence.line is not None:  # the evidence is a real line of that stream
        text = getattr(done.result, diagnosis.evidence.stream).text
        line = text.splitlines()[diagnosis.evidence.line - 1]
        assert line.strip().startswith(diagnosis.evidence.text)
    assert service.history.get(done.record.run_id).diagnosis == diagnosis  # stored with it
    assert not Path(WRITE_TARGET).exists()


def test_a_failure_of_the_skill_itself_shows_its_last_error(service: RunService) -> None:
    skill = FAILING.parent.parent.parent / "resources" / "skills" / "traceback-demo"
    argv = ("sh", "-c", 'python3 "$SKILL_DIR/scripts/fail.py"')
    workspace = service.layout.fresh_workspace("ws")
    done = run(
        service, RunPlan("traceback-demo", skill, Posture(PostureId.HARDENED), argv, workspace)
    )
    diagnosis = done.record.diagnosis
    assert diagnosis is not None and diagnosis.kind is Kind.SKILL_FAILED
    assert not diagnosis.control and diagnosis.change is None
    assert diagnosis.evidence is not None
    assert diagnosis.evidence.text == "KeyError: 'output'"
    assert diagnosis.evidence.stream == "stderr"


@pytest.mark.parametrize(
    ("case", "posture_id"),
    [
        (CASES[5], "hardened"),
        pytest.param(CASES[5], "docker", marks=pytest.mark.docker),
        (CASES[6], "hardened"),
    ],
)
def test_a_rerun_with_the_suggested_change_passes_and_links_back(
    case: Case, posture_id: str, service: RunService
) -> None:
    failed = run(service, plan(case, posture_id, service))
    diagnosis = failed.record.diagnosis
    assert diagnosis is not None and diagnosis.change is not None
    again = run(service, rerun_plan(failed.record, diagnosis.change, service.layout))
    assert again.record.outcome == "ok", (again.result.cause, again.result.stderr.text)
    assert again.record.rerun_of == failed.record.run_id
    assert service.history.get(again.record.run_id).rerun_of == failed.record.run_id
