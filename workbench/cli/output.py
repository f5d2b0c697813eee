"""How every subcommand prints: one schema-versioned JSON document, or text for people.

The JSON document escapes every character a terminal would act on (`json_safe`): skills'
text is in it, and it is often printed to a terminal. Warnings are printed with control
characters escaped and bidi controls as markers (`plain_text`), whatever skill text they hold.
"""

import json
import sys
from typing import Any

from workbench.ansi import json_safe
from workbench.runs.record import plain_text

SCHEMA_PREFIX = "skill-workbench"
_emitted: list[str] = []  # the kinds of the documents this process printed


def emit_json(kind: str, payload: dict[str, Any]) -> None:
    """Print exactly one JSON document to stdout, tagged `schema: skill-workbench/KIND/1`."""
    document = {"schema": f"{SCHEMA_PREFIX}/{kind}/1", **payload}
    text = json.dumps(document, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write(json_safe(text) + "\n")
    _emitted.append(kind)


def begin_command() -> None:
    """Forget the documents of an earlier command run in this process (`main` called again)."""
    _emitted.clear()


def emit_error(message: str) -> None:
    """The one JSON document of a `--json` command that failed before printing its own."""
    if not _emitted:
        emit_json("error", {"outcome": "error", "error": message})


def warn(text: str) -> None:
    """A warning or progress line for the person, on stderr (never mixed into JSON)."""
    print(plain_text(text), file=sys.stderr)
