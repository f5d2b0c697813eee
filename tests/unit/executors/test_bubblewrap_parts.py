"""The bubblewrap posture's parts that need no bwrap: the allow-list and its proxy, the filter's
shape, the sandbox's view."""

import asyncio
import socket
import struct
from pathlib import Path

import pytest

from workbench.errors import UsageError
from workbench.executors.bubblewrap.availability import _version
from workbench.executors.bubblewrap.proxy import AllowList, EgressProxy, parse_host
from workbench.executors.bubblewrap.sandbox import SandboxSpec, bwrap_args, landlock_rules
from workbench.executors.bubblewrap.seccomp import ARCHES, CALLS, REFUSED, program
from workbench.executors.types import NetworkAttempt


def test_hosts_parse_with_and_without_ports() -> None:
    assert parse_host("PyPI.org") == ("pypi.org", None)
    assert parse_host("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_host("[::1]:443") == ("::1", 443)
    assert parse_host("::1") == ("::1", None)


@pytest.mark.parametrize(
    "text", ["", "a b", "host:0", "host:99999", "host:x", "u@h", "h/p", "[::1]x"]
)
def test_malformed_hosts_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_host(text)


def test_a_host_without_a_port_allows_only_http_and_https() -> None:
    allow = AllowList.parse(("pypi.org", "127.0.0.1:8080"))
    assert allow.allows("PYPI.org", 443) and allow.allows("pypi.org", 80)
    assert not allow.allows("pypi.org", 22)
    assert allow.allows("127.0.0.1", 8080) and not allow.allows("127.0.0.1", 8081)
    assert not allow.allows("evil.pypi.org", 443)
    assert not AllowList.parse(()).allows("pypi.org", 443)


@pytest.mark.parametrize("machine", sorted(ARCHES))
def test_the_filter_checks_the_architecture_first_and_allows_last(machine: str) -> None:
    code = program(machine)
    assert code is not None and len(code) % 8 == 0
    ops = [struct.unpack("=HBBI", code[i : i + 8]) for i in range(0, len(code), 8)]
    arch, numbers = ARCHES[machine]
    assert len(numbers) == len(CALLS)
    assert ops[0][3] == 4 and ops[1][3] == arch  # load seccomp_data.arch, compare
    assert ops[-1] == (0x06, 0, 0, 0x7FFF0000)  # return ALLOW
    for name in REFUSED:  # every refused call is compared against its own number
        assert any(op[0] == 0x15 and op[3] == numbers[CALLS.index(name)] for op in ops)
    assert program("sparc64") is None


def test_the_sandbox_binds_each_folder_at_its_own_path(tmp_path: Path) -> None:
    for name in ("usr", "etc", "lib64"):
        (tmp_path / name).mkdir()
    (tmp_path / "bin").symlink_to("usr/bin")
    spec = SandboxSpec(Path("/ws/skill"), Path("/ws"), 1024, seccomp_fd=7)
    args = bwrap_args(spec, root=tmp_path)
    joined = " ".join(args)
    assert "--symlink usr/bin /bin" in joined
    assert f"--ro-bind {tmp_path}/lib64 /lib64" in joined
    assert joined.index("--bind /ws /ws") < joined.index("--ro-bind /ws/skill /ws/skill")
    assert "--size 1024 --tmpfs /tmp" in joined and "--remount-ro /" in joined
    assert args[-2:] == ["--seccomp", "7"]
    assert ("rw", "/ws") in landlock_rules(spec) and ("ro", "/") in landlock_rules(spec)


def test_the_proxy_tunnels_connect_counts_bytes_and_logs_bad_requests() -> None:
    async def scenario() -> tuple[list[bytes], tuple[NetworkAttempt, ...]]:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(await reader.readexactly(5))
            await writer.drain()
            writer.close()

        target = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = target.sockets[0].getsockname()[1]
        listener = socket.create_server(("127.0.0.1", 0))
        proxy = EgressProxy(
            AllowList.parse((f"127.0.0.1:{port}",)), asyncio.get_running_loop().time()
        )
        await proxy.serve(listener)
        address = listener.getsockname()
        replies = []
        for request in (f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nhello", "GARBAGE\r\n\r\n"):
            reader, writer = await asyncio.open_connection(*address)
            writer.write(request.encode())
            replies.append(await reader.read())
            writer.close()
        log = await proxy.close()
        target.close()
        return replies, log

    replies, log = asyncio.run(scenario())
    assert replies[0] == b"HTTP/1.1 200 Connection established\r\n\r\nhello"
    assert replies[1].startswith(b"HTTP/1.1 400 Bad Request")
    (attempt,) = log  # a request that names no host is answered, not logged
    assert (attempt.verdict, attempt.method, attempt.bytes_sent, attempt.bytes_received) == (
        "allowed",
        "CONNECT",
        5,
        5,
    )


def test_a_bwrap_version_is_asked_once_per_file(tmp_path: Path) -> None:
    asked = tmp_path / "asked"
    bwrap = tmp_path / "bwrap"

    def install(version: str) -> None:
        bwrap.write_text(f'#!/bin/sh\necho x >> "{asked}"\necho "bubblewrap {version}"\n')
        bwrap.chmod(0o755)

    install("0.11.0")
    assert [_version(bwrap), _version(bwrap)] == [(0, 11, 0)] * 2
    assert asked.read_text().count("x") == 1
    install("0.12.10")  # another file at the same path is asked again
    assert _version(bwrap) == (0, 12, 10)
    assert asked.read_text().count("x") == 2
    bwrap.write_text("#!/bin/sh\nexit 1\n")  # no version: no answer, and none kept
    assert _version(bwrap) is None
    assert _version(tmp_path / "missing") is None
