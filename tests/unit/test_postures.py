"""Posture models: safe defaults, honest warnings, availability and the default choice."""

from pathlib import Path

import pytest

from workbench.errors import PostureError
from workbench.executors.availability import (
    EngineRuntimes,
    docker_engine_runtimes,
    probe_availability,
)
from workbench.postures.description import POSTURE_INFO, assess, default_reason
from workbench.postures.model import (
    CONTAINER_POSTURES,
    MIB,
    Availability,
    Network,
    Posture,
    PostureId,
    Severity,
    default_posture_id,
    parse_posture_id,
)


def test_defaults_are_the_safe_ones() -> None:
    posture = Posture(PostureId.DOCKER)
    assert posture.network is Network.NONE
    assert posture.extra_mounts == ()
    assert posture.run_as_root is False
    assert not any(w.loosened for w in assess(posture))


def test_local_warns_loudly_every_time() -> None:
    warnings = assess(Posture(PostureId.LOCAL))
    assert warnings[0].severity is Severity.DANGER
    assert "NO SANDBOX" in warnings[0].text


def test_hardened_says_what_it_cannot_stop() -> None:
    text = " ".join(w.text for w in assess(Posture(PostureId.HARDENED)))
    assert "not a sandbox" in text
    assert "network" in text
    assert "other processes" in text


@pytest.mark.parametrize("posture_id", [PostureId.DOCKER, PostureId.GVISOR])
def test_loosened_container_settings_are_flagged(posture_id: PostureId) -> None:
    posture = Posture(
        posture_id, network=Network.BRIDGE, extra_mounts=("/home/me",), run_as_root=True
    ).with_limits(memory_bytes=4 * 1024**3)
    loosened = [w.text for w in assess(posture) if w.loosened]
    assert len(loosened) == 4
    assert any("Network is ON" in text for text in loosened)
    assert any("/home/me" in text for text in loosened)
    assert any("root" in text for text in loosened)
    assert any("Memory limit raised to 4096 MiB (default 512 MiB)" in text for text in loosened)


def test_quickjs_fetch_is_a_loosening() -> None:
    posture = Posture(PostureId.QUICKJS, fetch_hosts=("example.org",))
    assert [w.text for w in assess(posture) if w.loosened] == [
        "fetch is ON for these hosts: example.org."
    ]


def test_unknown_posture_lists_the_known_ones() -> None:
    with pytest.raises(PostureError, match="Known postures: local, hardened, bubblewrap, docker"):
        parse_posture_id("chroot")


def test_gvisor_needs_the_runsc_runtime() -> None:
    assert probe_availability(PostureId.GVISOR, {"runc"}).available is False
    assert probe_availability(PostureId.GVISOR, {"runc", "runsc"}).available is True
    assert probe_availability(PostureId.DOCKER, None).available is False


def runsc(*args: str) -> EngineRuntimes:
    return EngineRuntimes.from_info(
        {"runc": {"path": "runc"}, "runsc": {"path": "runsc", "runtimeArgs": list(args)}}
    )


def test_gvisor_availability_says_when_its_runtime_never_gives_a_network() -> None:
    runtimes = runsc("--network=none")
    assert runtimes == {"runc", "runsc"}
    found = probe_availability(PostureId.GVISOR, runtimes)
    assert found.available is True
    assert "runs with --network=none" in found.reason
    assert "--network bridge is refused" in found.reason
    plain = probe_availability(PostureId.GVISOR, runsc("--debug"))
    assert plain.reason == "The Docker engine answers."


def test_gvisor_names_its_process_limit_instead_of_denying_one() -> None:
    texts = [w.text for w in assess(Posture(PostureId.GVISOR))]
    assert not any("No process limit" in text for text in texts)
    [limit] = [text for text in texts if text.startswith("The process limit is RLIMIT_NPROC")]
    assert limit.endswith("only when a failing command reports a refused fork.")
    [guarantee] = [t for t in POSTURE_INFO[PostureId.GVISOR].guarantees if "RLIMIT_NPROC" in t]
    assert "seccomp filter that refuses new user namespaces" in guarantee


def test_gvisor_network_warning_says_its_runtime_may_refuse_it() -> None:
    posture = Posture(PostureId.GVISOR, network=Network.BRIDGE)
    [network] = [w.text for w in assess(posture) if w.loosened]
    assert network == (
        "Network is ON: the skill can reach the network where the engine's runsc has one "
        "(where it has none, the run is refused)."
    )


def test_default_is_strongest_available_and_never_local() -> None:
    def availability(*available: PostureId) -> dict[PostureId, Availability]:
        return {p: Availability(p in available, "") for p in PostureId}

    assert default_posture_id(availability(*PostureId)) is PostureId.GVISOR
    assert default_posture_id(availability(PostureId.LOCAL, PostureId.HARDENED)) is (
        PostureId.HARDENED
    )
    with pytest.raises(PostureError, match="--posture local"):
        default_posture_id(availability(PostureId.LOCAL, PostureId.QUICKJS))


def test_without_docker_bubblewrap_is_the_default_and_the_reason_names_docker() -> None:
    available = {
        p: Availability(p not in CONTAINER_POSTURES, "No engine answers.") for p in PostureId
    }
    assert default_posture_id(available) is PostureId.BUBBLEWRAP
    reason = default_reason(available)
    assert reason.startswith("Bubblewrap sandbox is the default because Docker on gVisor and ")
    assert reason.endswith("cannot run here: No engine answers.")
    everything = {p: Availability(True, "") for p in PostureId}
    assert "strongest" in default_reason(everything)


def test_bubblewrap_warns_of_the_kernel_usr_and_allowed_hosts() -> None:
    plain = [w.text for w in assess(Posture(PostureId.BUBBLEWRAP))]
    assert any("shares the host kernel" in text for text in plain)
    assert any("/usr" in text for text in plain)
    assert not [w for w in assess(Posture(PostureId.BUBBLEWRAP)) if w.loosened]
    [loosened] = [
        w.text
        for w in assess(Posture(PostureId.BUBBLEWRAP, allow_hosts=("pypi.org",)))
        if w.loosened
    ]
    assert loosened.startswith(
        "Network is ON for these hosts, through the workbench's proxy: pypi.org."
    )


def test_engine_probe_without_engine_is_none_and_leaks_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-engine.sock'}")
    assert docker_engine_runtimes(timeout_s=1) is None


def test_workbench_postures_prints_the_note_of_an_available_posture_too() -> None:
    from workbench.cli.postures import _posture_text

    runtimes = runsc("--network=none")
    text = _posture_text(PostureId.GVISOR, probe_availability(PostureId.GVISOR, runtimes), True)
    [here] = [line for line in text.splitlines() if line.startswith("  here: ")]
    assert "--network bridge is refused" in here
    gone = _posture_text(PostureId.GVISOR, probe_availability(PostureId.GVISOR, None), False)
    assert "[UNAVAILABLE]" in gone
    assert "  why unavailable: " in gone
    assert "  here: " not in gone


def test_a_raised_workspace_limit_or_log_cap_is_a_loosened_setting() -> None:
    posture = Posture(PostureId.DOCKER).with_limits(disk_bytes=2048 * MIB, log_bytes=32 * MIB)
    loosened = [w.text for w in assess(posture) if w.loosened]
    assert loosened == [
        "Disk limit raised to 2048 MiB (default 1024 MiB).",
        "Output log cap raised to 32 MiB (default 16 MiB).",
    ]
