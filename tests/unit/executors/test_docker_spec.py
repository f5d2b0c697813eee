"""The Docker posture as engine options, the card read back, and how an exec's end is classified."""

from pathlib import Path
from typing import Any

import pytest

from workbench.executors.docker.outcome import ExecEnd, classify, split_exit
from workbench.executors.docker.sampler import CgroupCounters
from workbench.executors.docker.spec import (
    LABEL_APP,
    LABEL_SESSION,
    RUNC_NPROC,
    container_options,
    posture_card,
)
from workbench.executors.process.runner import EndedBy
from workbench.executors.types import RunStatus, SessionSpec
from workbench.postures.model import MIB, Limits, Network, Posture, PostureId

RLIMITS: list[dict[str, Any]] = [  # what the engine reports for the rlimits of LIMITS
    {"Name": "nofile", "Soft": 256, "Hard": 256},
    {"Name": "fsize", "Soft": 256 * MIB, "Hard": 256 * MIB},
    {"Name": "cpu", "Soft": 60, "Hard": 60},
]
SESSION = SessionSpec(Path("/skills/demo"), "demo", Path("/work/ws"), Path("/work/runs"))
LIMITS = Limits(  # the rlimits given, not the defaults: RLIMITS is what the engine reports
    timeout_s=5,
    memory_bytes=64 * MIB,
    cpus=0.5,
    pids=32,
    cpu_seconds=60,
    open_files=256,
    file_size_bytes=256 * MIB,
)
POSTURE = Posture(PostureId.DOCKER, limits=LIMITS)


def test_options_hold_every_safe_default() -> None:
    options = container_options(POSTURE, SESSION, "s1", "runc")
    assert options["network_mode"] == "none"
    assert options["mem_limit"] == options["memswap_limit"] == 64 * MIB
    assert options["nano_cpus"] == 500_000_000
    assert options["pids_limit"] == 32
    assert options["read_only"] is True
    assert options["init"] is True
    assert options["cap_drop"] == ["ALL"]
    assert options["security_opt"] == ["no-new-privileges"]
    assert options["cgroupns"] == "private"
    assert "size=64m" in options["tmpfs"]["/tmp"]
    assert options["user"] != "0:0"
    assert options["working_dir"] == "/workspace"
    assert options["volumes"] == [
        f"{Path('/skills/demo').resolve()}:/mnt/skills/demo:ro",
        f"{Path('/work/ws').resolve()}:/workspace:rw",
    ]
    assert options["labels"][LABEL_APP] == "1" and options["labels"][LABEL_SESSION] == "s1"
    forbidden = {"privileged", "devices", "pid_mode", "ipc_mode", "cap_add", "network"}
    assert not forbidden & options.keys()


def test_loosened_settings_reach_the_engine_only_when_asked() -> None:
    loose = Posture(
        PostureId.GVISOR, network=Network.BRIDGE, run_as_root=True, extra_mounts=("/data:/data:ro",)
    )
    options = container_options(loose, SESSION, "s1", "runsc")
    assert options["network_mode"] == "bridge"
    assert options["user"] == "0:0"
    assert options["runtime"] == "runsc"
    assert options["volumes"][-1] == "/data:/data:ro"


def inspect_data(**host: Any) -> dict[str, Any]:
    """Inspect data as the engine returns it for the options above."""
    host_config = {
        "CapDrop": ["ALL"],
        "CapAdd": None,
        "ReadonlyRootfs": True,
        "Memory": 64 * MIB,
        "MemorySwap": 64 * MIB,
        "NanoCpus": 500_000_000,
        "PidsLimit": 32,
        "NetworkMode": "none",
        "SecurityOpt": ["no-new-privileges"],
        "PidMode": "",
        "IpcMode": "private",
        "CgroupnsMode": "private",
        "Devices": [],
        "Privileged": False,
        "Runtime": "runc",
        "Ulimits": RLIMITS,
        **host,
    }
    mounts = [
        {"Source": "/skills/demo", "Destination": "/mnt/skills/demo", "RW": False},
        {"Source": "/work/ws", "Destination": "/workspace", "RW": True},
    ]
    return {"HostConfig": host_config, "Config": {"User": "1000:1000"}, "Mounts": mounts}


