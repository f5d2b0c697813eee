"""Whether a claimed pooled container may be handed out: clean, and its spare folder honest.

`clean_at_claim` (blocking; call it in a thread) checks the container runs the posture's current
image, has had no exec since it was created and runs only its idle processes (through `docker top`
on runc, a /proc listing from inside under runsc); `spare_of` checks that the spare folder a
fresh-workspace container's labels name is inside the spares folder, named `.pool-...`, and really
mounted as its /workspace.
"""

import calendar
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import docker

from workbench.executors.docker.executor import runtime_of
from workbench.executors.docker.spec import SUPERVISOR_NAME, WORKSPACE_MOUNT
from workbench.executors.warm.container_claims import SPARE_PREFIX
from workbench.postures.model import Posture

IDLE_SLEEP = " sleep 3600"  # how the supervisor (spec.SUPERVISOR_SCRIPT) waits
# One line per process, "pid (comm) state ppid ...", and first the lister's own pid; only shell
# builtins, so the lister forks nothing that would show in its own listing.
LIST_PROCS = 'echo "$$"; for d in /proc/[0-9]*; do read -r s < "$d/stat" && echo "$s"; done'
_TIME = re.compile(r"^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(.*)$")


def clean_at_claim(client: docker.DockerClient, attrs: dict[str, Any], posture: Posture) -> bool:
    """Running, never exec'd into, only its idle processes, on the tag's current image."""
    if attrs["State"].get("Running") is not True:
        return False
    if client.images.get(posture.image).id != attrs["Image"]:
        return False
    if execs_since_created(client, attrs):
        return False
    if runtime_of(posture) == "runsc":
        return idle_inside(client.api, attrs["Id"])
    top = client.api.top(attrs["Id"])
    # Docker splits a row into columns, Podman gives one line: the command comes last.
    rows = [" ".join(map(str, row)) for row in top.get("Processes") or ()]
    # The init and the supervisor's shell, then its sleep (or its fork, or nothing yet).
    supervisor = sum(row.endswith(f" {SUPERVISOR_NAME}") for row in rows)
    idle = supervisor + sum(row.endswith(IDLE_SLEEP) for row in rows) == len(rows)
    return idle and 2 <= supervisor <= 3 and 2 <= len(rows) <= 3


def execs_since_created(client: docker.DockerClient, attrs: dict[str, Any]) -> int:
    """How many execs the engine recorded in the container since it was created, up to the
    engine's clock now (to the nanosecond it gives)."""
    created = attrs["Created"][:19]  # "2026-11-22T16:11:02.123456789Z" (UTC) -> seconds
    since = calendar.timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%S"))
    filters = {"container": attrs["Id"], "event": "exec_create"}
    until = engine_now(client)
    # Given as text, docker-py passes the fraction on (a datetime it cuts to whole seconds).
    stamp = f"{until:.6f}"
    events = client.api.events(since=since, until=stamp, filters=filters)  # type: ignore[call-overload]
    return sum(1 for _ in events)


def engine_now(client: docker.DockerClient) -> float:
    """The engine's clock (its `SystemTime`), as a Unix time; this machine's if it gives none."""
    match = _TIME.match(str(client.api.info().get("SystemTime") or ""))
    if match is None:
        return time.time()
    whole, fraction, zone = match.groups()
    stamp = datetime.fromisoformat(whole + (zone.replace("Z", "+00:00") or "+00:00"))
    return stamp.timestamp() + float(f"0.{fraction or 0}")


def idle_inside(api: docker.APIClient, container_id: str) -> bool:
    """True when /proc inside holds only the init and the supervisor (`gvisor_supervisor`),
    besides the lister itself."""
    exec_id = api.exec_create(container_id, ["sh", "-c", LIST_PROCS], user="0:0")["Id"]
    output = api.exec_start(exec_id).decode(errors="replace").splitlines()
    if api.exec_inspect(exec_id).get("ExitCode") != 0 or not output:
        return False
    me, parsed = output[0].strip(), [_pid_comm_ppid(line) for line in output[1:]]
    rows = [row for row in parsed if row is not None]
    if len(rows) != len(parsed) or not any(row[0] == me for row in rows):
        return False
    others = [row for row in rows if row[0] != me]
    init = [row for row in others if row[0] == "1" and row[1] == "docker-init"]
    supervisor = [row for row in others if row[2] == "1" and row[1] == "python3"]
    return len(init) == 1 and len(supervisor) == 1 and len(others) == 2


def _pid_comm_ppid(line: str) -> tuple[str, str, str] | None:
    """pid, command name and parent pid from a /proc/PID/stat line (the name may hold
    spaces and parentheses: it ends at the last ')')."""
    head, paren, tail = line.rpartition(")")
    pid, _, comm = head.partition(" (")
    fields = tail.split()
    if not paren or not comm or len(fields) < 2:
        return None
    return pid.strip(), comm, fields[1]


def spare_of(attrs: dict[str, Any], labels_spare: str, spares_dir: Path | None) -> Path | None:
    """The spare folder the labels name, if it is in `spares_dir`, named `.pool-...`, and the
    folder the container mounts as /workspace; otherwise None."""
    spare = Path(labels_spare)
    mounted = [
        mount.get("Source")
        for mount in attrs.get("Mounts") or ()
        if mount.get("Destination") == WORKSPACE_MOUNT
    ]
    honest = spares_dir is not None and spare.is_absolute() and spare.parent == spares_dir
    honest = honest and spare.name.startswith(SPARE_PREFIX) and mounted == [str(spare)]
    return spare if honest else None
