"""`workbench image status|build`: the sandbox image of the docker and gvisor postures."""

import argparse
from typing import Any

from workbench.cli.output import emit_json, warn
from workbench.executors.docker.image import ImageStatus, build_offline, build_online, image_status
from workbench.postures.model import DEFAULT_IMAGE


def register(commands: "argparse._SubParsersAction[Any]") -> None:
    """Add the `image` subcommand group."""
    parser = commands.add_parser("image", help="the sandbox image: status, build")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    status = actions.add_parser("status", help="whether the image exists and is current")
    build = actions.add_parser("build", help="build the image (progress on stderr)")
    build.add_argument(
        "--offline",
        action="store_true",
        help="build from the host's Debian mirror with debootstrap (needs root, no registry)",
    )
    build.add_argument("--force", action="store_true", help="rebuild even when it is current")
    for sub in (status, build):
        sub.add_argument(
            "--tag", default=DEFAULT_IMAGE, help=f"image tag (default {DEFAULT_IMAGE})"
        )
        sub.add_argument("--json", action="store_true", help="print one JSON document")
    status.set_defaults(handler=_status)
    build.set_defaults(handler=_build)


def _status(args: argparse.Namespace) -> int:
    status = image_status(args.tag)
    if args.json:
        emit_json("image-status", _status_json(status))
    else:
        print(_status_text(status), end="")
    return 0 if status.current else 1


def _build(args: argparse.Namespace) -> int:
    if args.offline:
        build_offline(args.tag, warn, force=args.force)
    else:
        build_online(args.tag, warn)
    status = image_status(args.tag)
    if args.json:
        emit_json("image-build", {"offline": args.offline, **_status_json(status)})
    else:
        print(_status_text(status), end="")
    return 0 if status.exists else 1


def _status_json(status: ImageStatus) -> dict[str, Any]:
    return {
        "tag": status.tag,
        "engine": status.engine,
        "engine_error": status.engine_error or None,
        "exists": status.exists,
        "id": status.image_id or None,
        "size_bytes": status.size_bytes if status.exists else None,
        "created": status.created or None,
        "recipe": status.recipe or None,
        "expected_recipe": status.expected_recipe,
        "current": status.current,
        "runtimes": status.runtimes,
    }


def _status_text(status: ImageStatus) -> str:
    if status.engine_error:
        return f"image {status.tag}: unknown\n  engine: {status.engine_error}\n"
    lines = [f"image {status.tag}: {'present' if status.exists else 'MISSING'}"]
    lines.append(f"  engine: {status.engine}; runtimes: {', '.join(status.runtimes) or 'none'}")
    if status.exists:
        lines.append(f"  id: {status.image_id}")
        lines.append(f"  size: {status.size_bytes / 1e6:.0f} MB; created {status.created}")
        recipe = status.recipe or "none (not built by the offline builder)"
        state = "current" if status.current else f"not current (expected {status.expected_recipe})"
        lines.append(f"  recipe: {recipe}: {state}")
    if not status.current:
        lines.append("  build it with: workbench image build --offline")
    return "\n".join(lines) + "\n"
