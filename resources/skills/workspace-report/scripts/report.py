"""Write a Markdown report of the workspace's files into the workspace (stdlib only)."""

import argparse
import os
import sys
import time
from pathlib import Path

MAX_FILES = 1000  # keep the report readable in a big workspace


def line_count(path: Path) -> str:
    """Lines in a text file, or '-' for a binary or unreadable one."""
    try:
        data = path.read_bytes()
    except OSError:
        return "-"
    if b"\0" in data[:8192]:
        return "-"
    return str(data.count(b"\n"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", default="report.md", help="file to write, in the workspace")
    args = parser.parse_args()
    workspace = Path(os.environ.get("WORKSPACE", ".")).resolve()
    output = (workspace / args.output).resolve()
    if not output.is_relative_to(workspace):
        print(f"refusing to write outside the workspace: {output}", file=sys.stderr)
        return 2
    files = sorted(path for path in workspace.rglob("*") if path.is_file() and path != output)[
        :MAX_FILES
    ]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        "# Workspace report",
        "",
        f"Written {stamp} by the workspace-report skill.",
        "",
        "| file | bytes | lines |",
        "|---|---:|---:|",
    ]
    for path in files:
        lines.append(
            f"| {path.relative_to(workspace)} | {path.stat().st_size} | {line_count(path)} |"
        )
    lines += ["", f"{len(files)} file(s)."]
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {output.relative_to(workspace)} listing {len(files)} file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
