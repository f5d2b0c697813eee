"""`workbench gui`: open the desktop app (also what a bare `workbench` does)."""

import argparse
from pathlib import Path
from typing import Any


def register(commands: "argparse._SubParsersAction[Any]") -> None:
    """Add the `gui` subcommand."""
    parser = commands.add_parser("gui", help="open the desktop app")
    parser.add_argument(
        "--skills", nargs="*", type=Path, default=[], metavar="DIR", help="extra skill roots"
    )
    parser.add_argument(
        "--screenshot", type=Path, metavar="FILE", help="render the window to FILE and exit"
    )
    parser.set_defaults(handler=_gui)


def _gui(args: argparse.Namespace) -> int:
    # Imported here, not at the top: every other command must work where Qt cannot load.
    from workbench import app

    return app.run_gui(extra_roots=list(args.skills), screenshot=args.screenshot)
