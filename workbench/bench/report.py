"""How a bench run is shown: a text table for people, a JSON payload for scripts.

The table gives each row's median and min-max for ours and the floor, the ratio, the goal and
whether it was met, then one indented line saying what was measured on each side (and why a
row was skipped or failed). Times are wall clock, except rows marked CPU (CPU per call).
"""

from typing import Any

from workbench.bench.rows import RowResult
from workbench.bench.stats import Stats
from workbench.bench.suite import BenchRun
from workbench.runs.record import plain_text


def format_seconds(seconds: float) -> str:
    """`812 µs`, `3.41 ms`, `1.20 s`."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def format_stats(stats: Stats | None) -> str:
    """`3.41 ms (2.90 ms-5.10 ms)`, or `-` when not measured."""
    if stats is None:
        return "-"
    spread = f"{format_seconds(stats.low)}-{format_seconds(stats.high)}"
    return f"{format_seconds(stats.median)} ({spread})"


def verdict(row: RowResult) -> str:
    """`met`, `MISSED`, `skipped` or `failed`."""
    if row.error:
        return "failed"
    if row.met is None:
        return "skipped"
    return "met" if row.met else "MISSED"


def format_table(run: BenchRun) -> str:
    """The whole run as a text table (see the module docstring)."""
    header = ("row", "ours: median (min-max)", "floor: median (min-max)", "ratio", "goal")
    lines = [f"{header[0]:<47} {header[1]:<32} {header[2]:<32} {header[3]:>7}  {header[4]}"]
    for row in run.rows:
        ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "-"
        title = row.spec.title + (" [CPU]" if row.spec.cpu else "")
        lines.append(
            f"{title:<47} {format_stats(row.ours):<32} {format_stats(row.floor):<32} "
            f"{ratio:>7}  {row.spec.goal.text:<30} {verdict(row)}"
        )
        if row.error or row.skipped:
            lines.append(f"    {plain_text(row.error or row.skipped)}")
            continue
        detail = f"    ours: {row.spec.ours}; floor: {row.spec.floor}"
        lines.append(detail + (f"; {plain_text(row.note)}" if row.note else ""))
    counts = {name: sum(verdict(r) == name for r in run.rows) for name in ("met", "MISSED")}
    load = run.machine.get("load_average")
    lines.append(
        f"{counts['met']} met, {counts['MISSED']} missed, "
        f"{sum(verdict(r) in ('skipped', 'failed') for r in run.rows)} skipped or failed; "
        f"{'--quick, ' if run.quick else ''}{run.seconds:.0f} s on {run.machine.get('cpus')} "
        f"CPUs, load average {load} at the start"
    )
    return "\n".join(lines)


def _stats_json(stats: Stats | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    return {"n": stats.n, "median_s": stats.median, "min_s": stats.low, "max_s": stats.high}


def bench_payload(run: BenchRun) -> dict[str, Any]:
    """The JSON payload (without the schema key, which `emit_json` adds)."""
    return {
        "quick": run.quick,
        "seconds": run.seconds,
        "machine": run.machine,
        "rows": [
            {
                "id": row.spec.id,
                "title": row.spec.title,
                "group": row.group,
                "posture": row.posture.value if row.posture else None,
                "measure": "cpu_seconds_per_call" if row.spec.cpu else "wall_seconds",
                "ours": {"what": row.spec.ours, "stats": _stats_json(row.ours)},
                "floor": {"what": row.spec.floor, "stats": _stats_json(row.floor)},
                "ratio": row.ratio,
                "goal": {
                    "text": row.spec.goal.text,
                    "max_ratio": row.spec.goal.max_ratio,
                    "max_excess_s": row.spec.goal.max_excess_s,
                    "max_ours_s": row.spec.goal.max_ours_s,
                },
                "met": row.met,
                "status": verdict(row).lower(),
                "skipped": row.skipped or None,
                "error": row.error or None,
                "note": row.note or None,
            }
            for row in run.rows
        ],
    }