def test_gvisor_gets_rlimit_nproc_not_a_host_pids_limit_and_the_card_reads_it_back() -> None:
    gvisor = Posture(PostureId.GVISOR, limits=LIMITS)
    options = container_options(gvisor, SESSION, "s1", "runsc")
    assert "pids_limit" not in options
    assert options["ulimits"][-1] == {"name": "nproc", "soft": 32, "hard": 32}
    applied = [*RLIMITS, {"Name": "nproc", "Soft": 32, "Hard": 32}]
    card = posture_card(
        gvisor, inspect_data(PidsLimit=None, Runtime="runsc", Ulimits=applied), "runsc"
    )
    assert [label for label, held in card.checks if not held] == []
    assert ("Process limit 32 (RLIMIT_NPROC inside gVisor)", True) in card.checks
    missing = posture_card(
        gvisor, inspect_data(PidsLimit=None, Runtime="runsc", Ulimits=RLIMITS), "runsc"
    )
    assert [label for label, held in missing.checks if not held] == [
        "Process limit 0 (RLIMIT_NPROC inside gVisor)"
    ]


def test_every_rlimit_on_the_card_reaches_the_engine_with_hard_equal_to_soft() -> None:
    options = container_options(POSTURE, SESSION, "s1", "runc")
    assert options["ulimits"] == [
        *({"name": u["Name"], "soft": u["Soft"], "hard": u["Hard"]} for u in RLIMITS),
        {"name": "nproc", "soft": RUNC_NPROC, "hard": RUNC_NPROC},  # roomy: the pids cgroup rules
    ]
    card = posture_card(POSTURE, inspect_data(Ulimits=None), "runc")  # an engine that ignored them
    assert [label for label, held in card.checks if not held] == [
        "Open files limit 256 (RLIMIT_NOFILE)",
        "File size limit 256 MiB (RLIMIT_FSIZE)",
        "CPU time limit 60 s (RLIMIT_CPU)",
    ]
    raisable = [{**u, "Hard": u["Soft"] + 1} for u in RLIMITS]
    card = posture_card(POSTURE, inspect_data(Ulimits=raisable), "runc")
    assert len([label for label, held in card.checks if not held]) == 3


def test_card_checklist_holds_for_the_safe_container() -> None:
    card = posture_card(POSTURE, inspect_data(), "runc")
    failed = [label for label, held in card.checks if not held]
    assert failed == []
    assert card.run_as == "1000:1000"
    labels = " | ".join(label for label, _ in card.checks)
    for word in ("Non-root", "capabilities", "Read-only root", "Memory limit 64 MiB", "0.5 CPUs"):
        assert word in labels
    for word in (
        "Process limit 32",
        "Network off",
        "No new privileges",
        "socket",
        "host namespaces",
    ):
        assert word in labels


@pytest.mark.parametrize(
    ("host", "failing"),
    [
        ({"NetworkMode": "bridge"}, "Network off (is bridge)"),
        ({"PidMode": "host"}, "No host namespaces (PidMode)"),
        ({"CapAdd": ["NET_RAW"]}, "All capabilities dropped"),
        ({"Privileged": True}, "No devices, not privileged"),
        ({"Runtime": "runsc"}, "Runtime runsc"),
        ({"MemorySwap": -1}, "Memory limit 64 MiB, no swap beyond it"),
        ({"CapDrop": ["CAP_CHOWN", "CAP_KILL"]}, "All capabilities dropped"),
    ],
)
def test_card_shows_what_did_not_hold(host: dict[str, Any], failing: str) -> None:
    card = posture_card(POSTURE, inspect_data(**host), "runc")
    assert [label for label, held in card.checks if not held] == [failing]


