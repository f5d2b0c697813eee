"""`workbench postures`: every posture with its availability, guarantees and warnings."""

import argparse
from dataclasses import asdict
from typing import Any

from workbench.cli.output import emit_json
from workbench.errors import PostureError
from workbench.executors.availability import docker_engine_runtimes, probe_availability
from workbench.executors.docker.engine import engine_name
from workbench.executors.docker.locality import files_note
from workbench.postures.description import POSTURE_INFO, assess
from workbench.postures.model import Availability, Posture, PostureId, default_posture_id


def register(commands: "argparse._SubParsersAction[Any]") -> None:
    """Add the `postures` subcommand."""
    parser = commands.add_parser(
        "postures", help="list every posture: availability, guarantees, warnings"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(handler=_postures)


def probe_all() -> dict[PostureId, Availability]:
    """Availability of every posture on this machine (asks the Docker engine once)."""
    runtimes = docker_engine_runtimes()
    return {posture_id: probe_availability(posture_id, runtimes) for posture_id in PostureId}


def runnable_here() -> set[PostureId]:
    """The postures this machine can run and this build has an executor for."""
    from workbench.executors import implemented_postures

    built = set(implemented_postures())
    return {p for p, found in probe_all().items() if found.available and p in built}


def _postures(args: argparse.Namespace) -> int:
    availability = probe_all()
    try:
        default: PostureId | None = default_posture_id(availability)
    except PostureError:
        default = None
    if args.json:
        emit_json(
            "postures",
            {
                "default": default,
                "engine": engine_name(),
                "engine_files": files_note(),
                "postures": [
                    _posture_json(posture_id, availability[posture_id], posture_id == default)
                    for posture_id in PostureId
                ],
            },
        )
        return 0
    note = files_note()
    print(f"engine: {engine_name()}" + (f"\n  {note}" if note else "") + "\n")
    for posture_id in PostureId:
        print(_posture_text(posture_id, availability[posture_id], posture_id == default))
    return 0


def _posture_json(
    posture_id: PostureId, availability: Availability, default: bool
) -> dict[str, Any]:
    info = POSTURE_INFO[posture_id]
    return {
        "id": posture_id,
        "title": info.title,
        "summary": info.summary,
        "available": availability.available,
        "availability_reason": availability.reason,
        "default": default,
        "guarantees": list(info.guarantees),
        "does_not": list(info.does_not),
        "warnings": [asdict(w) for w in assess(Posture(posture_id))],
    }


def _posture_text(posture_id: PostureId, availability: Availability, default: bool) -> str:
    info = POSTURE_INFO[posture_id]
    state = "available" if availability.available else "UNAVAILABLE"
    lines = [
        f"{posture_id}{' (default)' if default else ''}: {info.title} [{state}]",
        f"  {info.summary}",
    ]
    label = "here" if availability.available else "why unavailable"
    lines.append(f"  {label}: {availability.reason}")
    lines += [f"  + {text}" for text in info.guarantees]
    lines += [f"  - does not {text[0].lower()}{text[1:]}" for text in info.does_not]
    lines += [f"  ! {w.severity.upper()}: {w.text}" for w in assess(Posture(posture_id))]
    return "\n".join(lines) + "\n"
