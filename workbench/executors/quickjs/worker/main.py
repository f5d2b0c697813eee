"""The QuickJS worker process: one fresh engine context for one run, then exit.

Started as `python -I -S -c` calling `main` with SPEC (`worker_argv`) in the workspace, `main`
opens the workspace and the script (`open_run`), switches to the run's uid, applies its rlimits and
sends `ready` before it imports the engine, then `run` executes the script and its promise jobs in a
context with the engine's memory and stack limits and exactly this host API (`Host`): `console`,
`scriptArgs`, `fs` confined to the workspace and, when the posture allows hosts, `fetch`. Console
output goes to stdout/stderr (capped per run), everything else is a control message; the outcome is
sent as `result`.
"""

from __future__ import annotations

import os
import resource
import sys

from workbench.executors.quickjs.worker import jsonwire
from workbench.executors.quickjs.worker.fs import MIB, FsRefused, WorkspaceFs, read_capped
from workbench.executors.quickjs.worker.protocol import encode_message, write_all
from workbench.executors.quickjs.worker.rejections import RejectionTracker

TYPE_CHECKING = False  # not typing's: the worker imports neither typing, json nor pathlib
if TYPE_CHECKING:
    from typing import Any

MAX_OUTPUT_BYTES = 64 * MIB  # console output of a run; the rest is dropped (the notice says)

# The host API, built in one closure so the raw callables never stay reachable as globals.
PRELUDE = r"""
(function (write, fsCall, fetchCall, args) {
  const show = function __workbench_show(v) {
    if (typeof v === "string") return v;
    if (v instanceof Error) return v.stack ? String(v) + "\n" + v.stack : String(v);
    try { const j = JSON.stringify(v); return j === undefined ? String(v) : j; }
    catch (e) { return String(v); }
  };
  // Strings cross to Python as JSON: a C string would end at the first NUL character, and
  // JSON escapes a lone surrogate (Python makes it U+FFFD: `jsonwire.from_script`).
  // One past the output cap in UTF-16 units is more than the cap in bytes: Python cuts it.
  const line = (stream) => function __workbench_console(...parts) {
    const text = parts.map(show).join(" ") + "\n";
    const kept = text.length > CAP_UNITS ? text.slice(0, CAP_UNITS) : text;
    write(JSON.stringify([stream, kept]));
  };
  const call = function __workbench_fs(op, path, data) {
    const text = data === undefined ? null : String(data);
    const r = JSON.parse(fsCall(JSON.stringify([op, String(path), text])));
    if ("e" in r) throw new Error(r.e);
    return r.v;
  };
  globalThis.console = Object.freeze({ log: line(1), info: line(1), warn: line(2),
                                       error: line(2) });
  globalThis.fs = Object.freeze({
    readText: function __workbench_readText(p) { return call("readText", p); },
    writeText: function __workbench_writeText(p, t) { call("writeText", p, t); },
    list: function __workbench_list(p) { return call("list", p === undefined ? "." : p); },
    exists: function __workbench_exists(p) { return call("exists", p); },
    remove: function __workbench_remove(p) { call("remove", p); },
  });
  globalThis.scriptArgs = Object.freeze(JSON.parse(args));
  if (fetchCall === undefined) return;
  const response = function __workbench_response(r) {
    return Object.freeze({
      status: r.status, statusText: r.statusText, ok: r.status >= 200 && r.status < 300,
      url: r.url, redirected: false, headers: Object.freeze(r.headers),
      text: function __workbench_text() { return Promise.resolve(r.body); },
      json: function __workbench_json() { return Promise.resolve(r.body).then(JSON.parse); },
    });
  };
  // The request runs in a promise job, so code after `fetch()` runs first, as with real fetch.
  globalThis.fetch = function __workbench_fetch(url, init) {
    return Promise.resolve().then(function __workbench_fetchJob() {
      const o = init ?? {};
      const headers = Object.entries(o.headers ?? {}).map(
        ([k, v]) => [String(k), String(v)]);
      const body = o.body === undefined || o.body === null ? null : String(o.body);
      const request = [String(url), String(o.method ?? "GET"), headers, body];
      const r = JSON.parse(fetchCall(JSON.stringify(request)));
      if ("e" in r) throw new TypeError(r.e);
      return response(r.v);
    });
  };
})(__workbench_write, __workbench_fs_call, globalThis.__workbench_fetch_call, ARGS);
delete globalThis.__workbench_write;
delete globalThis.__workbench_fs_call;
delete globalThis.__workbench_fetch_call;
"""


