"""The QuickJS worker process: one fresh `quickjs.Context` for one run, then exit.

Started by `workbench.executors.quickjs` as `python -I -m workbench.executors.quickjs_worker
SPEC`, with the workspace as its working folder. SPEC is JSON: `control_fd` (the pipe for
control messages, see `quickjs_protocol`), `rlimits` ({name: [soft, hard]}) and `run` (script
path and display name, `scriptArgs`, workspace, engine memory and stack limits). First thing,
before the engine is even imported, it applies the rlimits (address space, CPU time, no new
processes, few descriptors, file size, no core dumps) and sends `ready`; then it runs the
script and sends `result`. The script's console output goes to the worker's stdout/stderr and
nowhere else.

The run gets a context with the engine's memory and stack limits and exactly this host API:
`console.log/info/warn/error` (log/info to stdout, warn/error to stderr, one line per call),
`scriptArgs`, and `fs` (`readText`, `writeText`, `list`, `exists`, `remove`) confined to the
workspace. There is no `fetch`, no module loader, no timers. Every host function returns a
JSON envelope and never raises: a Python exception inside a callable leaves the binding in an
error state ("returned a result with an exception set"). Strings cross as JSON, since the
binding passes them as C strings that end at the first NUL. Caps per run: 16 MiB per read or
write, 256 MiB written in all, 1,000 new files, 64 MiB of console output (then one notice).

After the script, pending promise jobs run to the end. If the script's completion value is a
promise (`main();` with an async `main`) and it rejects, the run fails; other unhandled
rejections go unseen, as the binding exposes no rejection tracker.

Why no in-VM time limit: the binding refuses every call from JavaScript into Python while a
time limit is set ("Can not call into Python with a time limit set"), and `console` and `fs`
are such calls. Output is streamed live (a script killed by the timeout still shows what it
printed), so buffering it in JavaScript to dodge the rule was rejected, and `fs` needs answers
synchronously. The engine's limit also counts CPU time and is only checked between bytecodes:
measured here, a backtracking regex ran 17.9 s past a 0.5 s limit. So CPU time is bounded by
RLIMIT_CPU on the worker (the kernel also sees native work) and real time by the app's
wall-clock kill, which always applies. The live host API is cheap: 100,000 `console.log`-style
calls into a no-op Python callable took 38 ms, against 23 ms for pushing to a JS array.
"""

import json
import os
import resource
import sys
from pathlib import Path, PurePosixPath
from typing import Any

from workbench.executors.quickjs_protocol import encode_message, write_all

MIB = 1024 * 1024
MAX_READ_BYTES = 16 * MIB  # one fs.readText, and the entry script
MAX_WRITE_BYTES = 16 * MIB  # one fs.writeText
MAX_WRITTEN_BYTES = 256 * MIB  # all fs.writeText of a run
MAX_FILES_CREATED = 1000  # new files per run
MAX_OUTPUT_BYTES = 64 * MIB  # console output of a run; the rest is dropped
MAX_LIST_ENTRIES = 10_000

# The host API, built in one closure so the raw callables never stay reachable as globals.
PRELUDE = r"""
(function (write, fsCall, args) {
  const wellFormed = function __workbench_wellFormed(s) {
    return s.replace(/[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]/g,
                     (m) => (m.length === 2 ? m : "\ufffd"));
  };
  const show = function __workbench_show(v) {
    if (typeof v === "string") return v;
    if (v instanceof Error) return v.stack ? String(v) + "\n" + v.stack : String(v);
    try { const j = JSON.stringify(v); return j === undefined ? String(v) : j; }
    catch (e) { return String(v); }
  };
  // Strings cross to Python as JSON: a C string would end at the first NUL character.
  const line = (stream) => function __workbench_console(...parts) {
    write(JSON.stringify([stream, wellFormed(parts.map(show).join(" ") + "\n")]));
  };
  const call = function __workbench_fs(op, path, data) {
    const text = data === undefined ? null : wellFormed(String(data));
    const r = JSON.parse(fsCall(JSON.stringify([op, wellFormed(String(path)), text])));
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
})(__workbench_write, __workbench_fs_call, ARGS);
delete globalThis.__workbench_write;
delete globalThis.__workbench_fs_call;
"""

