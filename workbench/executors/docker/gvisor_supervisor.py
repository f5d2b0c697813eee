"""The main process of a gVisor session container: it starts, streams, signals and sweeps commands.

It runs inside the sandbox as `python3 -I -S -c SOURCE` (stdlib only, never imported there), first
refusing new user namespaces with a seccomp filter that every command then inherits (without it a
command in its own user namespace escapes gVisor's process limit: docs/notes.md, "Docker
sessions"), and makes itself undumpable, so a command of the same uid can neither trace it nor read
its memory. It serves the host over its attached stdin and stdout (`supervisor_link` is the other
end). runsc lets a command of the same uid open those two through /proc, so the first line brings a
key and everything after it is sealed with a MAC of that key: requests are JSON lines, each with a
`seq` one above the last (a forged, replayed or torn one is dropped; a gap means a process took
one, and is answered with a `REQUEST_GAP` frame), answers binary frames (`HEADER`: frame number,
command number, kind, length, then payload and MAC); once the key came, its stderr is /dev/null.
`start` spawns a command (`posix_spawn`, its own session, stdin from /dev/null) and streams its
output, then says when its output closed and how it exited (128 + N for signal N, as Docker
reports); `sweep` kills every process of a run and verifies none is left, needing no new process,
so it works while a fork bomb holds every slot; `close` stops forwarding a command's output; `ping`
answers. SIGUSR1 kills every process but the supervisor and the init."""

# Plain os calls, not pathlib: the sandbox pays for every module this program imports.
# ruff: noqa: PTH113, PTH118, PTH123, PTH208

import contextlib
import errno
import hashlib
import hmac
import json
import os
import selectors
import signal
import struct
import sys
import time

HEADER = struct.Struct(">QIBI")  # frame number, command number, kind, payload length
MAC_SIZE = 16
STDOUT, STDERR, CLOSED, EXITED, REPLY, REQUEST_GAP = 1, 2, 3, 4, 5, 6
TAG_VARIABLE = "WORKBENCH_RUN_ID"
TAG_NAME = TAG_VARIABLE.encode() + b"="
NOT_FOUND = "executable file not found in $PATH"  # runsc's own words, which runs have shown
NO_SLOT = "no free process slot to start it"  # a spawn refused with EAGAIN: the process limit
READ_SIZE = 65536
SHOWN_CHARS = 200
SWEEP_S = 1.0  # how long a sweep may go on finding processes before it says how many are left
SWEEP_PAUSE_S = 0.002  # between passes that found some: time for the killed to die

# seccomp: refuse unshare, setns and clone with CLONE_NEWUSER (clone3 answers ENOSYS, so libcs
# fall back to clone), fail closed on another architecture.
_SYSCALLS = {"x86_64": (0xC000003E, 435, 272, 308, 56), "aarch64": (0xC00000B7, 435, 97, 268, 220)}


