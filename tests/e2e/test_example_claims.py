"""Every claim a bundled example's SKILL.md makes about a posture, checked by running it.

Each test runs the example's own command (or the variant its SKILL.md names) through the run
service under the real executor and checks what the "What it shows under each posture" list
says, posture by posture; the docker and gvisor ones need the engine. The data folder is one
every user may traverse: run as root, the hardened posture runs commands as a throwaway uid.
"""

import asyncio
import shutil
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from workbench.cli.run import exit_code
from workbench.executors import build_executor
from workbench.executors.types import CancelToken, OutputChunk, RunResult, RunStatus, new_run_id
from workbench.platform.paths import example_skills_dir
from workbench.postures.model import CONTAINER_POSTURES, DEFAULT_LIMITS, Posture, PostureId
from workbench.runs.compare import shell_command
from workbench.runs.history import RunHistory
from workbench.runs.layout import DataLayout
from workbench.runs.service import RunPlan, RunService
from workbench.runs.undo import restore_run
from workbench.skills import load_skill

HOST = (PostureId.LOCAL, PostureId.HARDENED)
SANDBOXES = (  # the shell postures that keep the host and the network out
    PostureId.BUBBLEWRAP,
    pytest.param(PostureId.DOCKER, marks=pytest.mark.docker),
    pytest.param(PostureId.GVISOR, marks=pytest.mark.gvisor),
)
CONTAINERS = (
    pytest.param(PostureId.DOCKER, marks=pytest.mark.docker),
    pytest.param(PostureId.GVISOR, marks=pytest.mark.gvisor),
)
PYTHON_SKILLS = ("orphan-maker", "runaway", "secret-probe", "traceback-demo", "workspace-report")
TOKEN = "DEMO_API_TOKEN"


@dataclass
class Ran:
    """A finished run of an example: its result, output and workspace."""

    result: RunResult
    stdout: str
    stderr: str
    workspace: Path
    run_id: str


@pytest.fixture
def service() -> Iterator[RunService]:
    """A run service on a data folder every user may traverse."""
    root = Path(tempfile.mkdtemp(prefix="workbench-examples-"))
    root.chmod(0o755)
    layout = DataLayout(root / "data")
    yield RunService(layout, RunHistory(layout.history_path), build_executor)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def engine(request: pytest.FixtureRequest, posture: PostureId) -> None:
    """Skip a container posture without the engine (or gVisor's runtime) it needs."""
    if posture in (PostureId.DOCKER, PostureId.GVISOR):
        runtimes: set[str] = request.getfixturevalue("docker_runtimes")
        if posture is PostureId.GVISOR and "runsc" not in runtimes:
            pytest.skip("the Docker engine has no runsc runtime")


def run_example(
    service: RunService, skill: str, posture: PostureId, command: str | None = None, **limits: float
) -> Ran:
    """Run `skill`'s command (or `command`, shell text) under `posture` in a fresh workspace."""
    loaded = load_skill(example_skills_dir() / skill)
    text = command or loaded.command
    assert text is not None
    run_id = new_run_id()
    workspace = service.layout.fresh_workspace(run_id)
    output: dict[str, list[bytes]] = {"stdout": [], "stderr": []}

    def sink(chunk: OutputChunk) -> None:
        output[chunk.stream].append(chunk.data)

    plan = RunPlan(
        skill,
        loaded.path,
        Posture(posture).with_limits(**limits),
        shell_command(posture, text),
        workspace,
        run_id=run_id,
    )
    done = asyncio.run(service.run_once(plan, sink, CancelToken()))
    text_of = {name: b"".join(chunks).decode(errors="replace") for name, chunks in output.items()}
    return Ran(done.result, text_of["stdout"], text_of["stderr"], workspace, run_id)


@pytest.mark.parametrize("skill", PYTHON_SKILLS)
def test_quickjs_refuses_the_python_examples_before_they_start(
    service: RunService, skill: str
) -> None:
    """ "quickjs: runs JavaScript only, so this Python command is refused before it starts" (and
    traceback-demo: "an error of the workbench (exit 125 on the command line)")."""
    ran = run_example(service, skill, PostureId.QUICKJS)
    assert ran.result.status is RunStatus.ERROR
    assert "runs JavaScript files only" in ran.result.cause
    assert exit_code(ran.result) == 125 and ran.result.changes == ()


# csv-to-markdown ------------------------------------------------------------------------------


