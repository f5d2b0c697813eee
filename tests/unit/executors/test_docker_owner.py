"""Container owners against real processes: this one, one that ended, a pid with another
start time, another machine's; and the owner a session container's name holds."""

import os
import re
import subprocess
import sys

from workbench.executors.docker_owner import name_owner, owner, owner_gone, session_name

ENGINE_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]+")  # what Docker and Podman accept


def ended_owner() -> str:
    """The owner text of a process that has ended since."""
    code = "from workbench.executors.docker_owner import owner; print(owner())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_this_process_is_not_gone_and_one_that_ended_is() -> None:
    assert not owner_gone(owner())
    text = ended_owner()
    assert text.split(" ")[:2] == owner().split(" ")[:2]  # this host, this boot
    assert owner_gone(text)


def test_a_live_pid_with_another_start_time_is_a_reused_pid() -> None:
    host, boot, pid, start = owner().split(" ")
    assert pid == str(os.getpid()) and start.isdigit()
    assert owner_gone(f"{host} {boot} {pid} {int(start) + 1}")
    assert not owner_gone(f"{host} {boot} {pid}")  # written before start times were


def test_other_machines_and_no_owner_are_never_gone_and_another_boot_is() -> None:
    host, boot, pid, start = ended_owner().split(" ")
    assert not owner_gone(f"elsewhere {boot} {pid} {start}")
    assert not owner_gone("")
    assert owner_gone(f"{host} 00000000-0000-0000-0000-000000000000 {os.getpid()} {start}")


def test_a_session_name_holds_its_owner_and_the_engine_accepts_it() -> None:
    name = session_name("0123abcd")
    assert ENGINE_NAME.fullmatch(name)
    assert name_owner(name) == name_owner(f"/{name}") == owner()
    assert name_owner("skill-workbench-pool-0123abcd") == ""
    assert name_owner("eager_turing") == ""
