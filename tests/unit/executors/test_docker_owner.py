"""Container owners against real processes: this one, one that ended, a pid with another
start time, a live one in another PID namespace, another machine's under the same host name,
older formats; and the owner a session container's name holds."""

import contextlib
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import workbench.executors.docker.owner as docker_owner
from workbench.executors.docker.owner import name_owner, owner, owner_gone, session_name

ENGINE_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]+")  # what Docker and Podman accept
PRINT_OWNER = "from workbench.executors.docker.owner import owner; print(owner(), flush=True)"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a new PID namespace needs root")


def ended_owner() -> str:
    """The owner text of a process that has ended since."""
    command = [sys.executable, "-c", PRINT_OWNER]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


@contextlib.contextmanager
def namespaced_owner() -> Iterator[str]:
    """The owner text of a live process in a new PID namespace (as a workbench in Flatpak or in
    a container on this kernel): pid 1 there, a pid that means another process here."""
    code = f"{PRINT_OWNER}; import time; time.sleep(600)"
    argv = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", sys.executable, "-c"]
    with subprocess.Popen([*argv, code], stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None
            yield child.stdout.readline().strip()
        finally:
            child.kill()


def test_this_process_is_not_gone_and_one_that_ended_is() -> None:
    assert not owner_gone(owner())
    text = ended_owner()
    assert text.split(" ")[:3] == owner().split(" ")[:3]  # this machine, boot, PID namespace
    assert owner_gone(text)


def test_a_live_pid_with_another_start_time_is_a_reused_pid() -> None:
    machine, boot, namespace, pid, start = owner().split(" ")
    assert pid == str(os.getpid()) and start.isdigit()
    assert namespace == str(Path("/proc/self/ns/pid").stat().st_ino)
    assert owner_gone(f"{machine} {boot} {namespace} {pid} {int(start) + 1}")
    assert not owner_gone(f"{machine} {boot} {namespace} {pid} ")  # no start time: the pid's
    assert owner_gone(ended_owner().rpartition(" ")[0] + " ")


@needs_root
def test_a_live_owner_in_another_pid_namespace_is_not_gone() -> None:
    with namespaced_owner() as text:
        machine, boot, namespace, pid, start = text.split(" ")
        assert [machine, boot, pid] == [*owner().split(" ")[:2], "1"]
        assert namespace != owner().split(" ")[2]
        assert not owner_gone(text)  # pid 1 here is init, started at another time
        dead_here = ended_owner().split(" ")[3]
        assert not owner_gone(f"{machine} {boot} {namespace} {dead_here} {start}")


def test_another_machine_is_never_gone_even_under_this_host_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, boot, namespace, pid, start = ended_owner().split(" ")
    elsewhere = "0123456789abcdef0123456789abcdef"
    assert not owner_gone(f"{elsewhere} {boot} {namespace} {pid} {start}")
    assert not owner_gone(f"{elsewhere} 0-0-0 {namespace} {pid} {start}")  # not a reboot of ours
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())
    without_machine_id = f"{host} {boot} {namespace} {pid} {start}"  # named by its host name
    monkeypatch.setattr(docker_owner, "MACHINE_IDS", (tmp_path / "missing",))
    assert owner().split(" ")[0] == host
    assert owner_gone(without_machine_id)
    (tmp_path / "machine-id").write_text(f"{elsewhere}\n")
    monkeypatch.setattr(
        docker_owner, "MACHINE_IDS", (tmp_path / "missing", tmp_path / "machine-id")
    )
    assert owner().split(" ")[0] == elsewhere
    assert not owner_gone(without_machine_id)
    assert not owner_gone("")


def test_another_boot_of_this_machine_is_gone() -> None:
    machine, _, namespace, pid, start = owner().split(" ")
    assert owner_gone(f"{machine} 00000000-0000-0000-0000-000000000000 {namespace} {pid} {start}")


def test_owners_in_older_formats_are_never_gone() -> None:
    host = socket.gethostname()
    _, boot, _, pid, start = ended_owner().split(" ")
    assert not owner_gone(f"{host} {boot} {pid} {start}")  # before the machine id and namespace
    assert not owner_gone(f"{host} {boot} {pid}")  # before start times


def test_a_session_name_holds_its_owner_and_the_engine_accepts_it() -> None:
    name = session_name("0123abcd")
    assert ENGINE_NAME.fullmatch(name)
    assert name_owner(name) == name_owner(f"/{name}") == owner()
    older = "skill-workbench-run-0123abcd_host_" + "_".join(owner().split(" ")[1:4])
    assert name_owner(older) == ""
    assert name_owner("skill-workbench-pool-0123abcd") == ""
    assert name_owner("eager_turing") == ""
