"""The quickjs posture end to end: real scripts in a real worker with the real `quickjs` engine.

Each outcome of issue 5 is produced by a script: streaming console output, JS errors with file
and line, the wall-clock timeout (infinite loop, catastrophic regex, promise-job flood),
RLIMIT_CPU, the engine's memory limit, a stack overflow, an engine crash (SIGSEGV), Stop, no
state shared between runs, output that forges control messages, and the workspace-confined fs.
Last, the worker's start stays import-light (its cost is in `tests/perf/quickjs_startup.py`).
"""

import asyncio
import ctypes
import json
import os
import socket
import stat
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from workbench.executors.hardened.executor import RUN_UID_BASE
from workbench.executors.quickjs.executor import QuickJsExecutor
from workbench.executors.quickjs.worker.protocol import encode_message
from workbench.executors.types import (
    CancelToken,
    OutputChunk,
    RunRequest,
    RunResult,
    RunStatus,
    SessionSpec,
    Stream,
)
from workbench.postures.model import MIB, Posture, PostureId


@dataclass
class Env:
    """A skill folder, a workspace and a runs folder under tmp_path."""

    skill: Path
    workspace: Path
    runs: Path
    outside: Path


@pytest.fixture
def env(tmp_path: Path) -> Env:
    folders = Env(tmp_path / "skill", tmp_path / "ws", tmp_path / "runs", tmp_path / "outside")
    for folder in (folders.skill, folders.workspace, folders.outside):
        folder.mkdir()
    return folders


async def _run(
    env: Env,
    source: str | None,
    *args: str,
    script: str = "main.js",
    cancel_after: float | None = None,
    **limits: float,
) -> tuple[RunResult, list[OutputChunk]]:
    if source is not None:
        (env.workspace / script).parent.mkdir(parents=True, exist_ok=True)
        (env.workspace / script).write_text(source)
    posture = Posture(PostureId.QUICKJS).with_limits(**{"timeout_s": 10, **limits})
    executor = QuickJsExecutor(posture)
    await executor.start(SessionSpec(env.skill, "demo", env.workspace, env.runs))
    chunks: list[OutputChunk] = []

    def sink(chunk: OutputChunk) -> None:
        chunks.append(chunk)

    cancel = CancelToken()
    if cancel_after is not None:
        asyncio.get_running_loop().call_later(cancel_after, cancel.cancel)
    try:
        result = await executor.run(RunRequest(argv=(script, *args)), sink, cancel)
    finally:
        await executor.stop()
    assert result.leftover_processes == 0
    return result, chunks


def run(env: Env, source: str | None, *args: str, **kw: float | str) -> RunResult:
    return asyncio.run(_run(env, source, *args, **kw))[0]  # type: ignore[arg-type]


def test_console_streams_lines_to_stdout_and_stderr(env: Env) -> None:
    source = """
    console.log("args", scriptArgs.length, scriptArgs[0], scriptArgs[1]);
    console.info({a: [1, 2]}, null, undefined, 1.5);
    console.warn("careful");
    console.error(new Error("shown"));
    """
    result, chunks = asyncio.run(_run(env, source, "one", "two words"))
    assert result.status is RunStatus.OK, result.cause
    assert result.exit_code == 0
    assert result.stdout.text == 'args 2 one two words\n{"a":[1,2]} null undefined 1.5\n'
    assert result.stderr.text.startswith("careful\nError: shown\n")
    streamed = b"".join(c.data for c in chunks if c.stream is Stream.STDOUT)
    assert streamed.decode() == result.stdout.text
    assert result.stdout.log_path is not None and result.stdout.log_path.is_file()


def test_host_api_is_console_fs_and_script_args_only(env: Env) -> None:
    source = """
    const names = ["fetch", "require", "process", "std", "os", "setTimeout",
                   "__workbench_write", "__workbench_fs_call"];
    console.log(names.map((n) => typeof globalThis[n]).join(","));
    console.log(Object.keys(fs).sort().join(","));
    """
    result = run(env, source)
    assert result.stdout.text == (
        ",".join(["undefined"] * 8) + "\nexists,list,readText,remove,writeText\n"
    )


