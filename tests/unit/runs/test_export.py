"""Reports escape hostile skill output in every format."""

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from workbench.executors.types import RunResult
from workbench.postures.model import Network
from workbench.runs.diagnosis import Change, Diagnosis, Evidence, Kind
from workbench.runs.history import RunHistory
from workbench.runs.record import RunRecord
from workbench.runs.reports import ExportFormat, export_record
from workbench.workspace.changes import ChangeKind, EntryType, FileChange

MakeRecord = Callable[..., RunRecord]


def _finished(history: RunHistory, record: RunRecord, result: RunResult) -> RunRecord:
    history.start(record)
    return history.finish(record.run_id, result, notes=("<b>note</b>",))


def test_html_escapes_everything(
    history: RunHistory, record_factory: MakeRecord, result: RunResult
) -> None:
    record = _finished(history, record_factory("r1"), result)
    page = export_record(record, ExportFormat.HTML)
    assert "<script>" not in page
    assert "<b>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "Content-Security-Policy" in page
    for expected in ("failed", "exited with code 3", "NO SANDBOX", "mode_changed: tool.sh"):
        assert expected in page
    assert "wall-clock timeout 60 s" in page


def test_markdown_escapes_markup_and_fences_code_safely(
    history: RunHistory, record_factory: MakeRecord, result: RunResult
) -> None:
    record = _finished(history, record_factory("r1"), result)
    text = export_record(record, ExportFormat.MD)
    fenced = "\n````\n<script>alert('x')</script> & [click](javascript:evil) ```\n````\n"
    assert fenced in text  # code is verbatim, in a fence longer than its own backticks
    outside = text.replace(fenced, "")
    assert "<script>" not in outside
    assert "](javascript" not in outside
    assert "- added: &lt;script&gt;alert" in outside
    assert "\\[click\\]\\(javascript:evil\\)" in outside


def test_json_report_is_the_record(
    history: RunHistory, record_factory: MakeRecord, result: RunResult
) -> None:
    record = _finished(history, record_factory("r1"), result)
    document = json.loads(export_record(record, ExportFormat.JSON))
    assert document["schema"] == "skill-workbench/run-report/1"
    assert document["outcome"] == "failed"
    assert document["result"]["changes"][1]["kind"] == "mode_changed"
    assert document["result"]["stdout"]["log_path"] == str(Path("/tmp/stdout.log"))


def test_host_calls_are_listed_and_escaped(
    history: RunHistory, record_factory: MakeRecord, result: RunResult
) -> None:
    record = _finished(history, record_factory("r1"), result)
    assert record.result is not None
    call = {"api": "fetch", "target": "GET https://x.test/<img>", "allowed": False}
    record = replace(record, result={**record.result, "host_calls": [{**call, "outcome": "no"}]})
    page = export_record(record, ExportFormat.HTML)
    assert "REFUSED: fetch GET https://x.test/&lt;img&gt; -&gt; no" in page


TERMINAL = (
    "\x1b]0;PWNED\x07\x1b[2J\x1b]8;;https://x.test\x07link\x1b]8;;\x07 \x9b31m evil\u202etxt.exe"
)


def test_no_format_carries_a_byte_that_acts_on_a_terminal(
    history: RunHistory, record_factory: MakeRecord, result: RunResult
) -> None:
    result = replace(result, stdout=replace(result.stdout, text=TERMINAL), cause=TERMINAL)
    record = _finished(history, record_factory("r1"), result)
    for fmt in ExportFormat:
        report = export_record(record, fmt)
        for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
            assert raw not in report, (fmt, raw)
    page = export_record(record, ExportFormat.HTML)
    assert "\\x1b]0;PWNED\\x07\\x1b[2J" in page  # shown, as `history show` shows it
    assert "evil⟨U+202E⟩txt.exe" in page
    assert "\\\\x1b\\]0;PWNED" in export_record(record, ExportFormat.MD)
    document = json.loads(export_record(record, ExportFormat.JSON))
    assert document["result"]["stdout"]["text"] == TERMINAL  # JSON keeps the data exactly


def test_a_local_run_s_report_says_its_network_was_not_blocked(
    history: RunHistory, record_factory: MakeRecord, result: RunResult
) -> None:
    """The posture's `network` setting is "none" by default, which only containers honour:
    the report of a local run must not read as if the network had been off."""
    record = _finished(history, record_factory("r1"), result)
    text = export_record(record, ExportFormat.MD)
    assert "network | not blocked: the host's network" in text
    assert "network | none" not in text


FORGED = "notes.txt\n  deleted      important.txt"


def test_a_file_name_cannot_start_a_line_of_its_own_in_any_report(
    history: RunHistory, record_factory: MakeRecord, result: RunResult
) -> None:
    changes = (FileChange(FORGED, ChangeKind.ADDED, after_type=EntryType.FILE),)
    record = _finished(history, record_factory("r1"), replace(result, changes=changes))

    text = export_record(record, ExportFormat.TEXT)
    assert [line for line in text.splitlines() if "important" in line] == [
        "  - added: notes.txt\\n  deleted      important.txt [file; mode ]"
    ]
    page = export_record(record, ExportFormat.HTML)
    assert "<li>added: notes.txt\\n  deleted      important.txt [file; mode ]</li>" in page
    markdown = export_record(record, ExportFormat.MD)
    assert len([line for line in markdown.splitlines() if "important" in line]) == 1
    document = json.loads(export_record(record, ExportFormat.JSON))
    assert document["result"]["changes"][0]["path"] == FORGED  # JSON holds the real name


def test_every_format_says_why_a_run_failed_and_escapes_the_evidence(
    history: RunHistory, record_factory: MakeRecord, result: RunResult
) -> None:
    hostile = "<script>alert(1)</script> [x](javascript:y)"
    diagnosis = Diagnosis(
        Kind.NETWORK_OFF,
        "The command tried to reach the network, which is off under Docker container.",
        "network none",
        Evidence(hostile, "stderr", 7),
        "If the skill must reach the network, re-run with the network on.",
        Change(network=Network.BRIDGE),
    )
    history.start(replace(record_factory("r2"), rerun_of="r1"))
    record = history.finish("r2", result, diagnosis=diagnosis)
    page = export_record(record, ExportFormat.HTML)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    text = export_record(record, ExportFormat.TEXT)
    for expected in (
        "Why it failed",
        "network-off",
        "network none",
        "Evidence (stderr line 7)",
        "with the network on",
        "Re-run of",
    ):
        assert expected in text
    assert "\\[x\\]\\(javascript:y\\)" in export_record(record, ExportFormat.MD)
    document = json.loads(export_record(record, ExportFormat.JSON))
    assert document["diagnosis"]["kind"] == "network-off"
    assert document["diagnosis"]["evidence"]["line"] == 7
    assert document["rerun_of"] == "r1"