def test_card_reads_podmans_inspect_data() -> None:
    podman_drops = [
        "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
        "NET_BIND_SERVICE", "NET_RAW", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
    ]  # fmt: skip
    podman_ulimits = [{**u, "Name": f"RLIMIT_{u['Name'].upper()}"} for u in RLIMITS]
    attrs = inspect_data(CapDrop=podman_drops, Runtime="oci", Ulimits=podman_ulimits)
    card = posture_card(POSTURE, attrs, "runc")
    assert [label for label, held in card.checks if not held] == []
    assert ("Runtime oci (Podman's default, not gVisor)", True) in card.checks
    not_gvisor = posture_card(POSTURE, inspect_data(Runtime="oci"), "runsc")
    assert ("Runtime oci", False) in not_gvisor.checks


@pytest.mark.parametrize("socket", ["/var/run/docker.sock", "/run/podman/podman.sock"])
def test_card_flags_a_mounted_engine_socket(socket: str) -> None:
    attrs = inspect_data()
    attrs["Mounts"].append({"Source": socket, "Destination": "/s", "RW": True})
    card = posture_card(POSTURE, attrs, "runc")
    assert ("No Docker socket mounted", False) in card.checks


def end(
    ended_by: EndedBy = EndedBy.EXIT,
    code: int | None = 0,
    rose: str = "",
    text: str = "",
    background: int = 0,
) -> ExecEnd:
    before = CgroupCounters(oom_kills=2, pids_max_hits=5)
    after = CgroupCounters(oom_kills=2 + (rose == "oom"), pids_max_hits=5 + 3 * (rose == "pids"))
    return ExecEnd(ended_by, code, before, after, text, background)


@pytest.mark.parametrize(
    ("ended", "status", "cause"),
    [
        (end(), RunStatus.OK, "exited with code 0"),
        (end(code=3), RunStatus.FAILED, "exited with code 3"),
        (end(code=137), RunStatus.FAILED, "killed by signal SIGKILL"),
        (end(code=137, rose="oom"), RunStatus.OOM_KILLED, "memory limit 64 MiB (cgroup OOM)"),
        (end(code=0, rose="pids"), RunStatus.LIMIT_EXCEEDED, "process limit 32 (pids cgroup)"),
        (end(EndedBy.TIMEOUT, 137, "pids"), RunStatus.TIMED_OUT, "wall-clock timeout of 5 s"),
        (end(EndedBy.CANCEL, 137), RunStatus.CANCELLED, "stopped by the user"),
        (
            end(EndedBy.SHUTDOWN, None),
            RunStatus.CANCELLED,
            "stopped because the session was closed",
        ),
        (
            end(code=1, text="touch: /etc/x: Read-only file system"),
            RunStatus.FAILED,
            "exited with code 1 after a write to the read-only root filesystem",
        ),
        (
            end(code=127, text='exec: "nope": executable file not found in $PATH'),
            RunStatus.ERROR,
            "command not found: nope",
        ),
        (
            end(background=2),
            RunStatus.OK,
            "exited with code 0; killed 2 background processes it left behind",
        ),
        (end(code=None), RunStatus.ERROR, "the engine did not report how the command ended"),
        (
            end(code=128 + 25),
            RunStatus.LIMIT_EXCEEDED,
            "file size limit 256 MiB (RLIMIT_FSIZE)",
        ),
        (end(code=128 + 24), RunStatus.LIMIT_EXCEEDED, "RLIMIT_CPU 60 s"),
    ],
)
def test_classify(ended: ExecEnd, status: RunStatus, cause: str) -> None:
    assert classify(ended, LIMITS, "nope", "runc") == (status, cause)


def test_counters_unknown_means_no_limit_is_claimed() -> None:
    unknown = ExecEnd(EndedBy.EXIT, 137, None, None, "", 0)
    assert classify(unknown, LIMITS, "x", "runc") == (RunStatus.FAILED, "killed by signal SIGKILL")


def test_split_exit() -> None:
    assert split_exit(0) == (0, None)
    assert split_exit(3) == (3, None)
    assert split_exit(137) == (None, 9)
    assert split_exit(None) == (None, None)
    assert split_exit(255) == (255, None)