def refuse_user_namespaces() -> None:
    """Install the seccomp filter (or exit: a command must never run without it)."""
    import ctypes

    machine = os.uname().machine
    if machine not in _SYSCALLS:
        sys.exit("workbench: cannot refuse user namespaces on " + machine)
    arch, clone3, unshare, setns, clone = _SYSCALLS[machine]
    load, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050001, 0x00050026

    def op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
        return struct.pack("=HBBI", code, jt, jf, k)

    program = b"".join([
        op(load, 4), op(jeq, arch, 1, 0), op(ret, eperm),
        op(load, 0), op(jeq, clone3, 7), op(jeq, unshare, 4), op(jeq, setns, 3),
        op(jeq, clone, 0, 3), op(load, 16), op(jset, 0x10000000, 0, 1),
        op(ret, eperm), op(ret, allow), op(ret, enosys),
    ])  # fmt: skip

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    code = ctypes.create_string_buffer(program)
    fprog = Fprog(len(program) // 8, ctypes.addressof(code))
    libc = ctypes.CDLL(None, use_errno=True)
    no_new_privs, seccomp, filter_mode, dumpable = 38, 22, 2, 4
    if libc.prctl(no_new_privs, 1, 0, 0, 0) or libc.prctl(
        seccomp, filter_mode, ctypes.byref(fprog), 0, 0
    ):
        sys.exit("workbench: cannot install the seccomp filter: " + os.strerror(ctypes.get_errno()))
    if libc.prctl(dumpable, 0, 0, 0, 0):
        sys.exit("workbench: cannot make the supervisor undumpable")


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def mac(key: bytes, *parts: bytes) -> bytes:
    """The MAC that proves a request or frame came from the other end: a command of the same
    uid can open the supervisor's stdin and stdout (runsc does not refuse /proc/PID/fd of an
    undumpable process), but never learns the key, sent once before any command ran."""
    return hmac.new(key, b"".join(parts), hashlib.sha256).digest()[:MAC_SIZE]


def sealed_request(key: bytes, request: dict[str, object]) -> bytes:
    """A request line: its MAC (hex), a space, its JSON. Each carries a `seq` larger than the
    last one's, so none can be replayed."""
    body = json.dumps(request).encode()
    return mac(key, body).hex().encode() + b" " + body + b"\n"


def opened_request(key: bytes, line: bytes) -> dict[str, object] | None:
    """The request of a sealed line, or None when its MAC does not hold."""
    seal, _, body = line.partition(b" ")
    if not hmac.compare_digest(seal, mac(key, body).hex().encode()):
        return None
    try:
        request = json.loads(body)
    except ValueError:
        return None
    return request if isinstance(request, dict) else None


def sealed_frame(key: bytes, frame: int, command: int, kind: int, payload: bytes) -> bytes:
    header = HEADER.pack(frame, command, kind, len(payload))
    return header + payload + mac(key, header, payload)


def find(name: str, path: str) -> str:
    """`name` as execvp would run it with `path`; OSError as execvp would fail."""
    if "/" in name:
        return name
    denied = False
    for folder in path.split(":"):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate):
            if os.access(candidate, os.X_OK):
                return candidate
            denied = True
    raise OSError(errno.EACCES if denied else errno.ENOENT, "")


def run_tags(entries: list[bytes] | None) -> list[bytes]:
    """The run tags among a process's environment entries."""
    return [entry for entry in entries or () if entry.startswith(TAG_NAME)]


def environment(pid: str) -> list[bytes] | None:
    """The entries of `pid`'s initial environment, None when unreadable or empty."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            data = file.read()
    except OSError:
        return None
    return data.split(b"\0") if data else None


def state_parent_group(pid: str) -> tuple[str, str, str] | None:
    """`pid`'s state, parent and process group, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            fields = file.read().rpartition(b")")[2].split()
    except OSError:
        return None
    return fields[0].decode(), fields[1].decode(), fields[2].decode()