def test_csv_to_markdown_converts_under_quickjs_and_cannot_read_outside(
    service: RunService,
) -> None:
    """ "the changes panel shows data.csv and data.md; any attempt to read outside the workspace
    fails inside the VM (give it ../data.csv and the run fails with "'..' is not allowed")"."""
    ran = run_example(service, "csv-to-markdown", PostureId.QUICKJS)
    assert ran.result.status is RunStatus.OK, ran.result.cause
    assert sorted(change.path for change in ran.result.changes) == ["data.csv", "data.md"]
    assert (ran.workspace / "data.md").read_text().startswith("| posture | isolation |")
    outside = run_example(
        service,
        "csv-to-markdown",
        PostureId.QUICKJS,
        '"$SKILL_DIR/scripts/csv-to-markdown.js" ../data.csv',
    )
    assert outside.result.status is RunStatus.FAILED
    assert "'..' is not allowed" in outside.result.cause


@pytest.mark.parametrize("posture", [*HOST, *SANDBOXES])
def test_csv_to_markdown_cannot_run_under_a_shell_posture(
    service: RunService, posture: PostureId, engine: None
) -> None:
    """ "the shell reports "Permission denied" (it is not executable) and the run fails with exit
    code 126"."""
    ran = run_example(service, "csv-to-markdown", posture)
    assert (ran.result.status, ran.result.exit_code) == (RunStatus.FAILED, 126)
    assert "Permission denied" in ran.stderr


# orphan-maker ---------------------------------------------------------------------------------


@pytest.mark.parametrize("posture", [*HOST, *SANDBOXES])
def test_orphan_maker_leaves_nothing_running(
    service: RunService, posture: PostureId, engine: None
) -> None:
    """ "the run ends ok, its cause says "killed 1 background process it left behind", a caution
    says the same, and the sleeper is gone: leftover processes is 0" (in a container or the
    bubblewrap sandbox: killed there)."""
    ran = run_example(service, "orphan-maker", posture)
    assert ran.result.status is RunStatus.OK
    assert "killed 1 background process it left behind" in ran.result.cause
    assert any("left 1 background process" in w.text for w in ran.result.warnings)
    assert ran.result.leftover_processes == 0
    if posture in HOST:  # the sleeper's pid is a host pid: it must be gone
        pid = int((ran.workspace / "orphan.pid").read_text())
        assert not Path(f"/proc/{pid}").exists() or _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


# runaway --------------------------------------------------------------------------------------

RUNAWAY = 'python3 "$SKILL_DIR/scripts/runaway.py"'


def test_runaway_under_local_only_the_timeout_stops_it(service: RunService) -> None:
    """ "local: nothing stops it but the workbench's wall-clock timeout ... (timed out)"."""
    for mode in ("cpu", "memory --max-mib 100"):
        ran = run_example(service, "runaway", PostureId.LOCAL, f"{RUNAWAY} {mode}", timeout_s=2)
        assert ran.result.status is RunStatus.TIMED_OUT
        assert ran.result.cause == "wall-clock timeout of 2 s"


def test_the_default_cpu_time_limit_comes_before_the_timeout() -> None:
    """ "the CPU-time limit, 30 s by default, half the 60-s timeout, so it gets there first"."""
    assert (DEFAULT_LIMITS.cpu_seconds, DEFAULT_LIMITS.timeout_s) == (30, 60)


@pytest.mark.parametrize("posture", [PostureId.HARDENED, PostureId.BUBBLEWRAP])
def test_runaway_under_hardened_or_bubblewrap_is_stopped_by_its_limits(
    service: RunService, posture: PostureId
) -> None:
    """ "RLIMIT_CPU ends cpu once it has used the CPU-time limit ... (limit exceeded), and
    RLIMIT_AS makes memory fail with a MemoryError at the memory limit (oom killed, the cause
    naming the limit and RLIMIT_AS)"; bubblewrap: "as hardened". The CPU-time limit is 1 s here
    against a 30-s timeout, the default's order with room for a busy machine."""
    cpu = run_example(service, "runaway", posture, f"{RUNAWAY} cpu", cpu_seconds=1, timeout_s=30)
    assert cpu.result.status is RunStatus.LIMIT_EXCEEDED
    assert cpu.result.cause == "RLIMIT_CPU 1 s"
    memory = run_example(service, "runaway", posture, f"{RUNAWAY} memory")
    assert memory.result.status is RunStatus.OOM_KILLED
    assert memory.result.cause == "memory limit 512 MiB (RLIMIT_AS)"
    assert "MemoryError" in memory.stderr


