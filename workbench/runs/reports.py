"""Run reports: one recorded run exported as JSON, Markdown or a self-contained HTML page.

Skill output, file names and causes are hostile text. The report is first built as neutral
sections (rows, lines, code blocks) and then rendered; a changed path goes in as `path_text`,
so a name can never start a line of its own. Every renderer shows control characters
other than newline and tab as visible escapes (`\\x1b`) and bidi controls as markers
(`plain_text`), so a report is safe to `cat` and reads as it is; the HTML renderer also
escapes every piece of text, the Markdown renderer escapes markup characters outside code
blocks and fences code with more backticks than the code contains. JSON is `record_to_dict`,
as `--json` prints it, with what a terminal would act on escaped (`json_safe`).
"""

import html
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from workbench.ansi import json_safe
from workbench.postures.containment import network_reach
from workbench.postures.description import posture_title
from workbench.postures.model import MIB, Network, PostureId
from workbench.runs.record import (
    RunRecord,
    RunState,
    json_text,
    network_line,
    plain_text,
    record_to_dict,
)
from workbench.workspace.blobs import BlobStore
from workbench.workspace.changes import ChangeKind, path_text
from workbench.workspace.diff import text_diff

T = TypeVar("T")
EXCERPT_CHARS = 20_000
MAX_DIFFS = 20
REPORT_SCHEMA = "skill-workbench/run-report/1"
INTERRUPTED_CAUSE = (
    "The workbench that ran it ended before the run did (a crash or a kill), so how the "
    "command ended is not known."
)


class ExportFormat(StrEnum):
    """The report formats."""

    HTML = "html"
    JSON = "json"
    MD = "md"
    TEXT = "text"  # for a terminal: control characters shown as escapes


