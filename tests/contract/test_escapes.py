"""Escapes that drop the run's tag (`env -i`, a made-up tag) and leave the tree still end with
the run.

Checked independently of the workbench's own tag scan: each test puts a unique marker in the
escapee's command line (`sleep 60.NNNNNN`) and looks for it in the host's process list.
"""

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace

import psutil
import pytest

from tests.contract.conftest import Harness
from workbench.executors.hardened.limits_exec import PR_SET_CHILD_SUBREAPER, prctl
from workbench.executors.process import reaper
from workbench.executors.process.reaper import (
    Reach,
    RunScope,
    become_subreaper,
    collect,
    escapees,
    kill_run,
    spawning,
)
from workbench.executors.types import CancelToken, RunRequest, RunResult, RunStatus
from workbench.monitor.process import (
    RUN_TAG_ENV,
    carries_tag,
    descendants,
    proc_children,
    process_clock,
    run_tag,
)
from workbench.postures.model import PostureId

pytestmark = pytest.mark.timeout(60)

MADE_UP = f"{RUN_TAG_ENV}=20200101-000000-madeup"  # the tag of no run
ESCAPES = {
    "setsid-env-i": "(setsid env -i sleep {m} </dev/null >/dev/null 2>&1 &)",
    "double-fork-env-i": "(env -i sh -c 'sleep {m} & exit' </dev/null >/dev/null 2>&1 &)",
    "setsid-made-up-tag": f"(setsid env -i {MADE_UP} sleep {{m}} </dev/null >/dev/null 2>&1 &)",
    "fork-made-up-tag": f"(env {MADE_UP} sh -c 'sleep {{m}} & exit' </dev/null >/dev/null &)",
}


def _marker() -> str:
    return f"60.{secrets.randbelow(900_000) + 100_000}"


def _marked(marker: str) -> list[int]:
    """Live processes whose command line holds `marker` (zombies have none)."""
    return [p.pid for p in psutil.process_iter(["cmdline"]) if marker in (p.info["cmdline"] or ())]


def _gone(marker: str) -> bool:
    """No process holds `marker`, looking twice (an escapee that was missed would exec)."""
    if _marked(marker):
        return False
    time.sleep(0.3)
    return not _marked(marker)


def _kill_marked(marker: str) -> None:
    for pid in _marked(marker):
        os.kill(pid, 9)


@pytest.mark.parametrize("escape", ESCAPES.values(), ids=ESCAPES.keys())
def test_untagged_escapee_left_behind_is_killed(host_harness: Harness, escape: str) -> None:
    marker = _marker()
    try:
        script = escape.format(m=marker) + "; sleep 0.3; echo done"
        result = host_harness.run("sh", "-c", script).result
        assert result.status is RunStatus.OK
        assert result.stdout.text == "done\n"
        assert result.leftover_processes == 0
        assert "killed 1 background process it left behind" in result.cause
        if host_harness.posture_id is not PostureId.BUBBLEWRAP:  # its loader does not name them
            assert any(f"'sleep {marker}'" in w.text for w in result.warnings), result.warnings
        assert _gone(marker)
    finally:
        _kill_marked(marker)


@pytest.mark.parametrize("escape", ESCAPES.values(), ids=ESCAPES.keys())
def test_timeout_kills_untagged_escapees(host_harness: Harness, escape: str) -> None:
    executor = host_harness.start(host_harness.posture(timeout_s=1))
    marker = _marker()
    try:
        script = escape.format(m=marker) + "; sleep 100"
        result = host_harness.run("sh", "-c", script, executor=executor).result
        assert result.status is RunStatus.TIMED_OUT
        assert result.leftover_processes == 0
        assert _gone(marker)
    finally:
        _kill_marked(marker)


