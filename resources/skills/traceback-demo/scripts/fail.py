"""Fail on purpose with a traceback three calls deep (stdlib only)."""

import json
import os
from pathlib import Path


def load_settings() -> dict[str, str]:
    """The skill's settings; this skill ships none, so they are empty."""
    path = Path(os.environ.get("SKILL_DIR", ".")) / "settings.json"
    return json.loads(path.read_text()) if path.exists() else {}


def output_name(settings: dict[str, str]) -> str:
    return settings["output"]  # KeyError: the setting was never written


def main() -> None:
    print("traceback-demo: loading settings...", flush=True)
    print("writing", output_name(load_settings()))


if __name__ == "__main__":
    main()