def test_uncaught_error_is_failed_with_file_and_line(env: Env) -> None:
    source = "function parse(x) {\n  return x.missing.field;\n}\nparse({});\n"
    result = run(env, source, script="tools/parse.js")
    assert result.status is RunStatus.FAILED
    assert result.exit_code == 1
    assert "TypeError" in result.cause
    assert "Uncaught TypeError: cannot read property 'field' of undefined" in result.stderr.text
    assert "at parse (tools/parse.js:2)" in result.stderr.text
    assert "tools/parse.js:4" in result.stderr.text


def test_infinite_loop_ends_timed_out_by_the_wall_clock(env: Env) -> None:
    result = run(env, "console.log('spinning'); while (true) {}", timeout_s=1.5)
    assert result.status is RunStatus.TIMED_OUT
    assert result.cause == "wall-clock timeout of 1.5 s"
    assert result.stdout.text == "spinning\n"  # printed before the kill, still shown
    assert result.wall_seconds < 5


def test_cpu_time_is_capped_by_rlimit_cpu(env: Env) -> None:
    result = run(env, "while (true) {}", timeout_s=20, cpu_seconds=1)
    assert result.status is RunStatus.LIMIT_EXCEEDED
    assert result.cause == "RLIMIT_CPU 1 s"
    assert result.wall_seconds < 10


def test_memory_bomb_hits_the_quickjs_memory_limit(env: Env) -> None:
    source = "const a = []; while (true) a.push('x'.repeat(4096) + a.length);"
    result = run(env, source, memory_bytes=64 * MIB)
    assert result.status is RunStatus.LIMIT_EXCEEDED
    assert result.cause == "QuickJS memory limit 64 MiB"
    assert "InternalError: out of memory" in result.stderr.text


def test_stack_overflow_is_a_clear_js_error(env: Env) -> None:
    result = run(env, "function down(n) { return down(n + 1) + 1; }\ndown(0);\n")
    assert result.status is RunStatus.FAILED
    assert result.cause == "JavaScript stack overflow (QuickJS stack limit 1 MiB)"
    assert "Uncaught InternalError: stack overflow" in result.stderr.text


def test_engine_crash_is_an_error_and_the_app_carries_on(env: Env) -> None:
    source = "let o = {}; for (let i = 0; i < 100000; i++) o = {a: o};\nJSON.stringify(o);\n"
    result = run(env, source)
    assert result.status is RunStatus.ERROR
    assert "crashed (SIGSEGV)" in result.cause
    assert result.signal == 11
    assert run(env, "console.log('still here')").stdout.text == "still here\n"


def test_catastrophic_regex_is_stopped_by_the_wall_clock(env: Env) -> None:
    result = run(env, "/(a+)+b/.test('a'.repeat(40));", timeout_s=1)
    assert result.status is RunStatus.TIMED_OUT
    assert result.wall_seconds < 5


def test_promise_job_flood_is_stopped_by_the_wall_clock(env: Env) -> None:
    result = run(env, "function again() { Promise.resolve().then(again); }\nagain();", timeout_s=1)
    assert result.status is RunStatus.TIMED_OUT
    assert result.wall_seconds < 5


def test_promise_jobs_run_to_completion(env: Env) -> None:
    source = "(async () => { await null; console.log('after await'); })();"
    assert run(env, source).stdout.text == "after await\n"


def test_a_rejected_completion_promise_fails_the_run(env: Env) -> None:
    source = "async function main() {\n  await null;\n  throw new TypeError('late');\n}\nmain();\n"
    result = run(env, source)
    assert result.status is RunStatus.FAILED
    assert result.cause == "uncaught JavaScript error: (in promise) TypeError: late"
    assert "Uncaught (in promise) TypeError: late\n    at main (main.js" in result.stderr.text


def test_an_error_thrown_in_a_promise_job_fails_the_run(env: Env) -> None:
    source = 'Promise.resolve().then(() => {\n  throw new Error("boom in job");\n});\n0;\n'
    result = run(env, source)
    assert result.status is RunStatus.FAILED
    assert result.cause == "uncaught JavaScript error: (in promise) Error: boom in job"
    assert "Uncaught (in promise) Error: boom in job\n    at <anonymous> (main.js" in (
        result.stderr.text
    )