def test_an_older_untagged_child_of_the_app_is_left_alone(host_harness: Harness) -> None:
    marker = _marker()
    with psutil.Popen(["setsid", "env", "-i", "sleep", marker]) as bystander:
        time.sleep(0.2)  # born before the run (which allows 50 ms for clock granularity)
        try:
            result = host_harness.run("sh", "-c", "setsid sleep 60 & echo done").result
            assert result.leftover_processes == 0
            assert bystander.is_running()
            assert bystander.status() != psutil.STATUS_ZOMBIE
        finally:
            bystander.kill()
            bystander.wait()


def test_a_helper_the_app_detaches_during_a_run_is_left_alone(host_harness: Harness) -> None:
    marker = _marker()
    helpers: list[psutil.Popen] = []

    def detach() -> None:  # like Qt opening a file: own session, the app's environment
        helpers.append(psutil.Popen(["setsid", "sleep", marker]))

    host_harness.loop.call_later(0.1, detach)
    try:
        result = host_harness.run("sh", "-c", "sleep 0.5").result
        assert result.status is RunStatus.OK
        assert result.leftover_processes == 0
        (helper,) = helpers
        assert helper.is_running()
        assert helper.status() != psutil.STATUS_ZOMBIE
    finally:
        for helper in helpers:
            helper.kill()
            helper.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="switching uid needs root")
def test_no_process_of_the_throwaway_uid_survives(hardened: Harness) -> None:
    marker = _marker()
    executor = hardened.start(hardened.posture(timeout_s=1))
    try:
        script = "id -u; " + ESCAPES["setsid-env-i"].format(m=marker) + "; sleep 100"
        result = hardened.run("sh", "-c", script, executor=executor).result
        uid = int(result.stdout.text)
        assert result.status is RunStatus.TIMED_OUT
        assert result.leftover_processes == 0
        assert [p.pid for p in psutil.process_iter(["uids"]) if p.info["uids"].real == uid] == []
    finally:
        _kill_marked(marker)


# Its own foreground child without the tag, and a tagged escapee its monitor has seen: under
# hardened as root both run as the session's uid, which the first run's kill scans.
SECOND = "(setsid sh -c 'sleep 1.2; echo escaped > e.txt' &); env -i sleep 1.5; echo b"


def test_a_concurrent_runs_processes_are_left_alone(host_harness: Harness) -> None:
    def request(script: str) -> RunRequest:
        return RunRequest(("sh", "-c", script))

    async def go() -> tuple[RunResult, RunResult]:
        return await asyncio.gather(
            host_harness.executor.run(request("sleep 0.6; echo a"), lambda c: None, CancelToken()),
            host_harness.executor.run(request(SECOND), lambda c: None, CancelToken()),
        )

    first, second = host_harness.loop.run_until_complete(go())
    assert (first.stdout.text, second.stdout.text) == ("a\n", "b\n")
    assert first.status is second.status is RunStatus.OK
    assert "background" not in first.cause
    assert (host_harness.workspace / "e.txt").read_text() == "escaped\n"


def test_a_run_root_not_yet_execd_is_left_alone_while_it_is_spawned() -> None:
    scope = RunScope(tag=run_tag("another-run"), since=process_clock() - 1)
    pid = os.fork()  # what spawning a root does first: the app's program, in a session of its own
    if pid == 0:
        os.setsid()
        time.sleep(30)
        os._exit(0)
    try:
        until_born = time.monotonic() + 5
        while os.getsid(pid) == os.getsid(0) and time.monotonic() < until_born:
            time.sleep(0.01)
        assert pid in escapees(scope, set())  # once exec'd, a process like it would be one
        with spawning(run_tag("the-run-being-spawned")):
            assert pid not in escapees(scope, set())
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_a_run_that_cannot_start_a_process_is_its_root_alone() -> None:
    """A QuickJS worker sets RLIMIT_NPROC 0 before any skill code: its kill scans nothing, so a
    process elsewhere that carries its tag is not looked for (a run that may fork finds it)."""
    tag_id = f"alone-{secrets.token_hex(4)}"
    root = subprocess.Popen(["sleep", "30"])
    tagged = subprocess.Popen(["sleep", "30"], env={**os.environ, RUN_TAG_ENV: tag_id})
    try:
        until_execd = time.monotonic() + 5  # its environment shows once its exec is done
        while not carries_tag(tagged.pid, run_tag(tag_id)) and time.monotonic() < until_execd:
            time.sleep(0.01)
        since = process_clock() - 1
        process = psutil.Process(root.pid)
        may_fork = RunScope(run_tag(tag_id), since)
        assert {root.pid, tagged.pid} <= set(collect(process, may_fork, (), Reach.MACHINE))
        alone = replace(may_fork, alone=True)
        assert set(collect(process, alone, (), Reach.MACHINE)) == {root.pid}
    finally:
        for child in (root, tagged):
            child.kill()
            child.wait()