@pytest.mark.parametrize("posture", CONTAINERS)
def test_runaway_in_a_container_is_oom_killed_and_cpu_ends_as_the_posture_says(
    service: RunService, posture: PostureId, engine: None
) -> None:
    """ "docker: the same CPU-time limit ends cpu (limit exceeded ...), while memory is
    OOM-killed by the cgroup at the memory limit (oom killed; workbench run exits 137)"; gvisor:
    "memory is OOM-killed at the memory limit as under docker, but gVisor does not enforce the
    CPU-time limit: cpu runs until the timeout (timed out)"."""
    timeout_s = 2 if posture is PostureId.GVISOR else 5  # gVisor's cpu run ends at its timeout
    cpu = run_example(
        service, "runaway", posture, f"{RUNAWAY} cpu", timeout_s=timeout_s, cpu_seconds=1
    )
    if posture is PostureId.GVISOR:
        assert cpu.result.status is RunStatus.TIMED_OUT
    else:
        assert (cpu.result.status, cpu.result.cause) == (RunStatus.LIMIT_EXCEEDED, "RLIMIT_CPU 1 s")
    memory = run_example(service, "runaway", posture, f"{RUNAWAY} memory")
    assert memory.result.status is RunStatus.OOM_KILLED
    # Under gVisor the engine may report the sandbox's OOM kill late or never: a sandbox killed
    # near its limit is then named as such (`DockerSession.stopped_for_memory`).
    named = ["cgroup OOM"] + (
        ["the container was killed with"] if posture is PostureId.GVISOR else []
    )
    assert memory.result.cause.startswith(tuple(f"memory limit 512 MiB ({how}" for how in named))
    assert exit_code(memory.result) == 137


# secret-probe ---------------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[int]:
    """A port listening on this machine's 127.0.0.1 (the probe connects, sends nothing)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


@pytest.fixture
def secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A token in the environment and a readable key in ~/.ssh, as a developer has."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("not a real key\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv(TOKEN, "s3cr3t-value")


def _probe(service: RunService, posture: PostureId, port: int) -> dict[str, str]:
    command = f'python3 "$SKILL_DIR/scripts/probe.py" --address 127.0.0.1 --port {port}'
    ran = run_example(service, "secret-probe", posture, command)
    assert ran.result.status is RunStatus.OK, ran.stderr
    assert "s3cr3t-value" not in ran.stdout  # names, never values
    found = {}
    for line in ran.stdout.splitlines():
        if line.startswith(("COULD", "could not")):
            verdict, rest = line[:9].strip(), line[11:]
            found[rest[:15].strip()] = f"{verdict}: {rest[15:].strip()}"
    return found


@pytest.mark.usefixtures("secrets")
def test_secret_probe_under_local_reaches_everything(service: RunService, listener: int) -> None:
    """ "local: everything you have is reachable: your tokens in the environment, your ~/.ssh,
    your parent's environment with the same tokens, and the network"."""
    found = _probe(service, PostureId.LOCAL, listener)
    assert found["secrets in env"].startswith("COULD") and TOKEN in found["secrets in env"]
    assert found["~/.ssh"].startswith("COULD") and "id_ed25519" in found["~/.ssh"]
    assert found["parent environ"].startswith("COULD") and TOKEN in found["parent environ"]
    assert found["network"].startswith("COULD")


@pytest.mark.usefixtures("secrets")
def test_secret_probe_under_hardened_finds_no_secret_but_the_network(
    service: RunService, listener: int
) -> None:
    """ "hardened: ... the first two come back empty, and the parent is the scrubbed shell,
    whose environment holds no credential-looking names either; but the network is still
    open"."""
    found = _probe(service, PostureId.HARDENED, listener)
    assert found["secrets in env"].startswith("could not")
    assert found["~/.ssh"].startswith("could not")
    assert "no credential-looking names" in found["parent environ"]
    assert found["network"].startswith("COULD")


@pytest.mark.usefixtures("secrets")
@pytest.mark.parametrize("posture", SANDBOXES)
def test_secret_probe_in_a_sandbox_finds_nothing_and_no_way_out(
    service: RunService, listener: int, posture: PostureId, engine: None
) -> None:
    """ "docker: no host secrets in the container's environment, a fresh HOME, a parent that is a
    process inside the container, and no route out (... not even to a port on your machine's
    127.0.0.1)"; gvisor: "as docker"; bubblewrap: "no credential-looking variables, a private
    HOME in its own /tmp, no route out ...; the parent environ it reads is the sandbox's own
    shell's, with no credential-looking names"."""
    found = _probe(service, posture, listener)
    assert found["secrets in env"].startswith("could not")
    assert found["~/.ssh"].startswith("could not")
    assert TOKEN not in found["parent environ"]
    assert found["network"].startswith("could not")


# traceback-demo -------------------------------------------------------------------------------


