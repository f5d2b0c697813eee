"""`workbench gui`: open the desktop app (also what a bare `workbench` does).

`--skill`, `--view` and `--tab` open the window on a skill (a name, or a folder, which is added
to the list), a page and a tab, without running anything; `--posture`, `--command`, `--memory`
and `--allow-host` set the posture and the Run page's fields. `--run` (with `--screenshot`) runs
the skill's command first, on the Run page or as a Compare or Lab run when `--view` says so, and
`--during S` shoots S seconds into that run. An option that would mean nothing (`--during`
without `--run`, `--run` without `--screenshot` or `--skill`) is refused, not ignored, and so is
a `--skills` or `--skill` folder that does not exist.
"""

import argparse
import os
from pathlib import Path
from typing import Any

from workbench.errors import UsageError
from workbench.postures.model import parse_posture_id

VIEWS = ("run", "history", "compare", "lab")
# The skill's tabs, then the run's (ui.scene opens each).
SKILL_TABS = (
    "skill-md",
    "edit",
    "front-matter",
    "diagnostics",
    "files",
    "capabilities",
    "environment",
)
TABS = (*SKILL_TABS, "output", "changes", "card", "network")


def register(commands: "argparse._SubParsersAction[Any]") -> None:
    """Add the `gui` subcommand."""
    parser = commands.add_parser("gui", help="open the desktop app")
    parser.add_argument(
        "--skills", nargs="*", type=Path, default=[], metavar="DIR", help="extra skill roots"
    )
    parser.add_argument(
        "--screenshot", type=Path, metavar="FILE", help="render the window to FILE and exit"
    )
    opening = parser.add_argument_group("where the window opens (nothing runs)")
    opening.add_argument("--skill", metavar="SKILL", help="select this skill (a name or folder)")
    opening.add_argument("--view", choices=VIEWS, help="the page to show (default run)")
    opening.add_argument("--tab", choices=TABS, help="the skill's or the run's tab to show")
    opening.add_argument("--posture", type=parse_posture_id, metavar="ID", help="choose it")
    opening.add_argument("--command", help="the command to run instead of the skill's own")
    opening.add_argument("--memory", type=int, metavar="MIB", help="the memory limit of a run")
    opening.add_argument(
        "--allow-host", action="append", metavar="HOST[:PORT]", help="bubblewrap: allowed host"
    )
    scene = parser.add_argument_group("a screenshot of a run (with --screenshot and --skill)")
    scene.add_argument(
        "--run", action="store_true", help="run the command first (compare or lab: --view)"
    )
    scene.add_argument(
        "--during", type=float, metavar="S", help="shoot S seconds into the run, not after it"
    )
    parser.set_defaults(handler=_gui)


def _gui(args: argparse.Namespace) -> int:
    missing = [str(root) for root in args.skills if not root.is_dir()]
    if missing:
        raise UsageError(f"--skills: there is no folder {', '.join(missing)}.")
    if args.during is not None and not args.run:
        raise UsageError("--during shoots into a run: give --run too.")
    if args.run and (args.screenshot is None or (args.skill is None and args.view != "lab")):
        raise UsageError("--run stages a screenshot: give --skill SKILL and --screenshot FILE.")
    roots = list(args.skills)
    if args.skill is not None and (folder := Path(args.skill).expanduser()).is_dir():
        roots.append(folder.absolute())
    elif args.skill is not None and (os.sep in args.skill or args.skill.startswith(".")):
        raise UsageError(f"--skill: there is no folder {args.skill}.")
    # Imported here, not at the top: every other command must work where Qt cannot load.
    from workbench.ui import app

    opening = (
        args.skill,
        args.view,
        args.tab,
        args.posture,
        args.command,
        args.memory,
        args.allow_host,
    )
    scene = None
    if args.run or any(value is not None for value in opening):
        scene = app.Scene(
            skill=args.skill,
            view=args.view or "run",
            tab=args.tab,
            posture=args.posture,
            command=args.command,
            memory_mib=args.memory,
            run=args.run,
            during_s=args.during,
            allow_hosts=tuple(args.allow_host or ()),
        )
    return app.run_gui(extra_roots=roots, screenshot=args.screenshot, scene=scene)