@contextlib.contextmanager
def _tagged_grandchild(tag_id: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A helper in the app's session (no tag) and its child, a `sleep 31` that carries run
    `tag_id`'s tag (its pid); both are ended and reaped on the way out."""
    script = f"env {RUN_TAG_ENV}={tag_id} sleep 31 & echo $!; wait"
    with subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE) as helper:
        try:
            assert helper.stdout is not None
            pid = int(helper.stdout.readline())
            sleep = psutil.Process(pid)  # killed through it: never a reused pid
            try:
                until_execd = time.monotonic() + 5  # its environment shows once it is exec'd
                while not carries_tag(pid, run_tag(tag_id)):
                    assert time.monotonic() < until_execd
                    time.sleep(0.01)
                yield helper, pid
            finally:
                with contextlib.suppress(psutil.NoSuchProcess):
                    sleep.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    helper.wait(5)  # its `wait` reaps the sleep
        finally:
            helper.kill()


def _ended(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_tagged_process_below_a_helper_of_the_app_is_found() -> None:
    """The run's tag is looked for in the whole subtree of the app (a subreaper), not only its
    children: here below an untagged helper in the app's own session."""
    assert become_subreaper()
    tag_id = f"below-{secrets.token_hex(4)}"
    with subprocess.Popen(["sleep", "30"]) as root, _tagged_grandchild(tag_id) as (_, tagged):
        try:
            scope = RunScope(run_tag(tag_id), process_clock() - 1)
            process = psutil.Process(root.pid)
            assert tagged in collect(process, scope, (), Reach.SUBTREE)
            assert tagged not in collect(process, scope, (), Reach.CHILDREN)
        finally:
            root.kill()


def test_a_tagged_process_outside_the_app_is_killed_with_its_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run's process can leave the app's subtree though the app is a subreaper: one that joined
    a PID namespace made elsewhere (nsenter) goes to that namespace's init when its parent exits.
    Made here by orphaning it while the app adopts none: the search below the app misses it (and
    is the whole machine when the app is no subreaper); the kill's last check finds it."""
    assert become_subreaper()
    tag_id = f"away-{secrets.token_hex(4)}"
    with (
        subprocess.Popen(["sleep", "30"]) as root,
        _tagged_grandchild(tag_id) as (helper, tagged),
    ):
        try:
            prctl(PR_SET_CHILD_SUBREAPER, 0)
            try:
                helper.kill()  # the sleep is orphaned, and not to this process
                helper.wait()
                until_adopted = time.monotonic() + 5
                while psutil.Process(tagged).ppid() == helper.pid:
                    assert time.monotonic() < until_adopted
                    time.sleep(0.01)
            finally:
                assert become_subreaper()
            assert tagged not in descendants(proc_children(os.getpid()))
            scope = RunScope(run_tag(tag_id), process_clock() - 1)
            process = psutil.Process(root.pid)
            assert tagged not in collect(process, scope, (), Reach.SUBTREE)
            with monkeypatch.context() as patch:
                patch.setattr(reaper, "_subreaper_pid", 0)
                assert tagged in collect(process, scope, (), Reach.SUBTREE)
            report = asyncio.run(kill_run(process, scope, ()))
            assert (report.signalled, report.leftover, report.commands) == (2, 0, ("sleep 31",))
            assert _ended(tagged)
        finally:
            root.kill()
