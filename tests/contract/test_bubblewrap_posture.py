"""What only the bubblewrap posture promises: its filesystem view, its filter, limits it cannot
raise, the disk limit, the allow-list proxy and its log, and the card that reads them back."""

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from tests.contract.conftest import Harness, zombie_children
from workbench.executors.bubblewrap.availability import check
from workbench.executors.process.reaper import become_subreaper
from workbench.executors.types import RunStatus
from workbench.monitor.process import process_clock
from workbench.postures.model import MIB, Posture, PostureId

pytestmark = pytest.mark.timeout(60)

PROXY_CLIENT = """
import socket, sys, urllib.request
for port in sys.argv[1:]:
    try:
        print(port, urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read().decode())
    except Exception as error:
        print(port, "refused", error)
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)
    print("direct reached")
except OSError:
    print("direct failed")
"""


class Server:
    """A loopback HTTP server in the harness's loop that answers every request with `name`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, name: str) -> None:
        self.name = name
        self.hits = 0
        self.server = loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        self.hits += 1
        body = self.name.encode()
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()


@pytest.fixture
def servers(bubblewrap: Harness) -> Iterator[tuple[Server, Server]]:
    pair = (Server(bubblewrap.loop, "first"), Server(bubblewrap.loop, "second"))
    yield pair
    for server in pair:
        server.server.close()


def test_an_allowed_loopback_server_is_reached_a_second_refused_and_both_logged(
    bubblewrap: Harness, servers: tuple[Server, Server]
) -> None:
    first, second = servers
    posture = Posture(PostureId.BUBBLEWRAP, allow_hosts=(f"127.0.0.1:{first.port}",))
    executor = bubblewrap.start(posture)
    argv = ("python3", "-c", PROXY_CLIENT, str(first.port), str(second.port))
    result = bubblewrap.run(*argv, executor=executor).result
    assert result.status is RunStatus.OK, result.cause + result.stderr.text
    lines = result.stdout.text.splitlines()
    assert lines[0] == f"{first.port} first"
    assert lines[1].startswith(f"{second.port} refused HTTP Error 403")
    assert lines[2] == "direct failed"  # only through the proxy: the sandbox has no route
    assert (first.hits, second.hits) == (1, 0)
    allowed, refused = result.network_log
    assert (allowed.host, allowed.port, allowed.verdict) == ("127.0.0.1", first.port, "allowed")
    assert allowed.method == "GET" and allowed.bytes_received > len("first")
    assert (refused.host, refused.port, refused.verdict) == ("127.0.0.1", second.port, "refused")
    assert refused.bytes_sent == refused.bytes_received == 0
    assert 0 <= allowed.t <= refused.t <= result.wall_seconds
    assert dict(result.card.checks)["the proxy listens on 127.0.0.1:3128 inside"] is True


def test_checking_the_posture_leaves_the_app_no_zombie(bubblewrap: Harness) -> None:
    """The availability check's probe sandbox ends whole: none of its processes is left to the
    app (a subreaper) as a zombie, which it would keep, since it reaps orphans only at a run's
    kill and only those born since that run began."""
    assert become_subreaper()
    since = process_clock() - 0.05
    for _ in range(3):
        assert check(None).available
    time.sleep(0.2)  # for whatever the probe left to end
    assert zombie_children(since) == []


def test_without_allowed_hosts_there_is_no_proxy_and_no_network(bubblewrap: Harness) -> None:
    result = bubblewrap.run("sh", "-c", "env | grep -ci _proxy; cat /proc/net/dev").result
    assert result.stdout.text.splitlines()[0] == "0"
    assert [line.split(":")[0].strip() for line in result.stdout.text.splitlines()[3:]] == ["lo"]
    assert result.network_log == ()


def test_the_card_reads_back_every_control_held(bubblewrap: Harness) -> None:
    result = bubblewrap.run("true").result
    checks = dict(result.card.checks)
    not_held = [name for name, held in checks.items() if not held]
    assert not_held == ["CPU share 1 core(s) (needs a cgroup)"]
    assert checks["hard limits equal soft ones: it cannot raise them"] is True
    assert checks["its own user, mount, PID, IPC, network, UTS and cgroup namespaces"] is True
    assert any(name.startswith("Landlock ABI") for name in checks)
    assert "bwrap 0." in result.card.run_as


def test_it_sees_only_usr_the_skill_and_the_workspace(
    bubblewrap: Harness, reachable_dir: Path
) -> None:
    (reachable_dir / "secret.txt").write_text("secret")
    script = (
        f"cat {reachable_dir}/secret.txt; ls /; ls /root /home; echo $HOME; "
        "echo x > /usr/x; echo x > /x; echo x > $SKILL_DIR/x; echo ok > made; ps ax | wc -l"
    )
    result = bubblewrap.run("sh", "-c", script).result
    out, err = result.stdout.text.splitlines(), result.stderr.text
    assert "secret" not in result.stdout.text
    assert {"dev", "etc", "proc", "tmp", "usr"} <= set(out[:-2])
    assert not {"home", "root", "run", "var", "srv", "mnt"} & set(out[:-2])
    assert out[-2] == "/tmp/home"
    assert err.count("Read-only file system") == 3
    assert (bubblewrap.workspace / "made").read_text() == "ok\n"
    assert int(out[-1]) <= 5  # ps, wc, sh and its PID 1: no process of the host


def test_its_limits_cannot_be_raised_and_the_filter_refuses(bubblewrap: Harness) -> None:
    script = (
        "ulimit -H -t unlimited || echo cpu-held; ulimit -S -v unlimited || echo as-held; "
        "unshare -U true || echo unshare-refused; fallocate -l 1M f || echo fallocate-refused; "
        'python3 -c \'import socket; socket.socketpair(); print("pair-ok"); '
        "socket.socket(socket.AF_UNIX)' || echo unix-refused"
    )
    result = bubblewrap.run("sh", "-c", script).result
    assert result.stdout.text.split() == [
        "cpu-held", "as-held", "unshare-refused", "fallocate-refused", "pair-ok", "unix-refused"
    ]  # fmt: skip
    assert "Operation not permitted" in result.stderr.text
    assert "Operation not supported" in result.stderr.text


def test_the_disk_limit_ends_a_run_that_writes_more(bubblewrap: Harness) -> None:
    executor = bubblewrap.start(bubblewrap.posture(disk_bytes=8 * MIB))
    fill = "i=0; while [ $i -lt 64 ]; do head -c 1048576 /dev/zero > f$i; i=$((i+1)); done"
    result = bubblewrap.run("sh", "-c", fill, executor=executor).result
    assert result.status is RunStatus.LIMIT_EXCEEDED
    assert result.cause.startswith("disk limit 8 MiB (it wrote ")
    assert len(list(bubblewrap.workspace.iterdir())) < 32
    assert result.leftover_processes == 0


def test_a_fork_bomb_stops_at_the_process_limit(bubblewrap: Harness) -> None:
    executor = bubblewrap.start(bubblewrap.posture(pids=32, timeout_s=8))
    script = "i=0; while [ $i -lt 500 ]; do sleep 5 & i=$((i+1)); done; wait"
    result = bubblewrap.run("sh", "-c", script, executor=executor).result
    assert result.status in (RunStatus.LIMIT_EXCEEDED, RunStatus.TIMED_OUT)
    assert "RLIMIT_NPROC" in result.cause
    assert result.peak_processes <= 32 + 1  # and bwrap itself, outside the namespace
    assert result.leftover_processes == 0


def test_a_run_is_gone_when_the_workbench_is_killed(reachable_dir: Path) -> None:
    token = f"{time.time_ns() % 10**6 / 10**4 + 50:.4f}"  # a sleep time no other test uses
    for folder in ("skill", "workspace"):
        (reachable_dir / folder).mkdir()
    (reachable_dir / "skill" / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\n")
    command = [sys.executable, "-m", "workbench", "run", "--posture", "bubblewrap", "--skill"]
    command += [str(reachable_dir / "skill"), "--workspace", str(reachable_dir / "workspace")]
    command += ["--", "sh", "-c", f"setsid sleep {token} & sleep {token}"]
    app = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def sleepers() -> list[psutil.Process]:
        return [
            p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", token]
        ]

    try:
        deadline = time.monotonic() + 20
        while len(sleepers()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(sleepers()) == 2
        os.kill(app.pid, signal.SIGKILL)
        app.wait()
        deadline = time.monotonic() + 5
        while sleepers() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sleepers() == []
    finally:
        app.kill()
        for process in sleepers():
            process.kill()


def test_skill_folder_and_workspace_out_of_reach_is_a_clear_error(bubblewrap: Harness) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root runs commands as a throwaway uid")
    closed = bubblewrap.workspace.parent / "closed"
    closed.mkdir(mode=0o700)
    (closed / "ws").mkdir()
    session = replace(bubblewrap.session, workspace=closed / "ws")
    executor = bubblewrap.start(Posture(PostureId.BUBBLEWRAP), session)
    result = bubblewrap.run("true", executor=executor).result
    assert result.status is RunStatus.ERROR
    assert "the throwaway user the bubblewrap posture runs commands as" in result.cause
