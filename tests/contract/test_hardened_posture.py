"""What only the hardened posture promises: rlimits, a scrubbed environment, the read-back card."""

import asyncio
import os
from dataclasses import replace
from pathlib import Path

import pytest

from tests.contract.conftest import Harness
from workbench.executors.types import CancelToken, RunRequest, RunResult, RunStatus
from workbench.monitor.process import run_tag, tagged_processes
from workbench.postures import MIB, Posture, PostureId

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
    assert not tagged_processes(run_tag(result.run_id))


def test_cpu_limit_ends_a_busy_loop(hardened: Harness) -> None:
    executor = hardened.start(hardened.posture(cpu_seconds=1, timeout_s=10))
    result = hardened.run("python3", "-c", "while True: pass", executor=executor).result
    assert result.status is RunStatus.LIMIT_EXCEEDED
    assert result.cause == "RLIMIT_CPU 1 s"
    assert result.signal in (24, 9)  # SIGXCPU, or SIGKILL at the hard limit


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


def test_private_home_and_tmp_inside_the_run_folder(hardened: Harness) -> None:
    result = hardened.run("sh", "-c", 'echo hi > "$HOME/h"; echo "$HOME|$TMPDIR"').result
    assert result.run_dir is not None
    home, tmp = result.stdout.text.strip().split("|")
    assert (home, tmp) == (str(result.run_dir / "home"), str(result.run_dir / "tmp"))
    assert (result.run_dir / "home" / "h").read_text() == "hi\n"


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
    assert "moved into the run folder" in result.card.run_as