@pytest.mark.parametrize("posture", [*HOST, *SANDBOXES])
def test_traceback_demo_fails_as_itself_under_every_shell_posture(
    service: RunService, posture: PostureId, engine: None
) -> None:
    """ "the run ends as failed with exit code 1; stdout holds the progress line and stderr the
    whole traceback, shown apart, and nothing in the workspace changes"; hardened: "the limits
    never come into play"; docker: "the same traceback, with paths under
    /mnt/skills/traceback-demo"; gvisor: "identical to docker"; bubblewrap: "the same traceback
    with the same paths"."""
    ran = run_example(service, "traceback-demo", posture)
    assert (ran.result.status, ran.result.exit_code) == (RunStatus.FAILED, 1)
    assert ran.result.cause == "exited with code 1"
    assert "loading settings" in ran.stdout and "Traceback" not in ran.stdout
    assert "Traceback" in ran.stderr and "KeyError" in ran.stderr
    assert ran.result.changes == ()
    where = "/mnt/skills" if posture in CONTAINER_POSTURES else str(example_skills_dir())
    assert f'File "{where}/traceback-demo/scripts/fail.py"' in ran.stderr


# workspace-report -----------------------------------------------------------------------------


def test_workspace_report_writes_the_same_report_locally_and_hardened(
    service: RunService,
) -> None:
    """ "local: ... writes report.md; the changes panel lists the new file ..., and you can
    restore the workspace in one click"; hardened: "the same result, but with a private HOME
    and TMPDIR ...; the report is identical"."""
    local = run_example(service, "workspace-report", PostureId.LOCAL)
    hardened = run_example(service, "workspace-report", PostureId.HARDENED)
    for ran in (local, hardened):
        assert ran.result.status is RunStatus.OK
        assert [change.path for change in ran.result.changes] == ["report.md"]
    assert (local.workspace / "report.md").read_text() == (
        hardened.workspace / "report.md"
    ).read_text()
    homes = run_example(service, "workspace-report", PostureId.HARDENED, 'echo "$HOME $TMPDIR"')
    assert str(Path.home()) not in homes.stdout.split()
    restore_run(service.layout, service.history.get(local.run_id))
    assert not (local.workspace / "report.md").exists()


def test_workspace_report_under_bubblewrap_sees_its_binds_and_nothing_else(
    service: RunService, tmp_path: Path
) -> None:
    """ "bubblewrap: the same report: the skill folder and the workspace are bound at their own
    paths, the skill read-only, and the script sees nothing else of your files"."""
    local = run_example(service, "workspace-report", PostureId.LOCAL)
    ran = run_example(service, "workspace-report", PostureId.BUBBLEWRAP)
    assert ran.result.status is RunStatus.OK
    assert [change.path for change in ran.result.changes] == ["report.md"]
    assert (ran.workspace / "report.md").read_text() == (local.workspace / "report.md").read_text()
    mine = tmp_path / "my-notes.txt"
    mine.write_text("private\n")
    mine.parent.chmod(0o755)
    check = (
        f'echo "$SKILL_DIR $PWD"; touch "$SKILL_DIR/x" 2>/dev/null || echo read-only; '
        f"test -e {mine} && echo seen || echo unseen"
    )
    binds = run_example(service, "workspace-report", PostureId.BUBBLEWRAP, check)
    skill = str(example_skills_dir() / "workspace-report")
    assert binds.stdout.split() == [skill, str(binds.workspace), "read-only", "unseen"]


@pytest.mark.parametrize("posture", CONTAINERS)
def test_workspace_report_in_a_container_sees_its_mounts(
    service: RunService, posture: PostureId, engine: None
) -> None:
    """ "docker: the skill is mounted read-only at /mnt/skills/workspace-report and the
    workspace at /workspace; the script still succeeds because it writes only into the
    workspace"; gvisor: "as docker ... the result is the same"."""
    ran = run_example(service, "workspace-report", posture)
    assert ran.result.status is RunStatus.OK
    assert [change.path for change in ran.result.changes] == ["report.md"]
    mounts = run_example(
        service,
        "workspace-report",
        posture,
        'echo "$SKILL_DIR $PWD"; touch "$SKILL_DIR/x" 2>/dev/null || echo read-only',
    )
    assert mounts.stdout.split() == ["/mnt/skills/workspace-report", "/workspace", "read-only"]
    assert not (example_skills_dir() / "workspace-report" / "x").exists()


def test_every_posture_an_example_makes_a_claim_for_is_checked_here() -> None:
    """A SKILL.md that claims something for a posture these tests do not run fails: add the
    test with the claim."""
    checked = set(PostureId)
    for skill in (*PYTHON_SKILLS, "csv-to-markdown"):
        body = load_skill(example_skills_dir() / skill).body
        section = body.split("## What it shows under each posture", 1)[1]
        named = {posture for posture in PostureId if f"**{posture.value}**" in section}
        assert named == checked, skill