# Watches the script's completion value: when the script ends in a promise (`main();` with an
# async `main`), a rejection of it fails the run instead of vanishing with the job queue.
TRACK_COMPLETION = r"""
(function () {
  let failure;
  return function __workbench_track(value, read) {
    if (read) return failure === undefined ? null : String(failure) + "\n" + (failure?.stack || "");
    if (value instanceof Promise) value.then(undefined, (e) => { failure = e; });
    return null;
  };
})()
"""


class FsRefused(Exception):
    """An fs call the workspace policy refuses; its text is shown to the script."""


class WorkspaceFs:
    """File access confined to one workspace folder, with size and count caps."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve(strict=True)
        self.files_created = 0
        self.bytes_written = 0

    def resolve(self, rel: str) -> Path:
        """The real path of workspace-relative `rel`; `FsRefused` for any escape."""
        try:
            real = (self.root / checked(rel)).resolve()
        except (RuntimeError, OSError) as error:  # a symlink loop, an unreadable folder
            raise FsRefused(f"path {rel!r} cannot be resolved: {error}") from None
        if real != self.root and self.root not in real.parents:
            raise FsRefused(f"path {rel!r} refused: it resolves outside the workspace")
        return real

    def call(self, op: str, rel: str, data: str | None) -> Any:
        """Perform one fs operation; the value goes back to JavaScript as JSON."""
        if op == "remove":
            self.remove(rel)
            return None
        path = self.resolve(rel)
        if op == "exists":
            return path.exists()
        if op == "list":
            names = sorted(entry.name for entry in os.scandir(path))
            if len(names) > MAX_LIST_ENTRIES:
                raise FsRefused(f"{rel!r} has more than {MAX_LIST_ENTRIES} entries")
            return names
        if op == "readText":
            return read_capped(path, rel).decode("utf-8", errors="replace")
        if op == "writeText":
            self.write_text(path, rel, data or "")
            return None
        raise FsRefused(f"unknown operation {op!r}")

    def remove(self, rel: str) -> None:
        """Remove a file, a symlink (not its target) or an empty folder."""
        pure = checked(rel)
        if pure.name in ("", "."):
            raise FsRefused("the workspace itself cannot be removed")
        path = self.resolve(str(pure.parent)) / pure.name
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink()

    def write_text(self, path: Path, rel: str, text: str) -> None:
        """Write `text` as UTF-8, creating parent folders inside the workspace."""
        data = text.encode()
        if len(data) > MAX_WRITE_BYTES:
            raise FsRefused(f"writing {rel!r} refused: {len(data)} bytes exceed the 16 MiB cap")
        if self.bytes_written + len(data) > MAX_WRITTEN_BYTES:
            raise FsRefused(f"writing {rel!r} refused: a run writes at most 256 MiB in all")
        if not path.exists():
            if self.files_created >= MAX_FILES_CREATED:
                raise FsRefused(f"writing {rel!r} refused: {MAX_FILES_CREATED} new files cap")
            self.files_created += 1
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path, flags, 0o644)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        self.bytes_written += len(data)


def checked(rel: str) -> PurePosixPath:
    """`rel` as a relative path without `..`; `FsRefused` otherwise."""
    if not rel or "\0" in rel:
        raise FsRefused(f"invalid path {rel!r}")
    pure = PurePosixPath(rel)
    if pure.is_absolute():
        raise FsRefused(f"absolute path {rel!r} refused: paths are relative to the workspace")
    if ".." in pure.parts:
        raise FsRefused(f"path {rel!r} refused: '..' is not allowed")
    return pure


def read_capped(path: Path, rel: str) -> bytes:
    """The bytes of a regular file no larger than `MAX_READ_BYTES`."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(MAX_READ_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_READ_BYTES:
        raise FsRefused(f"reading {rel!r} refused: larger than the 16 MiB cap")
    return data


