"""What only the hardened posture promises: rlimits, a scrubbed environment, the read-back card."""

import asyncio
import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from tests.contract.conftest import Harness
from workbench.executors.hardened import executor as hardened_executor
from workbench.executors.hardened.executor import OWN_USERNS_CHECK
from workbench.executors.hardened.limits_exec import app_user_namespace
from workbench.executors.types import CancelToken, RunRequest, RunResult, RunStatus
from workbench.monitor.process import all_processes, run_tag, tagged_processes
from workbench.postures.model import MIB, Posture, PostureId
from workbench.workspace.safe_walk import remove_tree, walk

pytestmark = pytest.mark.timeout(60)
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching uid needs root")

MEMORY_BOMB = "x = []\nwhile True: x.append(bytearray(10**6))"


def test_python_memory_bomb_names_the_memory_limit(hardened: Harness) -> None:
    executor = hardened.start(hardened.posture(memory_bytes=256 * MIB))
    result = hardened.run("python3", "-c", MEMORY_BOMB, executor=executor).result
    assert result.status is RunStatus.OOM_KILLED
    assert result.cause == "memory limit 256 MiB (RLIMIT_AS)"
    assert "MemoryError" in result.stderr.text
    assert result.leftover_processes == 0


def test_bounded_fork_bomb_is_contained(hardened: Harness) -> None:
    executor = hardened.start(hardened.posture(pids=64, timeout_s=8))
    script = "i=0; while [ $i -lt 3000 ]; do sleep 5 & i=$((i+1)); done; wait"
    result = hardened.run("sh", "-c", script, executor=executor).result
    assert result.status in (RunStatus.LIMIT_EXCEEDED, RunStatus.TIMED_OUT)
    assert "process limit of 64" in result.cause or "process limit 64" in result.cause
    assert "RLIMIT_NPROC" in result.cause
    assert result.peak_processes <= 64
    assert result.leftover_processes == 0
    assert not tagged_processes(run_tag(result.run_id), all_processes())


def test_cpu_limit_ends_a_busy_loop(hardened: Harness) -> None:
    executor = hardened.start(hardened.posture(cpu_seconds=1, timeout_s=10))
    result = hardened.run("python3", "-c", "while True: pass", executor=executor).result
    assert result.status is RunStatus.LIMIT_EXCEEDED
    assert result.cause == "RLIMIT_CPU 1 s"
    assert result.signal in (24, 9)  # SIGXCPU, or SIGKILL at the hard limit


RAISE = """
import resource
for name in ("CPU", "AS", "NPROC", "NOFILE", "FSIZE", "CORE"):
    which = getattr(resource, "RLIMIT_" + name)
    soft, hard = resource.getrlimit(which)
    try:
        resource.setrlimit(which, (soft + 1, hard))
        print(name, "raised")
    except ValueError:
        print(name, "held")
"""


def test_no_limit_can_be_raised_by_the_command(hardened: Harness) -> None:
    result = hardened.run("python3", "-c", RAISE).result
    assert result.status is RunStatus.OK, result.stderr.text
    assert result.stdout.text.split() == [
        word
        for name in ("CPU", "AS", "NPROC", "NOFILE", "FSIZE", "CORE")
        for word in (name, "held")
    ]
    assert all(held for label, held in result.card.checks if label.startswith("RLIMIT_"))


def test_file_size_limit(hardened: Harness) -> None:
    executor = hardened.start(hardened.posture(file_size_bytes=MIB))
    script = "open('big', 'wb').write(bytes(3 * 1024 * 1024))"
    result = hardened.run("python3", "-c", script, executor=executor).result
    assert result.status is RunStatus.LIMIT_EXCEEDED
    assert result.cause == "file size limit 1 MiB (RLIMIT_FSIZE)"
    assert (hardened.workspace / "big").stat().st_size <= MIB


