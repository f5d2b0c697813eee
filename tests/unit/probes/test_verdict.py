"""Verdicts from a run and the host's evidence: the host's word wins over the probe's."""

import pytest

from tests.unit.probes.conftest import make_result
from workbench.executors.types import RunStatus
from workbench.probes.catalogue import ProbeId
from workbench.probes.verdict import HostEvidence, Verdict, judge


def test_a_reached_line_is_a_leak_when_the_host_cannot_observe() -> None:
    result = make_result(stdout="noise\nPROBE env-secret reached own-environment\n")
    judgement = judge(ProbeId.ENV_SECRET, result, HostEvidence())
    assert judgement.verdict is Verdict.NOT_CONTAINED
    assert "own-environment" in judgement.detail


def test_a_blocked_line_is_contained_with_its_detail() -> None:
    result = make_result(stdout="PROBE read-outside blocked not-visible\n")
    judgement = judge(ProbeId.READ_OUTSIDE, result, HostEvidence())
    assert (judgement.verdict, judgement.detail) == (Verdict.CONTAINED, "not-visible")


def test_another_probes_line_does_not_count() -> None:
    result = make_result(stdout="PROBE read-home reached read-canary\n")
    judgement = judge(ProbeId.READ_OUTSIDE, result, HostEvidence())
    assert judgement.verdict is Verdict.NOT_APPLICABLE


def test_the_host_seeing_the_file_wins_over_a_blocked_line() -> None:
    result = make_result(stdout="PROBE write-outside blocked permission-denied\n")
    judgement = judge(ProbeId.WRITE_OUTSIDE, result, HostEvidence(reached=True))
    assert judgement.verdict is Verdict.NOT_CONTAINED


def test_a_write_the_host_does_not_see_is_contained_even_if_the_probe_claims_it() -> None:
    result = make_result(stdout="PROBE write-outside reached wrote-file\n")
    judgement = judge(ProbeId.WRITE_OUTSIDE, result, HostEvidence(reached=False))
    assert judgement.verdict is Verdict.CONTAINED
    assert "not on the host" in judgement.detail


@pytest.mark.parametrize(
    ("status", "cause"),
    [
        (RunStatus.TIMED_OUT, "wall-clock timeout of 4 s"),
        (RunStatus.LIMIT_EXCEEDED, "RLIMIT_CPU 1 s"),
        (RunStatus.OOM_KILLED, "memory limit 64 MiB (cgroup OOM)"),
    ],
)
def test_a_control_that_ended_the_run_is_named(status: RunStatus, cause: str) -> None:
    result = make_result(status, "PROBE cpu started spinning\n", cause)
    judgement = judge(ProbeId.CPU, result, HostEvidence())
    assert (judgement.verdict, judgement.detail) == (Verdict.CONTAINED, cause)


def test_a_probe_that_died_after_starting_is_contained_by_what_killed_it() -> None:
    result = make_result(
        RunStatus.FAILED, "PROBE memory started allocating\n", "killed by signal SIGSEGV"
    )
    judgement = judge(ProbeId.MEMORY, result, HostEvidence())
    assert judgement.verdict is Verdict.CONTAINED
    assert "SIGSEGV" in judgement.detail


def test_a_workbench_error_is_not_applicable() -> None:
    result = make_result(RunStatus.ERROR, "", "the image is missing")
    judgement = judge(ProbeId.FORK, result, HostEvidence())
    assert judgement.verdict is Verdict.NOT_APPLICABLE
    assert "the image is missing" in judgement.detail


@pytest.mark.parametrize(
    ("probe", "detail"),
    [(ProbeId.LOOPBACK, "no-tcp-client"), (ProbeId.DISK, "workspace-not-writable")],
)
def test_a_probe_that_could_not_try_is_not_applicable(probe: ProbeId, detail: str) -> None:
    result = make_result(stdout=f"PROBE {probe.value} blocked {detail}\n")
    judgement = judge(probe, result, HostEvidence())
    assert judgement.verdict is Verdict.NOT_APPLICABLE


def test_the_host_may_rule_a_probe_out() -> None:
    result = make_result(stdout="PROBE resolve blocked no-route-off-machine\n")
    judgement = judge(ProbeId.RESOLVE, result, HostEvidence(not_applicable="no route here"))
    assert (judgement.verdict, judgement.detail) == (Verdict.NOT_APPLICABLE, "no route here")


def test_a_daemon_gone_after_the_run_is_contained_and_a_survivor_is_not() -> None:
    result = make_result(stdout="PROBE daemon started detached\n")
    assert judge(ProbeId.DAEMON, result, HostEvidence(reached=False)).verdict is (Verdict.CONTAINED)
    assert judge(ProbeId.DAEMON, result, HostEvidence(reached=True)).verdict is (
        Verdict.NOT_CONTAINED
    )


def test_no_line_and_no_control_gives_no_verdict() -> None:
    result = make_result(RunStatus.FAILED, "sh: probe.sh: not found\n", "exited with code 127")
    judgement = judge(ProbeId.DISK, result, HostEvidence())
    assert judgement.verdict is Verdict.NOT_APPLICABLE
    assert "exited with code 127" in judgement.detail


def test_escape_output_is_about_display_and_its_plain_form_holds_no_escape() -> None:
    result = make_result(stdout="title: \x1b]0;x\x07 red: \x1b[31mRED\x1b[0m\n")
    judgement = judge(ProbeId.ESCAPE, result, HostEvidence())
    assert judgement.verdict is Verdict.NOT_APPLICABLE
    assert "\\x1b" in judgement.detail


def test_escape_output_that_was_dropped_before_the_record_is_contained() -> None:
    result = make_result(stdout="title:  red: RED\n")
    assert judge(ProbeId.ESCAPE, result, HostEvidence()).verdict is Verdict.CONTAINED