def test_a_rejection_handled_later_and_a_caught_one_are_no_failure(env: Env) -> None:
    source = """
    const late = Promise.reject(new Error("handled later"));
    Promise.resolve().then(() => late.catch(() => console.log("late caught")));
    (async () => { try { await Promise.reject(1); } catch (e) { console.log("caught", e); } })();
    """
    result = run(env, source)
    assert result.status is RunStatus.OK, result.stderr.text
    assert sorted(result.stdout.text.splitlines()) == ["caught 1", "late caught"]


def test_every_unhandled_rejection_is_counted_and_the_first_shown(env: Env) -> None:
    source = (
        "new Promise((_, reject) => reject('first'));\nPromise.reject(new TypeError('second'));\n"
    )
    result = run(env, source)
    assert result.status is RunStatus.FAILED
    assert result.cause == "uncaught JavaScript error: (in promise) first"
    assert result.stderr.text == (
        "Uncaught (in promise) first\n[workbench: 1 more unhandled promise rejection(s)]\n"
    )


@pytest.mark.parametrize(
    "source",
    [
        "Promise.resolve().then(() => {\n"
        "  const a = []; while (true) a.push('x'.repeat(1000) + a.length);\n});\n0;",
        "Promise.resolve().then(function loop() { return Promise.resolve().then(loop); });\n0;",
    ],
    ids=["bomb-in-a-job", "endless-job-chain"],
)
def test_the_memory_limit_hit_in_a_promise_job_is_the_limit(env: Env, source: str) -> None:
    result = run(env, source, memory_bytes=64 * MIB)
    assert result.status is RunStatus.LIMIT_EXCEEDED, result.cause
    assert result.cause.startswith("QuickJS memory limit 64 MiB"), result.cause


def test_a_memory_limit_too_small_for_anything_is_the_limit(env: Env) -> None:
    result = run(env, "console.log('hi');", memory_bytes=1)
    assert result.status is RunStatus.LIMIT_EXCEEDED, result.cause
    assert result.cause == "QuickJS memory limit 1 byte"
    assert "Uncaught InternalError: out of memory" in result.stderr.text


def test_stop_cancels_the_run(env: Env) -> None:
    result, _ = asyncio.run(_run(env, "while (true) {}", cancel_after=0.5))
    assert result.status is RunStatus.CANCELLED
    assert result.cause == "stopped by the user"


def test_no_state_leaks_between_runs(env: Env) -> None:
    polluter = "Object.prototype.polluted = 1; globalThis.leftover = 2; console.log(({}).polluted);"
    assert run(env, polluter).stdout.text == "1\n"
    probe = "console.log(typeof ({}).polluted, typeof leftover);"
    assert run(env, probe).stdout.text == "undefined undefined\n"


def test_forged_control_messages_are_plain_output(env: Env) -> None:
    forged = encode_message({"type": "result", "outcome": "ok"}).decode("latin-1")
    source = f"""
    console.log({forged!r});
    console.error({forged!r});
    console.log("[[END OF RUN]] exit 0");
    console.log("still running");
    throw new Error("the real end");
    """
    result = run(env, source)
    assert result.status is RunStatus.FAILED
    assert "the real end" in result.cause
    assert result.stdout.text.startswith(forged + "\n")  # NUL bytes and all, intact
    assert result.stderr.text.startswith(forged + "\n")
    assert result.stdout.text.endswith("still running\n")


def test_lone_surrogates_reach_output_and_files_as_replacement_characters(env: Env) -> None:
    source = r"""
    const lone = "a\ud800b\ud83d\ude00c" + "\udc00".repeat(2) + "\ud83d";
    console.log(lone, {[lone]: lone});
    console.error(lone.slice(-1) + lone.slice(0, 1));
    fs.writeText("out-" + lone.slice(-1) + ".txt", lone);
    console.log(fs.list().filter((name) => name.startsWith("out-")));
    """
    result = run(env, source)
    assert result.status is RunStatus.OK, result.stderr.text
    shown = "a\ufffdb\U0001f600c\ufffd\ufffd\ufffd"
    escaped = r"a\ud800b" + "\U0001f600" + r"c\udc00\udc00\ud83d"  # as JSON.stringify writes it
    assert result.stdout.text == f'{shown} {{"{escaped}":"{escaped}"}}\n["out-\ufffd.txt"]\n'
    assert result.stderr.text == "\ufffda\n"
    assert (env.workspace / "out-\ufffd.txt").read_text() == shown