def test_canary_secrets_never_reach_the_command(
    hardened: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WB_CANARY_TOKEN", "canary-4f1d2b")
    monkeypatch.setenv("PLAIN_SETTING", "canary-plain-77")
    script = f"env; cat /proc/$PPID/environ; cat /proc/{os.getpid()}/environ; true"
    result = hardened.run("sh", "-c", script).result
    both = result.stdout.text + result.stderr.text
    assert "canary-4f1d2b" not in both
    assert "canary-plain-77" not in both
    assert {"WB_CANARY_TOKEN", "PLAIN_SETTING"} <= set(result.card.env_dropped)
    assert "WB_CANARY_TOKEN" not in result.card.env_kept
    assert set(result.card.env_kept) >= {"PATH", "SKILL_DIR", "WORKSPACE", "HOME", "TMPDIR"}
    assert "WORKBENCH_APP" in os.environ  # the app's own mark: neither passed nor listed
    assert "WORKBENCH_APP" not in {*result.card.env_kept, *result.card.env_dropped}


def test_credentials_pass_only_when_confirmed(
    hardened: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_API_KEY", "k-123")
    allowed = Posture(PostureId.HARDENED, env_allow=("PATH", "MY_API_KEY"))
    listed = hardened.run("sh", "-c", 'echo "[$MY_API_KEY]"', executor=hardened.start(allowed))
    assert listed.result.stdout.text == "[]\n"
    assert "MY_API_KEY" in listed.result.card.env_dropped
    confirmed = Posture(PostureId.HARDENED, confirmed_secret_env=("MY_API_KEY",))
    passed = hardened.run("sh", "-c", 'echo "[$MY_API_KEY]"', executor=hardened.start(confirmed))
    assert passed.result.stdout.text == "[k-123]\n"


def test_card_reads_back_the_applied_limits(hardened: Harness) -> None:
    executor = hardened.start(hardened.posture(memory_bytes=300 * MIB, pids=99))
    result = hardened.run("sleep", "0.2", executor=executor).result
    checks = dict(result.card.checks)
    assert checks["RLIMIT_AS 300 MiB"] is True
    assert checks["RLIMIT_NPROC 99"] is True
    assert checks["RLIMIT_CORE 0"] is True
    assert checks["no_new_privs (set-uid programs gain nothing)"] is True
    assert checks["CPU share 1 core(s) (needs a cgroup)"] is False  # honest: not applied
    assert checks["network off (the host's network stays reachable)"] is False
    # Root's runs get a throwaway uid, an ordinary user's a user namespace: neither is told off.
    assert checks.get(OWN_USERNS_CHECK, True) is True
    assert not any("user namespace" in warning.text for warning in result.warnings)


@pytest.mark.skipif(os.geteuid() == 0, reason="root's runs get a throwaway uid, no namespace")
def test_without_a_user_namespace_a_run_says_why_and_counts_all_your_processes(
    hardened: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hardened_executor, "_own_user_namespace_problem", lambda: "none here")
    executor = hardened.start(hardened.posture(pids=99))
    result = hardened.run("sh", "-c", "readlink /proc/self/ns/user", executor=executor).result
    checks = dict(result.card.checks)
    assert (checks[OWN_USERNS_CHECK], checks["RLIMIT_NPROC 99"]) == (False, True)
    assert result.stdout.text.strip() == app_user_namespace()
    assert any(
        warning.text.startswith("No user namespace of the run's own (none here): RLIMIT_NPROC")
        for warning in result.warnings
    )


def test_private_home_and_tmp_end_in_the_run_folder(hardened: Harness) -> None:
    result = hardened.run("sh", "-c", 'echo hi > "$HOME/h"; echo "$HOME|$TMPDIR"').result
    assert result.run_dir is not None
    home, tmp = result.stdout.text.strip().split("|")
    if os.geteuid() == 0:  # a private folder apart, copied in and removed afterwards
        assert Path(home).parent == Path(tmp).parent != result.run_dir
        assert not Path(home).parent.exists()
    else:
        assert (home, tmp) == (str(result.run_dir / "home"), str(result.run_dir / "tmp"))
    assert (result.run_dir / "home" / "h").read_text() == "hi\n"


def test_a_memory_limit_too_small_to_start_anything_is_refused(hardened: Harness) -> None:
    executor = hardened.start(hardened.posture(memory_bytes=1))
    result = hardened.run("sh", "-c", "echo hi", executor=executor).result
    assert result.status is RunStatus.ERROR
    assert result.cause == (
        "the memory limit 1 B is too small to start a program (RLIMIT_AS also counts its "
        "libraries): use at least 4 MiB"
    )
    small = hardened.start(hardened.posture(memory_bytes=8 * MIB))
    loader = hardened.run("python3", "-c", "print(1)", executor=small).result
    assert loader.status is RunStatus.OOM_KILLED  # the loader's complaint names the limit
    assert loader.cause == "memory limit 8 MiB (RLIMIT_AS)"
    smaller = hardened.start(hardened.posture(memory_bytes=4 * MIB))
    unmapped = hardened.run("python3", "-c", "print(1)", executor=smaller).result
    assert unmapped.status is RunStatus.FAILED  # the kernel kills it while mapping it
    assert unmapped.cause.startswith(
        "killed by signal SIGSEGV; the memory limit 4 MiB (RLIMIT_AS) may have stopped it"
    )


@pytest.mark.parametrize(
    ("limits", "script", "sign"),
    [
        ({"file_size_bytes": MIB}, "head -c 3000000 /dev/zero > big; echo rc=$?", "refused writes"),
        (
            {"memory_bytes": 128 * MIB},
            "python3 -c 'bytearray(300 * 2**20)'; echo survived",
            "failed allocations",
        ),
    ],
)
def test_a_limit_a_child_hit_is_noted_when_the_command_succeeds(
    hardened: Harness, limits: dict[str, int], script: str, sign: str
) -> None:
    executor = hardened.start(hardened.posture(**limits))
    result = hardened.run("sh", "-c", script, executor=executor).result
    assert result.status is RunStatus.OK
    assert result.cause.startswith(f"exited with code 0; its stderr shows {sign}: the ")
    assert result.cause.endswith("may have stopped part of its work")


@needs_root
def test_runs_as_a_throwaway_uid_and_gives_the_workspace_back(hardened: Harness) -> None:
    (hardened.workspace / "before.txt").write_text("x")
    result = hardened.run("sh", "-c", "id -u; echo new > made.txt; echo more >> before.txt").result
    uid = int(result.stdout.text)
    assert uid >= 0x60000000
    assert dict(result.card.checks)[f"runs as uid {uid}"] is True
    for name in ("before.txt", "made.txt"):
        st = (hardened.workspace / name).stat()
        assert (st.st_uid, st.st_gid) == (0, 0)
    assert (hardened.workspace / "before.txt").read_text() == "xmore\n"


@needs_root
def test_a_hard_link_to_a_root_only_file_lends_nothing(hardened: Harness) -> None:
    outside = hardened.workspace.parent / "root-only"
    outside.write_text("secret\n")
    outside.chmod(0o600)
    (hardened.workspace / "linked").hardlink_to(outside)
    script = "stat -c %u linked; cat linked; echo more >> linked; echo end"
    result = hardened.run("sh", "-c", script).result
    assert result.stdout.text == "0\nend\n"  # owned by root all along: neither read nor written
    assert "secret" not in result.stdout.text + result.stderr.text
    assert "Permission denied" in result.stderr.text
    assert outside.read_text() == "secret\n"
    assert (outside.stat().st_uid, outside.stat().st_gid) == (0, 0)


@needs_root
def test_overlapping_runs_share_the_workspace_loan(hardened: Harness) -> None:
    def request(name: str, pause: str) -> RunRequest:
        return RunRequest(("sh", "-c", f"sleep {pause}; echo {name} > {name}; id -u"))

    async def go() -> tuple[RunResult, RunResult]:
        return await asyncio.gather(
            hardened.executor.run(request("a", "0.2"), lambda c: None, CancelToken()),
            hardened.executor.run(request("b", "0.6"), lambda c: None, CancelToken()),
        )

    first, second = hardened.loop.run_until_complete(go())
    assert first.status is second.status is RunStatus.OK
    assert first.stdout.text == second.stdout.text  # one throwaway uid per session
    for name in ("a", "b"):
        assert (hardened.workspace / name).stat().st_uid == 0
    assert hardened.workspace.stat().st_uid == 0


@needs_root
def test_unreachable_workspace_is_a_clear_error(
    hardened: Harness, tmp_path_factory: pytest.TempPathFactory
) -> None:
    closed = tmp_path_factory.mktemp("closed")
    closed.chmod(0o700)
    inner = closed / "ws"
    inner.mkdir()
    hardened.workspace.rmdir()
    hardened.workspace.symlink_to(inner)
    result = hardened.run("true").result
    assert result.status is RunStatus.ERROR
    assert "out of reach" in result.cause


@needs_root
def test_private_dirs_fall_back_when_the_run_folder_is_closed(
    hardened: Harness, tmp_path: Path
) -> None:
    closed_runs = replace(hardened.session, runs_dir=tmp_path / "runs")  # parents are 0700
    executor = hardened.start(Posture(PostureId.HARDENED), closed_runs)
    result = hardened.run("sh", "-c", 'echo hi > "$HOME/h"; echo "$HOME"', executor=executor).result
    assert result.status is RunStatus.OK
    assert result.run_dir is not None
    assert not result.stdout.text.startswith(str(tmp_path))  # a reachable temp folder instead
    assert (result.run_dir / "home" / "h").read_text() == "hi\n"  # moved in afterwards
    assert not Path(result.stdout.text.strip()).exists()
    assert "regular files are copied into the run folder" in result.card.run_as


def _owners(root: Path) -> set[int]:
    return {entry.stat.st_uid for entry in walk(root)} | {root.stat().st_uid}


def _planted(run_dir: Path) -> list[str]:
    """What in the run folder is neither a folder nor a regular file (a link, a FIFO)."""
    return [
        e.rel
        for e in walk(run_dir)
        if not stat.S_ISDIR(e.stat.st_mode) | stat.S_ISREG(e.stat.st_mode)
    ]


@needs_root
@pytest.mark.parametrize(
    "script",
    [
        'echo destroyed > p; touch "$HOME/../x"',
        'echo destroyed > p; cd /; rm -rf "$HOME" "$TMPDIR"',
        'echo destroyed > p; ln -s "$WORKSPACE" "$HOME/ws"; mv "$HOME" "$HOME.gone"',
    ],
    ids=["next-to-home", "remove-home", "home-swapped-for-a-link"],
)
def test_a_skill_cannot_touch_the_folder_of_its_home(hardened: Harness, script: str) -> None:
    (hardened.workspace / "p").write_text("precious")
    result = hardened.run("sh", "-c", f'echo "$HOME"; {script}').result
    assert result.status is RunStatus.FAILED  # the kernel refused: a clear status, no crash
    assert "Permission denied" in result.stderr.text
    assert (hardened.workspace / "p").read_text() == "destroyed\n"
    assert _owners(hardened.workspace) == {0}  # the workspace is given back
    private = Path(result.stdout.text.splitlines()[0]).parent
    assert not private.exists()  # removed
    assert result.run_dir is not None
    assert not _planted(result.run_dir)


@needs_root
def test_whatever_a_skill_leaves_in_its_home_it_cannot_stop_the_give_back(
    hardened: Harness,
) -> None:
    deep = "python3 -c \"import os\nfor i in range(1500): os.mkdir('d'); os.chdir('d')\""
    script = (
        f'echo "$HOME"; {deep}; cd "$HOME"; {deep}; cd "$HOME"; echo kept > kept.txt; '
        'ln -s / root; ln -s /etc/shadow "$TMPDIR/shadow"; mkfifo "$TMPDIR/fifo"; '
        "mkdir closed; echo x > closed/f; chmod 000 closed; chmod 777 ."
    )
    result = hardened.run("sh", "-c", script).result
    assert result.run_dir is not None
    try:
        assert result.status is RunStatus.OK, result.stderr.text
        assert _owners(hardened.workspace) == {0}
        assert not Path(result.stdout.text.strip()).parent.exists()
        assert (result.run_dir / "home" / "kept.txt").read_text() == "kept\n"
        assert (result.run_dir / "home" / "closed" / "f").read_text() == "x\n"
        assert not _planted(result.run_dir)
    finally:
        for deep_tree in (hardened.workspace / "d", result.run_dir / "home" / "d"):
            remove_tree(deep_tree)  # the fixture's shutil.rmtree cannot


@needs_root
def test_what_the_uid_left_outside_the_workspace_is_removed_and_said(
    hardened: Harness,
) -> None:
    tag = os.urandom(4).hex()
    left = [
        Path(f"/tmp/wb-left-{tag}"),
        Path(f"/var/tmp/wb-left-{tag}"),
        Path(f"/dev/shm/wb-{tag}"),
    ]
    keep = Path(f"/tmp/wb-keep-{tag}")
    keep.write_text("root's")
    script = (
        f"echo a > {left[0]}; mkdir -p {left[1]}/sub; echo b > {left[1]}/sub/f; "
        f"ln -s {keep} {left[2]}; ipcmk -M 4096 | tr -dc 0-9"
    )
    try:
        result = hardened.run("sh", "-c", script).result
        assert result.status is RunStatus.OK, result.stderr.text
        assert not [path for path in left if path.exists() or path.is_symlink()]
        assert keep.read_text() == "root's"
        shm_id = result.stdout.text
        assert shm_id and all(
            line.split()[1] != shm_id
            for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
        )
        notes = [w.text for w in result.warnings if w.text.startswith("Removed what")]
        assert notes == [
            "Removed what the command left outside the workspace: 1 entry in /tmp, "
            "1 entry in /var/tmp, 1 entry in /dev/shm, 1 SysV shared memory segment."
        ]
    finally:
        keep.unlink()
