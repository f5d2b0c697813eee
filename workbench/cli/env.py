"""`workbench env build|show|list|rm`: a skill's environment, built once and reused by runs.

`build` builds (or finds, a cache hit) the environment of a skill for the Python a posture runs
(the default posture unless `--posture` names one), progress on stderr; `--python` and
`--system` replace the proposal with the user's own requirements, which are kept for the skill
(as the app's edit is) until `--reset`. `show` tells what the skill declares, what was
inferred, the proposal, its state (built, out of date, missing, not needed) and what is
installed where. `list` and `rm` manage the built environments (an environment's image is
removed with it).
"""

import argparse
import time
from typing import TYPE_CHECKING, Any

from workbench.cli.output import emit_json, warn
from workbench.cli.run import add_posture_options, posture_from_args
from workbench.errors import PostureError, UsageError
from workbench.postures.model import Posture, parse_posture_id
from workbench.runs.layout import DataLayout
from workbench.skills import default_roots, find_skill

if TYPE_CHECKING:  # imported when a subcommand runs
    from workbench.environments.build import BuildStep
    from workbench.environments.resolve import EnvStatus
    from workbench.environments.store import Environment, EnvironmentStore


def register(commands: "argparse._SubParsersAction[Any]") -> None:
    """Add the `env` subcommand group."""
    parser = commands.add_parser("env", help="skill environments: build, show, list, rm")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    build = actions.add_parser("build", help="build a skill's environment (progress on stderr)")
    show = actions.add_parser("show", help="what a skill needs and what is built for it")
    for sub in (build, show):
        sub.add_argument("--skill", required=True, help="a skill folder, or a skill's name")
        sub.add_argument("--posture", help="the posture it is for (default: the strongest)")
        add_posture_options(sub)
    build.add_argument(
        "--python", nargs="+", metavar="REQ", help="build these requirements instead"
    )
    build.add_argument(
        "--system", nargs="*", metavar="PKG", help="these Debian packages instead (docker, gvisor)"
    )
    build.add_argument("--reset", action="store_true", help="forget the requirements you gave")
    listing = actions.add_parser("list", help="the built environments")
    remove = actions.add_parser("rm", help="remove environments (and their images)")
    remove.add_argument("env_ids", nargs="+", metavar="ID")
    for sub in (build, show, listing, remove):
        sub.add_argument("--json", action="store_true", help="print one JSON document")
    build.set_defaults(handler=_build)
    show.set_defaults(handler=_show)
    listing.set_defaults(handler=_list)
    remove.set_defaults(handler=_remove)


def _store() -> "EnvironmentStore":

    return DataLayout.default().environment_store()


def _posture(args: argparse.Namespace) -> Posture:
    from workbench.cli.postures import probe_all
    from workbench.postures.model import default_posture_id

    try:
        posture_id = (
            parse_posture_id(args.posture) if args.posture else default_posture_id(probe_all())
        )
    except PostureError as error:
        raise UsageError(str(error)) from None
    return posture_from_args(posture_id, args, "env")


def _build(args: argparse.Namespace) -> int:
    from workbench.environments.build import build
    from workbench.environments.resolve import status

    skill = find_skill(args.skill, default_roots())
    posture = _posture(args)
    store = _store()
    changes: dict[str, list[str] | None] = {"python": None, "system": None} if args.reset else {}
    changes |= {
        name: list(given)
        for name, given in (("python", args.python), ("system", args.system))
        if given is not None
    }
    if changes:
        store.update_skill_record(skill.path, **changes)
    found = status(skill, posture, store)
    warn(f"building for {found.inputs.target.describe()} ({posture.id} posture)")
    started = time.monotonic()
    environment = build(found.inputs, skill, store, _progress)
    seconds = time.monotonic() - started
    for note in environment.notes:
        warn(f"note: {note}")
    if args.json:
        emit_json("env-build", {"seconds": round(seconds, 3), **environment.to_json()})
    else:
        print(_environment_text(environment), end="")
    return 0


def _progress(step: "BuildStep") -> None:
    warn(f"[{step.done + 1 if step.done < step.total else step.total}/{step.total}] {step.text}")


def _show(args: argparse.Namespace) -> int:
    from workbench.environments.resolve import status

    skill = find_skill(args.skill, default_roots())
    posture = _posture(args)
    found = status(skill, posture, _store())
    if args.json:
        emit_json("env-show", _status_json(skill.name, posture, found))
    else:
        print(_status_text(skill.name, posture, found), end="")
    return 0


