"""`workbench skills list|show|validate` (the catalog helper fills this in)."""

import argparse
from typing import Any


def register(commands: "argparse._SubParsersAction[Any]") -> None:
    """Add the `skills` subcommand group."""
    commands.add_parser("skills", help="list, show and validate skills")
