"""`workbench pool status|fill|drain`: warm containers of the docker and gvisor postures.

`fill` starts containers for one key (a skill, a workspace or fresh workspaces, a posture and
its limits, the options of `workbench run`) and exits; they wait in the engine until a run
of that key claims one (`workbench run` does, via `RunServices.run`, and has a detached `pool fill`
start a replacement so the pool keeps its size) or `drain` removes them: they belong to no
process, so they stay when the command exits. `status` lists what waits in the engine, of any
key and process (the app's own pool containers too, which go when the app does). A run of
another key starts cold, as without a pool.
"""

import argparse
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.cli.output import emit_json, warn
from workbench.cli.run import add_posture_options, posture_from_args, skill_environment
from workbench.errors import UsageError, WorkbenchError
from workbench.executors.types import SessionSpec, new_run_id
from workbench.postures.model import CONTAINER_POSTURES, PostureId
from workbench.skills import default_roots, find_skill

if TYPE_CHECKING:  # docker-py is heavy, and every command loads us
    import docker

MAX_SIZE = 16


def register(commands: "argparse._SubParsersAction[Any]") -> None:
    """Add the `pool` subcommand group."""
    parser = commands.add_parser(
        "pool",
        help="warm containers kept ready for docker and gvisor runs",
        description="Keep started containers ready so `workbench run` of the same skill, "
        "workspace and posture starts without waiting for one.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    status = actions.add_parser("status", help="the pooled containers in the engine")
    fill = actions.add_parser("fill", help="start warm containers for one skill and posture")
    drain = actions.add_parser("drain", help="remove every pooled container")
    fill.add_argument("--skill", required=True, help="a skill folder, or a skill's name")
    fill.add_argument(
        "--workspace", type=Path, help="the folder runs will use (default: fresh ones)"
    )
    fill.add_argument("--posture", choices=[p.value for p in CONTAINER_POSTURES], default="docker")
    add_posture_options(fill)
    fill.add_argument("--size", type=int, required=True, metavar="N", help="how many to keep")
    for sub in (status, fill, drain):
        sub.add_argument("--json", action="store_true", help="print one JSON document")
    status.set_defaults(handler=_status)
    fill.set_defaults(handler=_fill)
    drain.set_defaults(handler=_drain)


def _status(args: argparse.Namespace) -> int:
    from workbench.executors.warm.container_claims import pooled_containers

    with contextlib.closing(_engine()) as client:
        found = pooled_containers(client)
    if args.json:
        rows = [
            {
                "name": item.name,
                "posture": item.posture,
                "key": item.key,
                "age_seconds": round(item.age_s, 1),
                "state": item.state,
            }
            for item in found
        ]
        emit_json("pool-status", {"containers": rows})
        return 0
    if not found:
        print("No pooled containers (fill some with `workbench pool fill`).")
    for item in found:
        print(f"{item.posture:<7} {item.state:<8} {_age(item.age_s):>5}  {item.key}")
    if found:
        print("Containers filled by `workbench pool fill` stay until a run takes them or")
        print("`workbench pool drain` removes them; the app's go when the app exits.")
    return 0


def _fill(args: argparse.Namespace) -> int:
    from workbench.executors.warm.containers import ContainerPool
    from workbench.platform import loops
    from workbench.runs.services import RunServices

    if not 1 <= args.size <= MAX_SIZE:
        raise UsageError(f"workbench pool fill: --size must be 1 to {MAX_SIZE}")
    posture = posture_from_args(PostureId(args.posture), args, "pool fill")
    skill = find_skill(args.skill, default_roots())
    layout = RunServices.open().layout
    fresh = layout.fresh_workspace(new_run_id())
    workspace = args.workspace.absolute() if args.workspace else fresh
    if args.workspace is not None:
        try:  # or the engine would make the bind mount's folder, as root
            workspace.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise WorkbenchError(f"Cannot make the workspace {workspace}: {error}") from None
    environment = skill_environment(skill, posture, layout, no_env=False)  # as `run` takes it
    session = SessionSpec(
        skill.path, skill.name, workspace, layout.runs_root, environment=environment
    )
    pool = ContainerPool(layout.fresh_workspaces, owned=False)  # stays after we exit

    async def fill() -> None:
        await pool.resize(args.size)
        await pool.prime(posture, session)
        await pool.detach()

    loops.run(fill())
    status = pool.status()
    if args.json:
        emit_json(
            "pool-fill",
            {
                "posture": posture.id.value,
                "key": status.key,
                "size": status.size,
                "ready": status.ready,
                "problem": status.problem or None,
            },
        )
    elif not status.problem:
        print(f"{status.ready} warm container(s) ready for {status.key}")
    if status.problem:
        warn(f"error: the pool could not fill: {status.problem}")
        return 125
    return 0


def _drain(args: argparse.Namespace) -> int:
    from workbench.executors.warm.container_claims import drain

    with contextlib.closing(_engine()) as client:
        removed = drain(client)
    if args.json:
        emit_json("pool-drain", {"removed": removed})
    else:
        print(f"Removed {removed} pooled container(s).")
    return 0


def _engine() -> "docker.DockerClient":
    from docker.errors import DockerException

    from workbench.executors.docker.engine import engine_client

    try:
        return engine_client()
    except DockerException as error:
        raise WorkbenchError(str(error)) from None


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    return f"{seconds / 60:.0f}m" if seconds < 7200 else f"{seconds / 3600:.0f}h"