def _list(args: argparse.Namespace) -> int:
    environments = _store().list()
    if args.json:
        emit_json("env-list", {"environments": [env.to_json() for env in environments]})
        return 0
    if not environments:
        print("no environments built (build one with `workbench env build --skill SKILL`)")
    for env in environments:
        where = env.inputs.target.describe()
        print(f"{env.env_id}  {env.skill_name:<24} {_size(env.size_bytes):>9}  {where}")
    return 0


def _remove(args: argparse.Namespace) -> int:
    from workbench.environments.build import remove_image

    store = _store()
    removed = []
    for env_id in args.env_ids:
        environment = store.remove(env_id)
        remove_image(environment)
        removed.append(environment.env_id)
        if not args.json:
            print(f"removed {environment.env_id} ({environment.skill_name})")
    if args.json:
        emit_json("env-rm", {"removed": removed})
    return 0


def _status_json(skill: str, posture: Posture, found: "EnvStatus") -> dict[str, Any]:
    needs, inputs = found.needs, found.inputs
    target = inputs.target
    return {
        "skill": skill,
        "posture": posture.id.value,
        "state": found.state.value,
        "env_id": inputs.env_id,
        "target": {
            "kind": target.kind.value,
            "python": target.python,
            "platform": target.platform,
            "interpreter": target.interpreter,
            "base": target.base,
            "base_id": target.base_id,
            "describe": target.describe(),
        },
        "declared": {
            "python": list(needs.declared),
            "python_from": list(needs.declared_in),
            "node": list(needs.node),
            "node_from": list(needs.node_in),
            "compatibility": needs.compatibility or None,
        },
        "inferred": [
            {
                "distribution": item.distribution,
                "modules": list(item.modules),
                "places": list(item.places),
                "optional": item.optional,
            }
            for item in needs.inferred
        ],
        "tools": [
            {"name": tool.name, "package": tool.package, "places": list(tool.places)}
            for tool in needs.tools
        ],
        "refused": list(needs.refused),
        "skipped": list(needs.skipped),
        "edited": found.edited,
        "proposal": {
            "python": list(inputs.python),
            "node": list(inputs.node),
            "system": list(inputs.system),
        },
        "warning": found.warning(skill, posture) or None,
        "environment": found.environment.to_json() if found.environment else None,
    }


def _status_text(skill: str, posture: Posture, found: "EnvStatus") -> str:
    needs, inputs = found.needs, found.inputs
    lines = [f"skill {skill}, {posture.id} posture: {inputs.target.describe()}"]
    lines.append(f"  state: {found.state.value}")
    if needs.declared_in:
        lines.append(f"  declared in {', '.join(needs.declared_in)}: {', '.join(needs.declared)}")
    if needs.node_in:
        lines.append(f"  Node packages in {', '.join(needs.node_in)}: {', '.join(needs.node)}")
    if needs.compatibility:
        lines.append(f"  compatibility: {needs.compatibility}")
    for item in needs.inferred:
        optional = " (optional)" if item.optional else ""
        where = ", ".join(item.places[:3]) + (" ..." if len(item.places) > 3 else "")
        modules = ", ".join(item.modules)
        lines.append(f"  imports {modules} -> {item.distribution}{optional}: {where}")
    for tool in needs.tools:
        lines.append(f"  runs {tool.name} (Debian package {tool.package}): {tool.places[0]}")
    for refused in needs.refused:
        lines.append(f"  not installed: {refused}")
    proposal = ", ".join(inputs.python + inputs.node + inputs.system) or "nothing"
    lines.append(f"  {'your requirements' if found.edited else 'proposal'}: {proposal}")
    if found.environment is not None:
        lines.append(_environment_text(found.environment).rstrip("\n"))
    if warning := found.warning(skill, posture):
        lines.append(f"  {warning}")
    return "\n".join(lines) + "\n"


def _environment_text(environment: "Environment") -> str:
    lines = [f"environment {environment.env_id}: {environment.path}"]
    lines.append(f"  for {environment.inputs.target.describe()}")
    installed = environment.installed + environment.installed_node
    lines.append(f"  installed: {', '.join(installed) or 'nothing'}")
    if environment.image:
        lines.append(f"  image: {environment.image} ({environment.image_id})")
    lines.append(f"  size: {_size(environment.size_bytes)}")
    return "\n".join(lines) + "\n"


def _size(size: int) -> str:
    return f"{size / 1e6:.1f} MB"