def command_line(pid: str) -> str:
    """`pid`'s command line on one line of at most `SHOWN_CHARS` (a process's argv must never
    add a line of its own to the sweep's report)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            text = file.read(4 * SHOWN_CHARS).decode(errors="replace")
    except OSError:
        return ""
    return " ".join(text.replace("\0", " ").split())[:SHOWN_CHARS]


def kill_everything(*_: object) -> None:
    for _round in range(8):
        with contextlib.suppress(OSError):
            os.kill(-1, signal.SIGKILL)


class Supervisor:
    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.outputs: dict[int, tuple[int, int]] = {}  # pipe fd -> (command, kind)
        self.open: dict[int, int] = {}  # command -> its pipes still open
        self.children: dict[int, tuple[int, bytes]] = {}  # pid -> command, the tag it started with
        self.inbox = b""
        self.key = b""  # the first line's, before any command ran
        self.last_request = 0
        self.frames = 0
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGUSR1, kill_everything)
        self.selector.register(wake_read, selectors.EVENT_READ, "wake")
        os.set_blocking(0, False)
        self.selector.register(0, selectors.EVENT_READ, "requests")

    def serve(self) -> None:
        while True:
            for key, _ in self.selector.select():
                if key.data == "wake":
                    while True:
                        try:
                            if not os.read(key.fd, 512):
                                break
                        except BlockingIOError:
                            break
                    self.reap()
                elif key.data == "requests":
                    self.read_requests()
                elif self.outputs.get(key.fd) == key.data:  # not closed (and reused) since
                    self.forward(key.fd)

    def read_requests(self) -> None:
        try:
            data = os.read(0, READ_SIZE)
        except BlockingIOError:  # a command that opened our stdin took what was there
            return
        if not data:  # the engine closed stdin: keep the commands running, as exec would
            self.selector.unregister(0)
            return
        self.inbox += data
        *lines, self.inbox = self.inbox.split(b"\n")
        for line in lines:
            if not self.key:
                self.key = bytes.fromhex(json.loads(line)["key"])
                quiet = os.open(os.devnull, os.O_WRONLY)  # no command can write in our name
                os.dup2(quiet, 2)
                os.close(quiet)
                continue
            request = opened_request(self.key, line) or {}
            seq = request.pop("seq", 0)
            if not isinstance(seq, int) or seq <= self.last_request:
                continue  # forged, replayed or torn by a command reading stdin too: dropped
            if seq != self.last_request + 1:  # a command read the ones between
                self.send(0, REQUEST_GAP, str(seq).encode())
            self.last_request = seq
            with contextlib.suppress(Exception):  # a request that cannot be served is dropped
                getattr(self, "do_" + str(request.pop("op")))(**request)

    def send(self, command: int, kind: int, payload: bytes = b"") -> None:
        self.frames += 1
        write_all(1, sealed_frame(self.key, self.frames, command, kind, payload))

    def do_ping(self, command: int) -> None:
        self.send(command, REPLY, f"{sum(os.times()[:2]):.3f}".encode())

    def do_start(self, command: int, argv: list[str], env: dict[str, str], cwd: str) -> None:
        variables = {**os.environ, **env}
        pipes: list[int] = []
        try:
            path = find(argv[0], variables.get("PATH", os.defpath))
            os.chdir(cwd)
            out_read, out_write = os.pipe()
            pipes += [out_read, out_write]
            err_read, err_write = os.pipe()
            pipes += [err_read, err_write]
            pid = os.posix_spawn(
                path,
                argv,
                variables,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, out_write, 1),
                    (os.POSIX_SPAWN_DUP2, err_write, 2),
                ],
                setsid=True,
                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
                setsigmask=(),
            )
        except (OSError, ValueError) as error:
            for fd in pipes:
                os.close(fd)
            self.refuse(command, argv[0] if argv else "", error)
            return
        os.close(out_write)
        os.close(err_write)
        self.children[pid] = command, TAG_NAME + variables.get(TAG_VARIABLE, "").encode()
        self.open[command] = 2
        for fd, kind in ((out_read, STDOUT), (err_read, STDERR)):
            os.set_blocking(fd, False)
            self.outputs[fd] = (command, kind)
            self.selector.register(fd, selectors.EVENT_READ, (command, kind))

    def refuse(self, command: int, name: str, error: Exception) -> None:
        """Answer a command that could not start as runsc would have: its words, 127 or 126."""
        missing = isinstance(error, OSError) and error.errno == errno.ENOENT
        if isinstance(error, OSError) and error.errno == errno.EAGAIN:
            why = NO_SLOT
        else:
            why = NOT_FOUND if missing else getattr(error, "strerror", None) or str(error)
        self.send(command, STDERR, f"exec: {name}: {why}\n".encode(errors="replace"))
        self.send(command, CLOSED)
        self.send(command, EXITED, b"127" if missing else b"126")

    def forward(self, fd: int) -> None:
        command, kind = self.outputs[fd]
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self.send(command, kind, data)
            return
        self.drop(fd)
        self.open[command] -= 1
        if not self.open[command]:
            del self.open[command]
            self.send(command, CLOSED)

    def drop(self, fd: int) -> None:
        self.selector.unregister(fd)
        os.close(fd)
        del self.outputs[fd]

    def do_close(self, command: int) -> None:
        for fd in [fd for fd, (owner, _) in self.outputs.items() if owner == command]:
            self.drop(fd)
        self.open.pop(command, None)

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if not pid:
                return
            if pid in self.children:
                command, _ = self.children.pop(pid)
                code = os.waitstatus_to_exitcode(status)
                self.send(command, EXITED, str(128 - code if code < 0 else code).encode())

    def do_sweep(self, command: int, tag: str, keep: int, live: list[str]) -> None:
        """Kill the run's processes until two passes in a row find none (the answer's lines are
        `session.KILL_SCRIPT`'s), reaping the supervisor's own children. The run's are the
        children it started with `tag`, whatever their environment says now, and the processes
        carrying `tag`; escapees are the orphans of the init (parent 1) that carry none of the
        `live` runs' tags. Others are spared: another run's, or their parent is still alive
        (once it dies, a pass finds them orphans). A run's process is killed with its whole
        process group (its command's session, unless it made its own): a fork bomb's children
        all die at once, where one by one they would fork faster than a loaded sweep kills."""
        ours, me, own_group = tag.encode(), str(os.getpid()), str(os.getpgrp())
        alive = {ours, *(run.encode() for run in live)}
        seen: set[str] = set()
        lines: list[str] = []
        clean = found = 0
        deadline = time.monotonic() + SWEEP_S
        while clean < 2 and time.monotonic() < deadline:
            self.reap()
            found = 0
            victims: list[tuple[str, str, str]] = []  # pid, its group (if the run's), shown
            pids = [name for name in os.listdir("/proc") if name.isdigit()]
            tags = {pid: environment(pid) for pid in pids}
            for pid in pids:
                if pid in ("1", me):
                    continue
                tagged = [entry for entry in run_tags(tags[pid]) if entry in alive]
                mine = ours in tagged or self.children.get(int(pid), (0, b""))[1] == ours
                stat = state_parent_group(pid)
                if stat is None:
                    found += mine
                    continue
                state, parent, group = stat
                if state == "Z":  # still holds a slot, unless a live process of another run's
                    owner = run_tags(tags.get(parent))
                    found += parent == "1" or not owner or ours in owner
                    continue
                if not mine and (tagged or parent != "1"):  # another run's, or not an orphan
                    continue
                if pid in seen:
                    found += _killed(pid)
                    continue
                shown = command_line(pid) if len(lines) + len(victims) < keep else ""
                victims.append((pid, group if mine else "", shown))
            groups = {group for _, group, _ in victims} - {"", "0", "1", own_group}
            groups_killed = {group for group in groups if _killed(group, group=True)}
            for pid, group, shown in victims:
                if group in groups_killed or _killed(pid):  # alive when read: counted once
                    found += 1
                    seen.add(pid)
                    lines.append("k " + shown)
            clean = 0 if found else clean + 1
            if found:
                time.sleep(SWEEP_PAUSE_S)
        self.reap()
        lines.append(f"left {found}")
        lines.append(f"cpu {sum(os.times()[:2]):.3f}")
        self.send(command, REPLY, "\n".join(lines).encode(errors="replace"))


def _killed(pid: str, group: bool = False) -> bool:
    """Whether SIGKILL was sent to process `pid` (or to the process group `pid`)."""
    try:
        (os.killpg if group else os.kill)(int(pid), signal.SIGKILL)
    except OSError:
        return False
    return True


if __name__ == "__main__":
    refuse_user_namespaces()
    Supervisor().serve()
