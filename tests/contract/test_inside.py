"""Every limit a posture card lists, read back from inside the run under each posture.

A probe script in the skill folder reports what the command itself sees: its rlimits (soft and
hard), its cgroup's limits, its mounts, its network interfaces, its uids, its capabilities
(capget) and no_new_privs (prctl, which gVisor answers where it has no /proc/self/status).
"""

import json
import os

import pytest

from tests.contract.conftest import Harness
from workbench.executors.types import RunStatus
from workbench.postures.model import CONTAINER_POSTURES, Posture, PostureId

PROBE = """
import ctypes, json, os, resource, socket

libc = ctypes.CDLL(None, use_errno=True)


class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class Data(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inheritable")]


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


CGROUP = "/sys/fs/cgroup"
header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3
assert libc.capget(ctypes.byref(header), data) == 0
mounts = {}
for line in open("/proc/self/mounts"):
    fields = line.split()
    mounts[fields[1]] = [fields[2], *fields[3].split(",")]
paths = {"/": "/", "skill": os.environ["SKILL_DIR"], "workspace": os.environ["WORKSPACE"]}
print(json.dumps({
    "rlimits": {
        name: resource.getrlimit(getattr(resource, "RLIMIT_" + name))
        for name in ("CPU", "AS", "NPROC", "NOFILE", "FSIZE", "CORE")
    },
    "cgroup": {  # cgroup v2's files, else v1's
        "memory": read(f"{CGROUP}/memory.max") or read(f"{CGROUP}/memory/memory.limit_in_bytes"),
        "pids": read(f"{CGROUP}/pids.max") or read(f"{CGROUP}/pids/pids.max"),
        "cpu": read(f"{CGROUP}/cpu.max")
        or f"{read(f'{CGROUP}/cpu/cpu.cfs_quota_us')} {read(f'{CGROUP}/cpu/cpu.cfs_period_us')}",
    },
    "mounts": {key: mounts.get(path, []) for key, path in paths.items()},
    "tmp": mounts.get("/tmp", []),
    "interfaces": sorted(name for _, name in socket.if_nameindex()),
    "uids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid()],
    "capabilities": [getattr(d, f) for d in data for f in ("effective", "permitted")],
    "no_new_privs": libc.prctl(39, 0, 0, 0, 0),  # PR_GET_NO_NEW_PRIVS
}))
"""


def probe(harness: Harness) -> dict:  # type: ignore[type-arg]
    (harness.skill_dir / "inside.py").write_text(PROBE)
    for path in (harness.skill_dir, harness.skill_dir / "inside.py"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    result = harness.run("sh", "-c", 'exec python3 "$SKILL_DIR/inside.py"').result
    assert result.status is RunStatus.OK, result.stderr.text
    limits = [check for check in result.card.checks if "RLIMIT_" in check[0]]
    if harness.posture_id in CONTAINER_POSTURES:  # every control of a container card holds
        limits = list(result.card.checks)
    assert limits and all(held for _, held in limits), result.card.checks
    seen: dict = json.loads(result.stdout.text)  # type: ignore[type-arg]
    return seen


def test_what_the_card_lists_is_what_the_command_gets(harness: Harness) -> None:
    if harness.posture_id is PostureId.LOCAL:
        pytest.skip("the local posture applies no rlimit nor any container control")
    limits = Posture(harness.posture_id).limits
    seen = probe(harness)
    rlimits = {name: tuple(pair) for name, pair in seen["rlimits"].items()}
    for name, value in (
        ("CPU", limits.cpu_seconds),
        ("NOFILE", limits.open_files),
        ("FSIZE", limits.file_size_bytes),
    ):
        assert rlimits[name] == (value, value), name
    assert seen["no_new_privs"] == 1
    if harness.posture_id is PostureId.HARDENED:
        assert rlimits["AS"] == (limits.memory_bytes,) * 2
        assert rlimits["CORE"] == (0, 0)
        assert rlimits["NPROC"][0] == rlimits["NPROC"][1] >= limits.pids
        if os.geteuid() == 0:
            assert seen["uids"][0] != 0 and len(set(seen["uids"][:2])) == 1
        return
    assert seen["interfaces"] == ["lo"]  # a sandbox: docker, gvisor or bubblewrap
    assert seen["capabilities"] == [0, 0, 0, 0]
    assert 0 not in seen["uids"]
    assert "ro" in seen["mounts"]["/"] and "ro" in seen["mounts"]["skill"]
    assert "rw" in seen["mounts"]["workspace"]
    assert seen["tmp"][0] == "tmpfs"
    if harness.posture_id is PostureId.BUBBLEWRAP:
        assert rlimits["AS"] == (limits.memory_bytes,) * 2
        assert rlimits["NPROC"] == (limits.pids,) * 2
        assert rlimits["CORE"] == (0, 0)
    elif harness.posture_id is PostureId.GVISOR:
        assert rlimits["NPROC"] == (limits.pids,) * 2
    else:
        assert seen["cgroup"] == {
            "memory": str(limits.memory_bytes),
            "pids": str(limits.pids),
            "cpu": f"{int(limits.cpus * 100_000)} 100000",
        }
