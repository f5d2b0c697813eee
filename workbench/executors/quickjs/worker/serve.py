"""A warm QuickJS worker: started before its run, it waits on its control socket.

Started by `workbench.executors.warm.quickjs` as `python -I -m
workbench.executors.quickjs.worker.serve SPEC`, it imports the engine, says `waiting` and blocks
until the app sends a run with the workspace folder and the script as descriptors (`receive`);
`serve_one` then does what a cold worker does (switch uid, rlimits, `ready`, a fresh context,
`result`). A reused worker (`max_runs` above 1) serves further runs for the same uid only, with its
CPU limit moved forward per run (`limit_cpu`; a one-shot worker's hard limit is its soft one), and
exits after any run that did not end `ok` or with a JavaScript error.
"""

import contextlib
import importlib
import json
import math
import os
import resource
import socket
import sys
from typing import Any

from workbench.executors.quickjs.worker.fs import FsRefused, WorkspaceFs, read_capped
from workbench.executors.quickjs.worker.main import (
    Opened,
    apply_rlimits,
    drop_privileges,
    proc_texts,
    run,
)
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
    if base + soft > hard_limit:
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
    write_all(control_fd, encode_message({"type": "ready", "cpu_limit": cpu, **proc_texts()}))
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
    # As the cold worker: everything went out through os.write, so the interpreter's teardown
    # (the engine's context, every module) would only delay the exit the run waits for.
    os._exit(main(sys.argv))