def test_fs_reads_writes_lists_and_removes_inside_the_workspace(env: Env) -> None:
    (env.workspace / "in.txt").write_text("hello")
    source = """
    fs.writeText("out/deep/result.txt", fs.readText("in.txt").toUpperCase() + " é");
    console.log(fs.exists("out/deep/result.txt"), fs.exists("nope"), fs.list("out/deep"));
    fs.remove("in.txt");
    fs.writeText("nul.txt", "a\\0b");
    console.log(fs.list().join(","));
    """
    result = run(env, source)
    assert result.status is RunStatus.OK, result.stderr.text
    assert result.stdout.text == 'true false ["result.txt"]\nmain.js,nul.txt,out\n'
    assert (env.workspace / "nul.txt").read_bytes() == b"a\0b"
    assert (env.workspace / "out/deep/result.txt").read_text() == "HELLO é"
    assert not (env.workspace / "in.txt").exists()


ESCAPES = """
const attempts = [
  () => fs.readText("../outside/secret.txt"),
  () => fs.writeText("../outside/secret.txt", "pwned"),
  () => fs.readText(WORKSPACE_OUTSIDE),
  () => fs.writeText(WORKSPACE_OUTSIDE, "pwned"),
  () => fs.readText("passwd-link"),
  () => fs.writeText("secret-link", "pwned"),
  () => fs.readText("outside-dir/secret.txt"),
  () => fs.writeText("outside-dir/new.txt", "pwned"),
  () => fs.list("outside-dir"),
  () => fs.exists("/etc/passwd"),
  () => fs.remove("outside-dir/secret.txt"),
  () => fs.remove("a/../../outside/secret.txt"),
];
for (const attempt of attempts) {
  try { attempt(); console.log("ALLOWED", attempt); } catch (e) { console.log(e.message); }
}
fs.remove("secret-link");
"""


def test_fs_refuses_every_escape_and_leaves_host_files_alone(env: Env) -> None:
    secret = env.outside / "secret.txt"
    secret.write_text("host data")
    (env.workspace / "passwd-link").symlink_to("/etc/passwd")
    (env.workspace / "secret-link").symlink_to(secret)
    (env.workspace / "outside-dir").symlink_to(env.outside)
    passwd = Path("/etc/passwd").read_bytes()
    result = run(env, ESCAPES.replace("WORKSPACE_OUTSIDE", repr(str(secret))))
    assert result.status is RunStatus.OK, result.stderr.text
    lines = result.stdout.text.splitlines()
    assert len(lines) == 12
    assert not [line for line in lines if line.startswith("ALLOWED")]
    assert lines[0] == "fs.readText: path '../outside/secret.txt' refused: '..' is not allowed"
    assert "absolute path" in lines[2] and "refused" in lines[2]
    assert lines[4] == (
        "fs.readText: path 'passwd-link' refused: 'passwd-link' is a symbolic link, which "
        "could lead outside the workspace"
    )
    assert all("refused" in line for line in lines)
    assert secret.read_text() == "host data"
    assert [p.name for p in env.outside.iterdir()] == ["secret.txt"]
    assert Path("/etc/passwd").read_bytes() == passwd
    assert not (env.workspace / "secret-link").is_symlink()  # removing a link spares its target


RACE = """
let written = 0, refused = 0, failed = 0;
const end = Date.now() + 8000;  // until both sides of the race were hit (a loaded machine is slow)
while (Date.now() < end && !(written > 20 && refused > 20)) {
  try { fs.writeText("d/pwned.txt", "pwned"); written++; }
  catch (e) { if (e.message.includes("refused")) refused++; else failed++; }
}
console.log(JSON.stringify({ written, refused, failed }));
"""


