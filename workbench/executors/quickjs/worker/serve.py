"""A warm QuickJS worker: started before its run, it waits on its control socket.

Started by `workbench.executors.warm.quickjs` as `python -I -m
workbench.executors.quickjs.worker.serve SPEC`, in /, with no environment but the run tag: it knows
no skill or workspace before its run. SPEC is JSON: `control_fd` (one end of a Unix stream socket
pair), `fetch` (import the fetch module now) and `max_runs` (1: one-shot; more: the worker is
reused). It imports the engine, sends `waiting` (see `protocol`) and blocks until the app sends a
run: one framed message `{"run_as", "rlimits", "run"}` with two descriptors attached (SCM_RIGHTS),
the workspace folder and the entry script, which the app opened (the folder as a cold worker opens
it, the script without following a link). Then it does what a cold worker does (`worker`): switch
to `run_as`, apply the rlimits, send `ready`, run the script in a fresh context, send `result`.

Identity: the worker is spawned with the app's uid (root, when the app is) and runs nothing
but its imports before the first run arrives. It never opens a path after it switches users:
the folder and the script come as descriptors, the only thing a root worker used to open
before the switch. So a one-shot warm worker switches users and limits itself exactly as a
cold one does, only later. A reused worker has switched already: it serves only runs for the
same uid (another one is refused), and its rlimits stay, except RLIMIT_CPU, which counts
the whole process's CPU time. So each run moves the CPU soft limit to the time used so far
(rounded up) plus the run's budget; the hard limit, set at the first run, covers `max_runs`
runs (each one second over budget at most), and a run that would pass it is refused. The
kernel's SIGXCPU at the soft limit ends the worker, as it does a cold one.

State: each run gets a fresh `quickjs.Context`, which owns its own runtime (heap, atoms,
prototypes, globals), so nothing a script changes in JavaScript survives it. The worker's
Python side keeps nothing of a run either (a new `Host`, a new `WorkspaceFs`, both closed).
What a reused worker does not protect against is an engine exploit that takes over the
process: it would outlive the run, as the pool's uid, into the next runs the worker serves.
That is why the app reuses a worker only on request, and only after a run that ended with
`ok` or a JavaScript error; after a limit, a crash, a kill or anything else, the worker exits
(`next` is false in the result).
"""

import contextlib
import importlib
import json
import math
import os
import resource
import socket
import sys
from pathlib import Path
from typing import Any

from workbench.executors.quickjs.worker.fs import FsRefused, WorkspaceFs, read_capped
from workbench.executors.quickjs.worker.main import Opened, apply_rlimits, drop_privileges, run
from workbench.executors.quickjs.worker.protocol import (
    HEADER,
    MAX_MESSAGE,
    encode_message,
    write_all,
)

REUSABLE = ("ok", "js_error")  # outcomes after which a reused worker may take another run


def receive(sock: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """The next framed message and the descriptors sent with it; None when the app is gone."""
    fds: list[int] = []
    head = b""
    while len(head) < HEADER.size:
        data, more, _, _ = socket.recv_fds(
            sock, HEADER.size - len(head), 4, socket.MSG_CMSG_CLOEXEC
        )
        if not data:
            return None
        head, fds = head + data, fds + more
    (length,) = HEADER.unpack(head)
    if length > MAX_MESSAGE:
        return None
    payload = b""
    while len(payload) < length:
        data = sock.recv(length - len(payload))
        if not data:
            return None
        payload += data
    return json.loads(payload), fds


def cpu_used() -> float:
    """CPU seconds this process has used so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def limit_cpu(budget: tuple[int, int], first: bool, max_runs: int) -> list[int] | str:
    """Give this run `budget` (soft, hard) seconds of CPU on top of what the process used;
    the applied [soft, hard], or why the run is refused."""
    base = math.ceil(cpu_used())
    soft, hard = budget
    hard_limit = base + hard * max_runs if first else resource.getrlimit(resource.RLIMIT_CPU)[1]
    if base + soft >= hard_limit:
        return "this reused worker has used up its CPU time; run again for a fresh one"
    resource.setrlimit(resource.RLIMIT_CPU, (base + soft, hard_limit))
    return [base + soft, hard_limit]


def serve_one(message: dict[str, Any], fds: list[int], first: bool, spec: dict[str, Any]) -> Any:
    """Set up and run one run; its result message (before the CPU and memory figures)."""
    control_fd = int(spec["control_fd"])
    request = message["run"]
    if len(fds) != 2:
        return {"type": "result", "outcome": "error", "error": "expected 2 descriptors"}
    workspace_fd, script_fd = fds
    fs = WorkspaceFs(workspace_fd)
    try:
        source = read_capped(script_fd, str(request["display_name"])).decode()
        opened = Opened(fs, source, "")
    except (OSError, FsRefused, UnicodeDecodeError) as error:
        opened = Opened(fs, None, f"{request['display_name']}: {error}")
    run_as = message.get("run_as")
    if first:
        drop_privileges(run_as)
        rlimits = {k: v for k, v in message["rlimits"].items() if k != "CPU"}
        apply_rlimits(rlimits)
    elif run_as is not None and run_as != os.getuid():
        fs.close()
        return {"type": "result", "outcome": "error", "error": f"worker is not uid {run_as}"}
    cpu = limit_cpu(tuple(message["rlimits"]["CPU"]), first, int(spec["max_runs"]))
    if isinstance(cpu, str):
        fs.close()
        return {"type": "result", "outcome": "error", "error": cpu}
    proc = {name: Path(f"/proc/self/{name}").read_text() for name in ("limits", "status")}
    write_all(control_fd, encode_message({"type": "ready", "cpu_limit": cpu, **proc}))
    try:
        return run(request, control_fd, opened)
    finally:
        fs.close()


def main(argv: list[str]) -> int:
    """Import the engine, say `waiting`, then serve runs until told not to or done."""
    spec = json.loads(argv[1])
    control_fd = int(spec["control_fd"])
    sock = socket.socket(fileno=control_fd)
    with contextlib.suppress(ImportError):  # `run()` reports it
        importlib.import_module("_quickjs")
    if spec["fetch"]:  # its modules, while the standard library is readable
        importlib.import_module("workbench.executors.quickjs.worker.fetch")
    write_all(control_fd, encode_message({"type": "waiting"}))
    runs = 0
    while runs < int(spec["max_runs"]):
        received = receive(sock)
        if received is None:
            return 0
        started = cpu_used()
        result = serve_one(*received, first=runs == 0, spec=spec)
        runs += 1
        usage = resource.getrusage(resource.RUSAGE_SELF)
        result["cpu_seconds"] = usage.ru_utime + usage.ru_stime - started
        if runs == 1:  # later, the peak of the process may be an earlier run's
            result["peak_rss_bytes"] = usage.ru_maxrss * 1024
        result["next"] = runs < int(spec["max_runs"]) and result["outcome"] in REUSABLE
        write_all(control_fd, encode_message(result))
        if not result["next"]:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