class Host:
    """The Python side of the host API for one run. Its callables never raise."""

    def __init__(self, fs: WorkspaceFs) -> None:
        self.fs = fs
        self.output_bytes = 0  # both streams; past MAX_OUTPUT_BYTES once output was cut
        self.stream_bytes = {1: 0, 2: 0}

    def write(self, payload: str) -> None:
        """Write console text, JSON [stream, text], to stdout (stream 1) or stderr (2); cut it
        where the run's output reaches `MAX_OUTPUT_BYTES`, and say where on stderr."""
        try:
            stream, text = jsonwire.from_script(payload)
            fd = 2 if stream == 2 else 1
            data = str(text).encode("utf-8", errors="replace")
            room = MAX_OUTPUT_BYTES - self.output_bytes
            if room < 0:
                return
            write_all(fd, data[:room])
            self.output_bytes += min(len(data), room)
            self.stream_bytes[fd] += min(len(data), room)
            if len(data) > room:
                self.output_bytes = MAX_OUTPUT_BYTES + 1
                name, kept = ("stdout", "stderr")[fd - 1], self.stream_bytes[fd]
                notice = (
                    f"[workbench: a run prints at most 64 MiB of console output: {name} is cut "
                    f"after byte {kept}, and everything after it is dropped]\n"
                )
                write_all(2, ("\n" if fd == 2 else "").encode() + notice.encode())
        except BrokenPipeError:
            os._exit(1)  # the app closed the output: nobody watches this run any more
        except Exception:  # never let an exception reach the binding
            return

    def fs_call(self, payload: str) -> str:
        """One fs call, JSON [op, path, data], answered as {"v": value} or {"e": message}."""
        op = rel = "?"
        try:
            op, rel, data = jsonwire.from_script(payload)
            return jsonwire.dumps({"v": self.fs.call(str(op), str(rel), data)})
        except FsRefused as error:
            return jsonwire.dumps({"e": f"fs.{op}: {error}"})
        except OSError as error:
            return jsonwire.dumps({"e": f"fs.{op}({rel!r}): {error.strerror or error}"})
        except Exception as error:  # never let an exception reach the binding
            return jsonwire.dumps({"e": f"fs.{op}({rel!r}) failed: {error!r}"})


def clean_stack(text: str, display_name: str) -> str:
    """A JS error text with host frames dropped and `<input>` named as the script."""
    lines = []
    for line in text.rstrip("\n").splitlines():
        if line.startswith("    at "):
            if "__workbench_" in line:
                continue
            line = line.replace("(<input>", f"({display_name}")
        lines.append(line)
    return "\n".join(lines)


class Opened:
    """What a run opens before the worker gives up root: the workspace and the script.

    `open_run` also imports `fetch` (when the run may fetch) for the same reason.
    """

    __slots__ = ("error", "fs", "source")

    def __init__(self, fs: WorkspaceFs, source: str | None, error: str) -> None:
        self.fs = fs
        self.source = source  # None when the script could not be read, and then why
        self.error = error


def open_run(request: dict[str, Any]) -> Opened:
    """Open the request's workspace and read its script."""
    display = str(request["display_name"])
    if request["fetch"] is not None:  # its modules, while the standard library is readable
        __import__("workbench.executors.quickjs.worker.fetch")
    fs = WorkspaceFs(str(request["workspace"]))
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO cannot block
    try:
        return Opened(fs, read_capped(os.open(request["script_path"], flags), display).decode(), "")
    except (OSError, FsRefused, UnicodeDecodeError) as error:
        return Opened(fs, None, f"{display}: {error}")