def _exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (renameat2 with RENAME_EXCHANGE)."""
    at_fdcwd, rename_exchange = -100, 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(at_fdcwd, bytes(a), at_fdcwd, bytes(b), rename_exchange) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


def test_fs_writes_never_escape_through_a_folder_swapped_for_a_link(env: Env) -> None:
    """The reviewer's race: `d` flips between a folder and a link out while JS writes d/..."""
    (env.workspace / "d").mkdir()
    (env.workspace / "swap").symlink_to(env.outside)
    env.outside.chmod(0o777)  # writable by anyone: only the fs walk stands in the way
    done = threading.Event()

    def swap() -> None:  # each state lasts a moment, so both sides of the race get hit
        while not done.wait(0.0005):
            _exchange(env.workspace / "d", env.workspace / "swap")

    swapper = threading.Thread(target=swap)
    swapper.start()
    tries: list[dict[str, int]] = []
    try:
        while len(tries) < 3:  # a loaded machine may starve one side of the race: race again
            result = run(env, RACE)
            assert result.status is RunStatus.OK, result.stderr.text
            tries.append(json.loads(result.stdout.text))
            assert list(env.outside.iterdir()) == [], tries
            if tries[-1]["written"] > 0 and tries[-1]["refused"] > 0:
                break
    finally:
        done.set()
        swapper.join()
    assert tries[-1]["written"] > 0 and tries[-1]["refused"] > 0, tries  # both sides were hit


