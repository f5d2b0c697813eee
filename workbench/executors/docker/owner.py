"""Which process owns a workbench container, and removing session containers whose owner is gone.

`owner()` names this process (machine id, boot id, PID namespace, pid and start time), which pooled
containers carry in a label and session containers in their name (`session_name`, `name_owner`);
`owner_gone` is true only for an owner of this machine that is surely not running now, and
`reap_sessions` / `reap_killed_sessions` remove the session containers (and the skill processes in
them, and their volumes on an engine that does not see this machine's files) of such owners, e.g. a
workbench killed mid-run.
"""

import contextlib
import os
import re
import socket
from pathlib import Path
from typing import Any

import docker
from docker.errors import DockerException
from requests.exceptions import RequestException

from workbench.errors import ExecutorError
from workbench.executors.docker.engine import engine_client
from workbench.executors.docker.session import pooled, remove_container, remove_volumes
from workbench.executors.docker.spec import LABEL_APP, LABEL_SESSION

MACHINE_IDS = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
PID_NAMESPACE = Path("/proc/self/ns/pid")
SESSION_NAME_PREFIX = "skill-workbench-run-"
REAP_TIMEOUT_S = 10
_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9.-]")  # container names allow [A-Za-z0-9_.-]


def owner() -> str:
    """This process as a container's owner: "machine boot-id pid-namespace pid start"."""
    pid = os.getpid()
    return f"{_machine()} {_boot_id()} {_pid_namespace()} {pid} {_started(pid)}"


def owner_gone(text: str) -> bool:
    """True when the owner `text` ran on this machine and is gone (not for no owner, nor for
    one in an older format). One without a start time is gone when its pid is."""
    fields = text.split(" ")
    if len(fields) != 5:
        return False
    machine, boot, namespace, pid, start = fields
    if machine != _machine() or not (boot and namespace and pid.isdigit()):
        return False  # another machine's, or not known well enough
    this_boot = _boot_id()
    if boot != this_boot:
        return bool(this_boot)  # this machine restarted since
    if namespace != _pid_namespace():
        return False  # its pid is not ours to look up
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's
    now = _started(int(pid))
    return bool(start and now and now != start)  # the pid was reused


def session_name(token: str) -> str:
    """The name of a session container of this process: its owner in the name."""
    return f"{SESSION_NAME_PREFIX}{token}_{owner().replace(' ', '_')}"


def name_owner(name: str) -> str:
    """The owner a session container's name holds ("" for any other name)."""
    name = name.lstrip("/")
    fields = name.removeprefix(SESSION_NAME_PREFIX).split("_")  # no part holds "_"
    return " ".join(fields[1:]) if name.startswith(SESSION_NAME_PREFIX) and len(fields) == 6 else ""


def reap_sessions(client: docker.DockerClient) -> int:
    """Remove the session containers whose owner is gone (and the skill's processes in them);
    how many were removed. Blocking: call it in a thread. One that cannot be removed stays."""
    found: list[dict[str, Any]] = client.api.containers(all=True, filters={"label": [LABEL_APP]})
    removed = 0
    for item in found:
        names = item.get("Names") or ()
        if pooled(item) or not any(owner_gone(name_owner(str(name))) for name in names):
            continue
        try:
            remove_container(client.api, item["Id"])
            removed += 1
            remove_volumes(client.api, (item.get("Labels") or {}).get(LABEL_SESSION) or "-")
        except (DockerException, RequestException, ExecutorError):
            pass
    return removed


def reap_killed_sessions() -> int:
    """`reap_sessions` on the engine this process uses (at the app's start); 0 when none
    answers. Blocking: call it in a thread."""
    try:
        client = engine_client(REAP_TIMEOUT_S)
    except DockerException:  # no engine: nothing to remove
        return 0
    with contextlib.closing(client):
        try:
            return reap_sessions(client)
        except (DockerException, RequestException):
            return 0


def _machine() -> str:
    """This machine's id, else its host name, as a container name can hold it."""
    for path in MACHINE_IDS:
        with contextlib.suppress(OSError):
            if machine_id := path.read_text().strip():
                return _NOT_IN_NAMES.sub("-", machine_id)
    return _NOT_IN_NAMES.sub("-", socket.gethostname()) or "-"


def _boot_id() -> str:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return ""


def _pid_namespace() -> str:
    """The inode of this process's PID namespace; "" when that cannot be read."""
    try:
        return str(PID_NAMESPACE.stat().st_ino)
    except OSError:
        return ""


def _started(pid: int) -> str:
    """When process `pid` started (clock ticks after boot); "" when that cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    fields = stat.rpartition(")")[2].split()  # the command name may hold spaces and ")"
    return fields[19] if len(fields) > 19 else ""