class Host:
    """The Python side of the host API for one run. Its callables never raise."""

    def __init__(self, fs: WorkspaceFs) -> None:
        self.fs = fs
        self.output_bytes = 0

    def write(self, payload: str) -> None:
        """Write console text, JSON [stream, text], to stdout (stream 1) or stderr (2)."""
        try:
            stream, text = json.loads(payload)
            data = str(text).encode("utf-8", errors="replace")
            if self.output_bytes + len(data) > MAX_OUTPUT_BYTES:
                if self.output_bytes <= MAX_OUTPUT_BYTES:
                    write_all(2, b"[workbench: 64 MiB of console output; the rest is dropped]\n")
                self.output_bytes = MAX_OUTPUT_BYTES + 1
                return
            self.output_bytes += len(data)
            write_all(2 if stream == 2 else 1, data)
        except BrokenPipeError:
            os._exit(1)  # the app closed the output: nobody watches this run any more
        except Exception:  # never let an exception reach the binding
            return

    def fs_call(self, payload: str) -> str:
        """One fs call, JSON [op, path, data], answered as {"v": value} or {"e": message}."""
        op = rel = "?"
        try:
            op, rel, data = json.loads(payload)
            return json.dumps({"v": self.fs.call(str(op), str(rel), data)})
        except FsRefused as error:
            return json.dumps({"e": f"fs.{op}: {error}"})
        except OSError as error:
            return json.dumps({"e": f"fs.{op}({rel!r}): {error.strerror or error}"})
        except Exception as error:  # never let an exception reach the binding
            return json.dumps({"e": f"fs.{op}({rel!r}) failed: {error!r}"})


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


def run(request: dict[str, Any]) -> dict[str, Any]:
    """Evaluate the request's script in a fresh context; the result message to send."""
    import quickjs  # imported after the rlimits are in place

    display = str(request["display_name"])
    host = Host(WorkspaceFs(Path(request["workspace"])))
    context = quickjs.Context()
    context.set_memory_limit(int(request["memory_limit"]))
    context.set_max_stack_size(int(request["stack_limit"]))
    context.add_callable("__workbench_write", host.write)
    context.add_callable("__workbench_fs_call", host.fs_call)
    context.eval(PRELUDE.replace("ARGS", json.dumps(json.dumps(request["args"]))))
    try:
        source = read_capped(Path(request["script_path"]), display).decode()
    except (OSError, FsRefused, UnicodeDecodeError) as error:
        return {"type": "result", "outcome": "bad_script", "error": f"{display}: {error}"}
    track = context.eval(TRACK_COMPLETION)
    try:
        track(context.eval(source), False)
        while context.execute_pending_job():
            pass
        rejection = track(None, True)
    except quickjs.StackOverflow as error:
        return js_failure("stack_overflow", clean_stack(str(error), display))
    except quickjs.JSException as error:
        text = clean_stack(str(error), display)
        outcome = "memory" if text.startswith("InternalError: out of memory") else "js_error"
        return js_failure(outcome, text)
    except MemoryError:
        return {"type": "result", "outcome": "address_space", "error": "MemoryError"}
    if rejection is not None:
        return js_failure("js_error", "(in promise) " + clean_stack(rejection, display))
    return {"type": "result", "outcome": "ok"}


def js_failure(outcome: str, text: str) -> dict[str, Any]:
    """Show an uncaught JS error on stderr and describe it in a result message."""
    write_all(2, f"Uncaught {text}\n".encode("utf-8", errors="replace"))
    return {"type": "result", "outcome": outcome, "error": text.splitlines()[0] if text else ""}


def apply_rlimits(rlimits: dict[str, list[int]]) -> None:
    """Set each RLIMIT_<name> to [soft, hard]."""
    for name, (soft, hard) in rlimits.items():
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (soft, hard))


def main(argv: list[str]) -> int:
    """Apply the limits, say ready, run the script, report its result."""
    spec = json.loads(argv[1])
    control_fd = int(spec["control_fd"])
    apply_rlimits(spec["rlimits"])
    write_all(control_fd, encode_message({"type": "ready"}))
    result = run(spec["run"])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["cpu_seconds"] = usage.ru_utime + usage.ru_stime
    result["peak_rss_bytes"] = usage.ru_maxrss * 1024
    write_all(control_fd, encode_message(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
