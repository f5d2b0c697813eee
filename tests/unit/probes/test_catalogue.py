"""The probe catalogue: every probe has a valid skill with both scripts; lines parse."""

from workbench.postures.model import PostureId
from workbench.probes.catalogue import (
    PROBES,
    ProbeId,
    ProbeLine,
    probe_argv,
    probe_lines,
    probe_skills_dir,
)
from workbench.skills import load_skill
from workbench.skills.diagnostics import DiagnosticSeverity


def test_every_probe_id_is_in_the_catalogue_once() -> None:
    assert [probe.id for probe in PROBES] == list(ProbeId)


def test_every_probe_skill_is_valid_and_has_a_shell_and_a_js_script() -> None:
    for skill in {probe.skill for probe in PROBES}:
        folder = probe_skills_dir() / skill
        loaded = load_skill(folder)
        errors = [d for d in loaded.diagnostics if d.severity is DiagnosticSeverity.ERROR]
        assert errors == [], skill
        assert loaded.name == skill
        assert (folder / "scripts" / "probe.sh").is_file()
        assert (folder / "scripts" / "probe.js").is_file()


def test_probe_skills_stay_out_of_the_example_catalog() -> None:
    examples = probe_skills_dir().parent / "skills"
    assert not any(path.name.startswith("probe-") for path in examples.iterdir())


def test_shell_probes_find_their_script_through_skill_dir() -> None:
    argv = probe_argv(PostureId.DOCKER, ProbeId.FORK, ("64",))
    assert argv[:2] == ("sh", "-c")
    assert '"$SKILL_DIR/probe-fork/scripts/probe.sh"' in argv[2]
    assert argv[-2:] == ("fork", "64")


def test_quickjs_probes_run_the_js_script() -> None:
    argv = probe_argv(PostureId.QUICKJS, ProbeId.CPU, ("30",))
    assert argv == ("$SKILL_DIR/probe-cpu-spin/scripts/probe.js", "cpu", "30")


def test_probe_lines_keep_only_the_probes_own_well_formed_lines() -> None:
    output = (
        "PROBE memory started allocating\n"
        "PROBE fork reached started-64-processes\n"
        "echo PROBE memory reached fake\n"
        "PROBE memory reached allocated-134217728-bytes\n"
        "PROBE memory exploded badly\n"
    )
    assert probe_lines(output, ProbeId.MEMORY) == [
        ProbeLine("started", "allocating"),
        ProbeLine("reached", "allocated-134217728-bytes"),
    ]