def run(request: dict[str, Any], control_fd: int, opened: Opened | None = None) -> dict[str, Any]:
    """Evaluate the request's script in a fresh context; the result message to send.

    `opened`: the workspace and script from `open_run`, else they are opened here.
    """
    # After the rlimits are in place. The engine itself, not the `quickjs` package: that
    # wrapper only adds a thread-pool helper this worker does not use, and its imports
    # (concurrent.futures, logging, threading) cost 12-18 ms of every run's start.
    try:
        import _quickjs as quickjs  # type: ignore[import-not-found]
    except ImportError as error:  # installed where the throwaway uid cannot read it
        text = f"cannot load the QuickJS engine as uid {os.getuid()}: {error}"
        return {"type": "result", "outcome": "no_engine", "error": text}

    display = str(request["display_name"])
    opened = open_run(request) if opened is None else opened
    fs, source, problem = opened.fs, opened.source, opened.error
    if source is None:
        return {"type": "result", "outcome": "bad_script", "error": problem}
    host = Host(fs)

    def report(message: dict[str, Any]) -> None:
        try:
            write_all(control_fd, encode_message(message))
        except OSError:
            os._exit(1)  # the app closed the control pipe: nobody watches this run any more

    # The host API is set up before the memory limit, so whatever limit the posture has, the
    # only allocations that can hit it are the script's (and it is reported as the limit).
    context = quickjs.Context()
    context.set_max_stack_size(int(request["stack_limit"]))
    context.add_callable("__workbench_write", host.write)
    context.add_callable("__workbench_fs_call", host.fs_call)
    if request["fetch"] is not None:
        from workbench.executors.quickjs.worker.fetch import (
            Fetcher,  # only a run that may fetch imports it
        )

        fetcher = Fetcher(request["fetch"], request["deadline"], report)
        context.add_callable("__workbench_fetch_call", fetcher.call)
    prelude = PRELUDE.replace("CAP_UNITS", str(MAX_OUTPUT_BYTES + 1))
    context.eval(prelude.replace("ARGS", jsonwire.dumps(jsonwire.dumps(request["args"]))))
    try:  # memory_high: an engine crash from then on is the memory limit
        tracker = RejectionTracker(quickjs, context, lambda: report({"type": "memory_high"}))
    except RuntimeError as error:  # another binding version
        return {"type": "result", "outcome": "error", "error": f"cannot track rejections: {error}"}
    context.set_memory_limit(int(request["memory_limit"]))
    try:
        context.eval(source)
        while context.execute_pending_job():
            pass
        rejections = tracker.unhandled()
    except quickjs.StackOverflow as error:
        return js_failure("stack_overflow", clean_stack(str(error), display))
    except quickjs.JSException as error:
        text = clean_stack(str(error), display)
        tracker.poll(None, None)
        return uncaught(text, text == "null" and tracker.near_memory_limit())
    except MemoryError:
        return {"type": "result", "outcome": "address_space", "error": "MemoryError"}
    finally:
        tracker.close()
    if rejections:
        first = rejections[0]
        more = len(rejections) - 1
        note = f"\n[workbench: {more} more unhandled promise rejection(s)]" if more else ""
        return uncaught(
            clean_stack(first.text, display), first.out_of_memory, "(in promise) ", note
        )
    return {"type": "result", "outcome": "ok"}


def uncaught(text: str, out_of_memory: bool, prefix: str = "", note: str = "") -> dict[str, Any]:
    """The result for an uncaught `text`: the engine's memory limit, or a JavaScript error.

    `out_of_memory`: the value was no error (`null`) because the engine had no memory left.
    """
    if out_of_memory:
        text = "InternalError: out of memory (the engine had none left to build its error)"
    memory = text.startswith("InternalError: out of memory")
    return js_failure("memory" if memory else "js_error", prefix + text + note)


def js_failure(outcome: str, text: str) -> dict[str, Any]:
    """Show an uncaught JS error on stderr and describe it in a result message."""
    write_all(2, f"Uncaught {text}\n".encode("utf-8", errors="replace"))
    return {"type": "result", "outcome": outcome, "error": text.splitlines()[0] if text else ""}


def drop_privileges(uid: int | None) -> None:
    """Become `uid`, group `uid`, with no supplementary groups, for good (None: stay)."""
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)


def apply_rlimits(rlimits: dict[str, list[int]]) -> None:
    """Set each RLIMIT_<name> to [soft, hard]."""
    for name, (soft, hard) in rlimits.items():
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (soft, hard))


def proc_texts() -> dict[str, str]:
    """This process's /proc `limits` and `status`, as the `ready` message carries them."""
    texts = {}
    for name in ("limits", "status"):
        with open(f"/proc/self/{name}", encoding="utf-8") as f:  # noqa: PTH123 - no pathlib here
            texts[name] = f.read()
    return texts


def main(argv: list[str]) -> int:
    """Open what the run needs, drop root, apply the limits, say ready, run, report."""
    spec = jsonwire.loads(argv[1])
    control_fd = int(spec["control_fd"])
    opened = open_run(spec["run"])
    drop_privileges(spec.get("run_as"))
    apply_rlimits(spec["rlimits"])
    write_all(control_fd, encode_message({"type": "ready", **proc_texts()}))
    result = run(spec["run"], control_fd, opened)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["cpu_seconds"] = usage.ru_utime + usage.ru_stime
    result["peak_rss_bytes"] = usage.ru_maxrss * 1024
    write_all(control_fd, encode_message(result))
    return 0


if __name__ == "__main__":
    # Everything went out through os.write: skip the interpreter's teardown (freeing the
    # engine's context and every module took about 2 ms of each run).
    os._exit(main(sys.argv))
