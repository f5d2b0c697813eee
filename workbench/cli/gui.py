"""`workbench gui`: open the desktop app (also what a bare `workbench` does).

The screenshot-scene options (`--posture`, `--command`, `--memory`, `--show`, `--during`,
`--view`) only mean something with `--run` (and `--run` with `--screenshot`): given alone they
are refused, not ignored, and so is a `--skills` folder that does not exist.
"""

import argparse
from pathlib import Path
from typing import Any

from workbench.errors import UsageError
from workbench.postures.model import parse_posture_id

SCENE_OPTIONS = ("posture", "command", "memory", "show", "during", "view", "allow_host")


def register(commands: "argparse._SubParsersAction[Any]") -> None:
    """Add the `gui` subcommand."""
    parser = commands.add_parser("gui", help="open the desktop app")
    parser.add_argument(
        "--skills", nargs="*", type=Path, default=[], metavar="DIR", help="extra skill roots"
    )
    parser.add_argument(
        "--screenshot", type=Path, metavar="FILE", help="render the window to FILE and exit"
    )
    scene = parser.add_argument_group("screenshot scene (with --screenshot: run an example first)")
    scene.add_argument("--run", metavar="SKILL", help="run this skill's command, then shoot")
    scene.add_argument("--posture", type=parse_posture_id, metavar="ID", help="posture to run")
    scene.add_argument("--command", help="command to run instead of the skill's suggestion")
    scene.add_argument("--memory", type=int, metavar="MIB", help="memory limit of the run")
    scene.add_argument(
        "--show",
        choices=("output", "changes", "card", "network"),
        help="tab to show (default output)",
    )
    scene.add_argument(
        "--allow-host", action="append", metavar="HOST[:PORT]", help="bubblewrap: allowed host"
    )
    scene.add_argument(
        "--during", type=float, metavar="S", help="shoot S seconds into the run, not after it"
    )
    scene.add_argument(
        "--view",
        choices=("run", "history", "compare", "lab", "environment"),
        help="page to show (default run; environment: the run with the skill's Environment tab)",
    )
    parser.set_defaults(handler=_gui)


def _gui(args: argparse.Namespace) -> int:
    missing = [str(root) for root in args.skills if not root.is_dir()]
    if missing:
        raise UsageError(f"--skills: there is no folder {', '.join(missing)}.")
    scene_options = [
        f"--{name.replace('_', '-')}" for name in SCENE_OPTIONS if getattr(args, name) is not None
    ]
    if args.run is None and scene_options:
        raise UsageError(
            f"{', '.join(scene_options)} belong{'s' * (len(scene_options) == 1)} to a "
            "screenshot scene: give --run SKILL and --screenshot FILE too."
        )
    if args.run is not None and args.screenshot is None:
        raise UsageError("--run stages a screenshot: give --screenshot FILE too.")
    # Imported here, not at the top: every other command must work where Qt cannot load.
    from workbench.ui import app

    scene = None
    if args.run is not None:
        scene = app.Scene(
            args.run,
            args.posture,
            args.command,
            args.memory,
            args.show or "output",
            args.during,
            args.view or "run",
            tuple(args.allow_host or ()),
        )
    return app.run_gui(extra_roots=list(args.skills), screenshot=args.screenshot, scene=scene)