@dataclass(slots=True)
class _Section:
    title: str
    rows: list[tuple[str, str]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    blocks: list[tuple[str, str]] = field(default_factory=list)  # (caption, code)


def export_record(record: RunRecord, fmt: ExportFormat, store: BlobStore | None = None) -> str:
    """The report of `record` in `fmt`; with `store`, text diffs of the changed files."""
    if fmt is ExportFormat.JSON:
        document = {"schema": REPORT_SCHEMA, **record_to_dict(record)}
        return json_safe(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"
    title = f"Run {record.run_id}: {record.skill_name} under {posture_title(record.posture)}"
    sections = _sections(record, store)
    render = {ExportFormat.HTML: _render_html, ExportFormat.MD: _render_md}.get(fmt, _render_text)
    return render(json_text(title), sections)


def _sections(record: RunRecord, store: BlobStore | None) -> list[_Section]:
    result: dict[str, Any] = record.result or {}
    summary = _Section("Summary")
    summary.rows += [
        ("Outcome", record.outcome),
        (
            "Cause",
            record.cause or (INTERRUPTED_CAUSE if record.state is RunState.INTERRUPTED else "-"),
        ),
        ("Exit code", _text(record.exit_code)),
        ("Command", shlex.join(record.argv)),
        ("Skill", f"{record.skill_name} ({record.skill_dir})"),
        ("Workspace", str(record.workspace)),
        ("Started", _time(record.started_at)),
        ("Ended", _time(record.ended_at)),
    ]
    for key, label in (
        ("signal", "Signal"),
        ("wall_seconds", "Wall seconds"),
        ("cpu_seconds", "CPU seconds"),
        ("peak_rss_bytes", "Peak memory"),
        ("peak_processes", "Peak processes"),
        ("leftover_processes", "Leftover processes"),
    ):
        if key in result:
            summary.rows.append((label, _value(key, result[key])))
    if record.rerun_of:
        summary.rows.append(("Re-run of", record.rerun_of))
    sections = [summary, _diagnosis_section(record), _card_section(result)]
    warnings = _Section("Posture warnings")
    warnings.lines = [f"{w['severity'].upper()}: {w['text']}" for w in result.get("warnings", [])]
    notes = _Section("Workspace notes", lines=list(record.notes))
    calls = _Section("Host calls (e.g. fetch)")
    calls.lines = [
        f"{'allowed' if c['allowed'] else 'REFUSED'}: {c['api']} {c['target']} -> {c['outcome']}"
        for c in result.get("host_calls", [])
    ]
    network = _Section("Network (through the allow-list proxy)")
    network.lines = [network_line(attempt) for attempt in result.get("network_log", [])]
    sections += [warnings, notes, calls, network, _changes_section(record, store)]
    for stream in ("stdout", "stderr"):
        captured = result.get(stream)
        if captured:
            sections.append(_output_section(stream, captured))
    return [s for s in sections if s.rows or s.lines or s.blocks]


def _diagnosis_section(record: RunRecord) -> _Section:
    section = _Section("Why it failed")
    diagnosis = record.diagnosis
    if diagnosis is None:
        return section
    section.rows += [
        ("Kind", diagnosis.kind.value),
        ("Control", diagnosis.control or "none: the skill itself failed"),
        ("Cause", diagnosis.cause),
    ]
    if diagnosis.evidence is not None:
        section.rows.append((f"Evidence ({diagnosis.evidence.where})", diagnosis.evidence.text))
    if diagnosis.suggestion:
        section.rows.append(("Suggestion", diagnosis.suggestion))
    if diagnosis.change is not None:
        section.rows.append(("Re-run", diagnosis.change.words()))
    return section


def _card_section(result: dict[str, Any]) -> _Section:
    section = _Section("Effective posture")
    card = result.get("card")
    if not card:
        return section
    posture = card["posture"]
    section.rows.append(("Posture", f"{posture_title(posture['id'])} ({posture['id']})"))
    section.rows += [(name, _value(name, value)) for name, value in posture["limits"].items()]
    reach = network_reach(
        PostureId(posture["id"]),
        Network(posture["network"]),
        tuple(posture.get("fetch_hosts", ())),
        tuple(posture.get("allow_hosts", ())),
    )
    section.rows += [("network", reach), ("run as", card.get("run_as") or "-")]
    if card.get("started"):
        section.rows.append(("started", card["started"]))
    section.rows.append(("Skill environment", card.get("environment") or "none"))
    if card.get("image_id"):
        section.rows.append(("Image id", card["image_id"]))
    section.rows.append(("Environment kept", ", ".join(card.get("env_kept", [])) or "-"))
    section.rows.append(("Environment dropped", ", ".join(card.get("env_dropped", [])) or "-"))
    section.lines = [f"{'held' if ok else 'NOT HELD'}: {name}" for name, ok in card["checks"]]
    return section


def _changes_section(record: RunRecord, store: BlobStore | None) -> _Section:
    changes = record.changes
    section = _Section(f"Workspace changes ({len(changes)})")
    for change in changes:
        types = _before_after(change.before_type, change.after_type, str)
        modes = _before_after(change.before_mode, change.after_mode, lambda mode: f"{mode:o}")
        section.lines.append(
            f"{change.kind.value}: {path_text(change.path)} [{types}; mode {modes}]"
        )
    if store is None:
        return section
    with_content = [c for c in changes if c.kind is not ChangeKind.MODE_CHANGED]
    for change in with_content[:MAX_DIFFS]:
        diff = text_diff(change, store, max_bytes=256 * 1024, max_lines=2000)
        section.blocks.append((f"diff of {path_text(change.path)}", diff.placeholder or diff.text))
    return section


def _before_after(before: T | None, after: T | None, show: Callable[[T], str]) -> str:
    """`a -> b`, or just `a` when only one side exists or both are the same."""
    sides = [show(side) for side in (before, after) if side is not None]
    return sides[0] if len(set(sides)) == 1 else " -> ".join(sides)


def _output_section(stream: str, captured: dict[str, Any]) -> _Section:
    section = _Section(f"{stream} ({captured['total_bytes']:,} bytes)")
    if captured.get("truncated"):
        section.lines.append("Truncated in memory; the full output is in the log file.")
    if captured.get("log_path"):
        section.rows.append(("Log file", captured["log_path"]))
    text = captured.get("text", "")
    if len(text) > EXCERPT_CHARS:
        half = EXCERPT_CHARS // 2
        omitted = len(text) - 2 * half
        text = f"{text[:half]}\n[... {omitted:,} characters omitted ...]\n{text[-half:]}"
    section.blocks.append(("excerpt", text))
    return section


def _value(name: str, value: object) -> str:
    """A figure for people: a byte count (`..._bytes`) as `4.5 MiB (4,706,304 bytes)`."""
    if not name.endswith("_bytes") or not isinstance(value, int):
        return _text(value)
    unit, scale = ("MiB", MIB) if value >= MIB else ("KiB", 1024)
    return f"{round(value / scale, 1):g} {unit} ({value:,} bytes)"


def _text(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return "-" if value is None else str(value)


def _time(stamp: float | None) -> str:
    return "-" if stamp is None else datetime.fromtimestamp(stamp, UTC).isoformat(" ", "seconds")


def _render_html(title: str, sections: list[_Section]) -> str:
    def e(text: str) -> str:
        return html.escape(plain_text(text))

    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # No script may run, whatever slips through: the page needs none.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">",
        f"<title>{e(title)}</title>",
        "<style>body{font-family:sans-serif;margin:2em}td,th{text-align:left;padding:2px 8px}"
        "pre{background:#f4f4f4;padding:8px;overflow:auto;white-space:pre-wrap}</style>",
        f"</head><body><h1>{e(title)}</h1>",
    ]
    for section in sections:
        parts.append(f"<h2>{e(section.title)}</h2>")
        if section.rows:
            rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in section.rows)
            parts.append(f"<table>{rows}</table>")
        if section.lines:
            parts.append("<ul>" + "".join(f"<li>{e(line)}</li>" for line in section.lines))
            parts.append("</ul>")
        for caption, code in section.blocks:
            parts.append(f"<h3>{e(caption)}</h3><pre>{e(code)}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


_MD_SPECIAL = re.compile(r"([\\`*_\[\]()#!|~{}+.-])")


def _md(text: str) -> str:
    """Inline Markdown text: markup characters escaped, HTML neutralised, one line."""
    escaped = _MD_SPECIAL.sub(r"\\\1", html.escape(plain_text(text), quote=False))
    return " ".join(escaped.splitlines())


def _fence(code: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    return "`" * max(3, longest + 1)


def _render_md(title: str, sections: list[_Section]) -> str:
    parts = [f"# {_md(title)}", ""]
    for section in sections:
        parts += [f"## {_md(section.title)}", ""]
        if section.rows:
            parts += ["| | |", "|---|---|"]
            parts += [f"| {_md(k)} | {_md(v)} |" for k, v in section.rows]
            parts.append("")
        if section.lines:
            parts += [f"- {_md(line)}" for line in section.lines] + [""]
        for caption, code in section.blocks:
            code = plain_text(code)
            fence = _fence(code)
            parts += [f"**{_md(caption)}**", "", fence, code.rstrip("\n"), fence, ""]
    return "\n".join(parts)


def _render_text(title: str, sections: list[_Section]) -> str:
    parts = [plain_text(title)]
    for section in sections:
        parts += ["", plain_text(section.title)]
        width = max((len(k) for k, _ in section.rows), default=0)
        parts += [f"  {k:<{width}}  {plain_text(v)}" for k, v in section.rows]
        parts += [f"  - {plain_text(line)}" for line in section.lines]
        for caption, code in section.blocks:
            parts += [f"  [{plain_text(caption)}]", plain_text(code).rstrip("\n")]
    return "\n".join(parts) + "\n"
