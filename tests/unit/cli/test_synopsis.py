"""The README's command-line synopsis names every command and action, every required option,
and every option of `gui` and `history list` (the ones a newcomer looks for)."""

import argparse
import re
from pathlib import Path

from workbench.cli import build_parser

README = Path(__file__).parents[3] / "README.md"
SPELLED_OUT = {("gui",), ("history", "list"), ("history", "prune")}


def _synopsis() -> list[str]:
    """The synopsis's entries: each `workbench ...` line with its indented continuations."""
    text = README.read_text(encoding="utf-8")
    block = text.split("## Command line", 1)[1].split("```", 2)[1]
    entries: list[str] = []
    for line in block.splitlines():
        if line.startswith("workbench"):
            entries.append(line)
        elif line.startswith(" ") and entries:
            entries[-1] += " " + line.strip()
    return entries


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, (*path, name))
    return found


def _options(parser: argparse.ArgumentParser, required_only: bool) -> list[str]:
    return [
        action.option_strings[-1]
        for action in parser._actions
        if action.option_strings
        and action.option_strings[-1] not in ("--help", "--json")
        and (action.required or not required_only)
    ]


def test_every_command_required_option_and_gui_option_is_in_the_synopsis() -> None:
    entries = _synopsis()
    missing = []
    for path, parser in _commands(build_parser()):
        if not path:
            continue
        words = re.compile(r"\b" + r"\b.*\b".join(map(re.escape, path)) + r"\b")
        mine = [entry for entry in entries if words.search(entry.split("  ")[0])]
        if not mine:
            missing.append(" ".join(path))
            continue
        for option in _options(parser, required_only=path not in SPELLED_OUT):
            if not any(option in entry for entry in mine):
                missing.append(f"{' '.join(path)} {option}")
    assert missing == []