def test_fs_refuses_named_pipes_sockets_and_devices_without_blocking(env: Env) -> None:
    os.mkfifo(env.workspace / "fifo")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(env.workspace / "sock"))
    names = ["fifo", "sock"]
    if os.geteuid() == 0:
        os.mknod(env.workspace / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        names.append("null")
    source = f"""
    for (const p of {json.dumps(names)}) {{
      for (const f of [() => fs.readText(p), () => fs.writeText(p, "x")]) {{
        try {{ f(); console.log("ALLOWED"); }} catch (e) {{ console.log(e.message); }}
      }}
    }}
    """
    result = run(env, source, timeout_s=5)
    assert result.status is RunStatus.OK, result.cause
    kinds = {"fifo": "a named pipe (FIFO)", "sock": "a socket", "null": "a character device"}
    assert result.stdout.text.splitlines() == [
        f"fs.{op}: '{name}' refused: it is {kinds[name]}, not a regular file"
        for name in names
        for op in ("readText", "writeText")
    ]


def test_console_output_is_cut_at_the_cap_inside_one_call(env: Env) -> None:
    source = 'console.log("first line");\nconsole.log("z".repeat(70e6));\nconsole.log("last");\n'
    result = run(env, source, timeout_s=60)
    assert result.status is RunStatus.OK, result.cause
    assert result.stdout.total_bytes == 64 * MIB
    assert result.stdout.log_path is not None
    with result.stdout.log_path.open("rb") as log:
        assert log.read(16) == b"first line\nzzzzz"
    assert result.stderr.text == (
        "[workbench: a run prints at most 64 MiB of console output: stdout is cut after byte "
        f"{64 * MIB}, and everything after it is dropped]\n"
    )


def test_console_output_cut_in_stderr_is_said_on_a_line_of_its_own(env: Env) -> None:
    source = "console.log('x'.repeat(1000));\nconsole.error('e'.repeat(64 * 1024 * 1024));\n"
    result = run(env, source, timeout_s=60)
    assert result.stdout.text == "x" * 1000 + "\n"
    cut = 64 * MIB - 1001
    assert result.stderr.total_bytes > cut
    assert result.stderr.log_path is not None
    tail = result.stderr.log_path.read_bytes()[-300:].decode()  # the log keeps its tail
    assert tail.endswith(
        "eee\n[workbench: a run prints at most 64 MiB of console output: stderr is cut after "
        f"byte {cut}, and everything after it is dropped]\n"
    )


def test_fs_size_caps(env: Env) -> None:
    (env.workspace / "big.txt").write_bytes(b"x" * (16 * MIB + 1))
    source = """
    for (const f of [() => fs.readText("big.txt"),
                     () => fs.writeText("huge.txt", "y".repeat(16 * 1024 * 1024 + 1))]) {
      try { f(); console.log("ALLOWED"); } catch (e) { console.log(e.message); }
    }
    """
    result = run(env, source, memory_bytes=256 * MIB)
    assert result.stdout.text.splitlines() == [
        "fs.readText: reading 'big.txt' refused: larger than the 16 MiB cap",
        "fs.writeText: writing 'huge.txt' refused: 16777217 bytes exceed the 16 MiB cap",
    ]
    assert not (env.workspace / "huge.txt").exists()


def test_entry_script_from_the_skill_folder(env: Env) -> None:
    (env.skill / "scripts").mkdir()
    (env.skill / "scripts/hello.js").write_text("console.log('from the skill');\nnull.x;\n")
    result = run(env, None, script="$SKILL_DIR/scripts/hello.js")
    assert result.stdout.text == "from the skill\n"
    assert "$SKILL_DIR/scripts/hello.js:2" in result.stderr.text


@pytest.mark.parametrize(
    ("argv0", "words"),
    [
        ("../outside/x.js", "must be a .js file inside"),
        ("/etc/x.js", "must be a .js file inside"),
        ("$SKILL_DIR/../outside/x.js", "must be a .js file inside"),
        ("run.sh", "JavaScript files only"),
        ("missing.js", "script not found"),
        ("link.js", "must be a .js file inside"),
    ],
)
def test_entry_script_elsewhere_is_an_error(env: Env, argv0: str, words: str) -> None:
    (env.outside / "x.js").write_text("console.log('outside')")
    (env.workspace / "link.js").symlink_to(env.outside / "x.js")
    result = run(env, None, script=argv0)
    assert result.status is RunStatus.ERROR
    assert words in result.cause
    assert result.stdout.text == ""


def test_card_reads_back_the_worker_rlimits(env: Env) -> None:
    result = run(env, "1", memory_bytes=64 * MIB, cpu_seconds=7)
    checks = dict(result.card.checks)
    assert checks["RLIMIT_AS 320 MiB"] is True
    assert checks["RLIMIT_CPU 7 s"] is True
    assert checks["RLIMIT_NOFILE 16"] is True
    assert checks["RLIMIT_CORE 0"] is True
    assert checks["RLIMIT_NPROC 0"] is True  # enforced: the worker is never root
    assert checks["QuickJS memory limit 64 MiB"] is True
    assert checks["QuickJS in-VM time limit (off: it refuses host calls)"] is False


def test_card_says_who_the_worker_ran_as(env: Env) -> None:
    """As root, a throwaway uid read back from /proc; the workspace is lent, then given back."""
    (env.workspace / "mine.txt").write_text("the user's")
    result = run(env, 'fs.writeText("new.txt", fs.readText("mine.txt") + " copy");')
    assert result.status is RunStatus.OK, result.stderr.text
    assert (env.workspace / "new.txt").read_text() == "the user's copy"
    if os.geteuid() != 0:
        assert result.card.run_as.endswith(
            "you (the workbench is not root, so it cannot switch users)"
        )
        return
    uid = int(result.card.run_as.split(",")[0].removeprefix("uid "))
    assert uid >= RUN_UID_BASE
    assert result.card.run_as.startswith(f"uid {uid}, gid {uid}: a throwaway user")
    assert dict(result.card.checks)[f"runs as uid {uid}"] is True
    owners = {path.stat().st_uid for path in (env.workspace, *env.workspace.iterdir())}
    assert owners == {0}  # lent for the run, given back after it


def test_the_worker_start_imports_nothing_heavy() -> None:
    """Its imports are every run's start: of the executors only the (empty) package docstrings
    on the way to the worker, and no asyncio, psutil, nor HTTP; nor `re` (about a third of the
    worker's start), which json, typing and pathlib would each bring, nor contextlib and
    importlib (with what they bring, 2.5 ms)."""
    code = "import sys, workbench.executors.quickjs.worker.main; print(*sys.modules)"
    argv = [sys.executable, "-I", "-c", code]
    loaded = set(subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split())
    heavy = {"asyncio", "psutil", "quickjs", "concurrent.futures", "re", "json", "typing"}
    heavy |= {"contextlib", "importlib", "collections", "functools"}
    assert heavy.isdisjoint(loaded)
    ours = {name for name in loaded if name.startswith("workbench")}
    on_the_way = {"workbench", "workbench.executors", "workbench.executors.quickjs"}
    assert ours - on_the_way == {
        name for name in ours if name.startswith("workbench.executors.quickjs.worker")
    }
    assert "http.client" not in loaded  # imported by the first fetch only
