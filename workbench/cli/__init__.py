"""The headless composition root: `workbench` and its subcommands.

`main()` builds the argument parser from one module per subcommand group (each exposes
`register(subparsers)` and sets a handler), builds the objects the handler needs, and maps
errors to exit codes: 2 for usage errors, 125 when the workbench itself failed. With no
arguments it opens the GUI.
"""

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from workbench import __version__
from workbench.cli import desktop
from workbench.errors import UsageError, WorkbenchError

EXIT_USAGE = 2
EXIT_WORKBENCH_FAILED = 125


class _Parser(argparse.ArgumentParser):
    """An argparse parser that raises `UsageError` instead of exiting, so main() maps it."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


# One module per subcommand, imported only when needed: `workbench --version` loads none.
COMMANDS = (
    "skills",
    "postures",
    "run",
    "compare",
    "history",
    "probe",
    "gui",
    "bench",
    "image",
    "env",
    "pool",
)


def _commands_needed(argv: Sequence[str] | None) -> tuple[str, ...]:
    """The subcommand modules `argv` needs: the named command's, none when it names no
    command (a bare flag such as `--version`), all for help, an unknown name or no `argv`."""
    if argv is None or {"-h", "--help"} & set(argv):
        return COMMANDS
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    if first is None:
        return ()
    return (first,) if first in COMMANDS else COMMANDS


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The `workbench` command line; with `argv`, only the subcommands it needs."""
    parser = _Parser(
        prog="workbench",
        description="Browse agent skills and run them under a chosen sandbox posture. "
        "With no command, opens the desktop app.",
    )
    parser.add_argument("--version", action="version", version=f"workbench {__version__}")
    desktop.register_flags(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in _commands_needed(argv):
        importlib.import_module(f"workbench.cli.{name}").register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    wants_json = "--json" in args_list[: args_list.index("--") if "--" in args_list else None]
    if wants_json:
        from workbench.cli.output import begin_command  # only now: it loads the run records

        begin_command()
    if not args_list:
        args_list = ["gui"]
    try:
        args = build_parser(args_list).parse_args(args_list)
        if getattr(args, "handler", None) is None:
            raise UsageError(f"workbench {args.command}: choose a subcommand (see --help)")
        code: int = args.handler(args)
    except WorkbenchError as error:
        print(f"error: {error}", file=sys.stderr)
        if wants_json:
            from workbench.cli.output import emit_error  # only now: it loads the run records

            emit_error(str(error))
        return EXIT_USAGE if isinstance(error, UsageError) else EXIT_WORKBENCH_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); silence the flush at exit too.
        sys.stdout = Path(os.devnull).open("w")  # noqa: SIM115
        return 1
    return code
