"""`workbench run`: run a skill's command under a posture, streaming its output live.

The handler only parses options and builds objects; `RunServices.run` does the run. Without
`--posture` it takes the app's default (the strongest posture available here that can run the
command, never `local`) and says which; the posture's warnings go to stderr before every run,
each labelled with its posture (DANGER ones loudly). Without `--json` the
command's output streams to ours and a summary follows on stderr (outcome, cause, workspace
changes, and for a failed run its diagnosis with the `workbench run ... --rerun-of RUN` command
that re-runs it with the suggested change: `print_diagnosis`); with `--json` stdout holds exactly
one JSON document, the run's record with its diagnosis (`run_document`), or, when the workbench
failed, the run id, the outcome `error` and the cause. Exit code: the command's own, 124 on
timeout, 130 when cancelled (Ctrl-C), 137 when killed for memory, 128+N for another fatal signal
N, and 125 when the workbench itself could not run it.
"""

import argparse
import contextlib
import math
import re
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.ansi import AnsiDecoder
from workbench.cli.output import emit_json, warn
from workbench.errors import PostureError, UsageError, WorkbenchError
from workbench.executors.bubblewrap.proxy import parse_host
from workbench.executors.types import new_run_id
from workbench.postures.description import assess
from workbench.postures.model import (
    DEFAULT_IMAGE,
    Network,
    Posture,
    PostureId,
    PostureWarning,
    Severity,
    parse_posture_id,
)
from workbench.runs.diagnosis import Change, Diagnosis
from workbench.runs.layout import DataLayout
from workbench.runs.options import HOSTED, LIMIT_OPTIONS, posture_options
from workbench.runs.record import RunRecord, network_line, plain_text, record_to_dict, to_jsonable
from workbench.skills import default_roots, find_skill
from workbench.workspace.changes import path_text

if TYPE_CHECKING:  # imported when a run happens: they are heavy, and every command loads us
    from workbench.executors.types import (
        CancelToken,
        CapturedOutput,
        OutputChunk,
        RunResult,
        SkillEnvironment,
    )
    from workbench.runs.service import CompletedRun, RunPlan
    from workbench.runs.services import RunServices
    from workbench.skills.model import Skill

EXIT_TIMEOUT = 124
EXIT_NOT_RUN = 125
EXIT_CANCELLED = 130
EXIT_OOM = 137
_MAX_CHANGES_SHOWN = 20

# Each limit option and the `Limits` field it sets.
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes from `256m`, `1g`, `512MiB`, `1.5G` or a plain number (units are powers of 1024)."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 256m, 1g or 512MiB)")
    number, unit = float(match.group(1)), match.group(2).lower()
    size = int(number * 1024 ** " kmgt".index(unit or " "))
    if size <= 0:
        raise argparse.ArgumentTypeError(f"a size must be positive: {text!r}")
    return size


def register(commands: "argparse._SubParsersAction[Any]") -> None:
    """Add the `run` subcommand."""
    parser = commands.add_parser(
        "run",
        help="run a skill's command under a posture",
        description="Run COMMAND in a workspace under a posture and report what it changed.",
    )
    parser.add_argument("--skill", required=True, help="a skill folder, or a skill's name")
    parser.add_argument(
        "--posture",
        help="local, hardened, docker, ... (default: as in the app, the strongest available "
        "here that can run the command; local only when named)",
    )
    parser.add_argument("--workspace", type=Path, help="folder to run in (default: a fresh one)")
    parser.add_argument(
        "--rerun-of", metavar="RUN", help="the failed run this re-runs with a change (History)"
    )
    add_run_options(parser)
    parser.set_defaults(handler=_run)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options `run` and `compare` share: limits, network, image, environment, --json and
    the command."""
    add_posture_options(parser)
    parser.add_argument(
        "--no-env", action="store_true", help="run without the skill's built environment"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARG...]")


def add_posture_options(parser: argparse.ArgumentParser) -> None:
    """The posture's limits and network (`posture_from_args` reads them)."""
    parser.add_argument("--timeout", type=float, metavar="S", help="wall-clock limit, seconds")
    parser.add_argument("--memory", type=parse_size, metavar="SIZE", help="e.g. 256m, 1g")
    parser.add_argument("--cpus", type=float, metavar="N")
    parser.add_argument("--pids", type=int, metavar="N", help="most processes at once")
    parser.add_argument("--file-size", type=parse_size, metavar="SIZE", help="biggest file")
    parser.add_argument("--cpu-time", type=int, metavar="S", help="CPU seconds (rlimit)")
    parser.add_argument("--network", choices=[n.value for n in Network])
    parser.add_argument(
        "--allow-host",
        action="append",
        metavar="HOST[:PORT]",
        help="bubblewrap: let the command reach this host (ports 80 and 443 without :PORT) "
        "through the workbench's logging proxy; quickjs: let fetch reach it; repeatable",
    )
    parser.add_argument(
        "--image", help=f"the image docker and gvisor run (default {DEFAULT_IMAGE})"
    )


def _run(args: argparse.Namespace) -> int:
    from workbench.platform import loops
    from workbench.runs.service import RunPlan
    from workbench.runs.services import RunServices

    argv = command_argv(args, "run")
    posture_id = _posture_id(args.posture) if args.posture else _default_posture(argv)
    posture = posture_from_args(posture_id, args, "run")
    if args.workspace is not None and not args.workspace.is_dir():
        missing = not args.workspace.exists() and not args.workspace.is_symlink()
        raise UsageError(
            f"workbench run: --workspace {args.workspace} "
            + (
                "does not exist (create it, or leave --workspace out for a fresh folder)"
                if missing
                else "is not a folder"
            )
        )
    skill = find_skill(args.skill, default_roots())
    if not skill.usable:
        warn(f"warning: skill {skill.name} has errors (`workbench skills show`); running anyway")
    services = RunServices.open()
    rerun_of = None if args.rerun_of is None else services.history.resolve(args.rerun_of).run_id
    run_id = new_run_id()
    workspace = args.workspace or services.layout.fresh_workspace(run_id)
    if args.workspace is None:
        warn(f"workspace: {workspace} (a fresh folder; use --workspace DIR for your own)")
    environment = skill_environment(skill, posture, services.layout, args.no_env)
    plan = RunPlan(
        skill.name, skill.path, posture, argv, workspace.absolute(), run_id=run_id,
        environment=environment, rerun_of=rerun_of,
    )  # fmt: skip
    warn_posture(posture)
    try:
        done = loops.run(_run_with_signals(services, plan, live=not args.json))
    except WorkbenchError as error:
        if args.json:  # still exactly one document; main() prints the error and exits 125
            emit_json("run", {"run_id": run_id, "outcome": "error", "cause": str(error)})
        raise
    if args.json:
        emit_json("run", run_document(done.record, services.layout))
    else:
        _summary(done, services.layout)
    return exit_code(done.result)


def skill_environment(
    skill: "Skill", posture: Posture, layout: DataLayout, no_env: bool
) -> "SkillEnvironment | None":
    """The skill's built environment for `posture` (None with `--no-env`, or when it has
    none), saying on stderr which one a run uses, or why it has none."""
    from workbench.environments.resolve import for_run

    if no_env:
        return None
    try:
        found, warning = for_run(skill, posture, layout.environment_store())
    except WorkbenchError as error:
        warn(f"warning: running without the skill's environment: {error}")
        return None
    if warning:
        warn(f"warning: {warning}")
    if found is None:
        return None
    packages = ", ".join(found.installed + found.installed_node) or "no packages"
    image = f"; image {found.image}" if found.image else ""
    warn(f"environment: {found.env_id} ({packages}{image})")
    return found.for_run()


def command_argv(args: argparse.Namespace, name: str) -> tuple[str, ...]:
    """The command after `--`; `UsageError` when there is none."""
    argv = tuple(args.command[1:] if args.command[:1] == ["--"] else args.command)
    if not argv:
        raise UsageError(f"workbench {name}: give the command to run after `--`")
    return argv


def _default_posture(argv: tuple[str, ...]) -> PostureId:
    """The app's default for `argv`: the strongest posture available here that can run it
    (QuickJS for a `.js` script), never `local`; says which on stderr."""
    from workbench.cli.postures import runnable_here
    from workbench.runs.compare import default_postures

    fitting = default_postures(runnable_here(), argv)
    if not fitting:
        raise UsageError(
            "workbench run: no sandboxing posture that can run this command is available "
            "here; name one with --posture (local only if you accept running without a sandbox)"
        )
    warn(
        f"posture: {fitting[0]} (the strongest available here for this command, as in the "
        "app; choose another with --posture)"
    )
    return fitting[0]


def _posture_id(text: str) -> PostureId:
    try:
        return parse_posture_id(text)
    except PostureError as error:
        raise UsageError(str(error)) from None


def warn_posture(posture: Posture) -> None:
    """The posture's warnings on stderr, each labelled with its posture, DANGER ones loudly."""
    for warning in assess(posture):
        warn(posture_warning(posture.id, warning))


def posture_warning(posture_id: PostureId, warning: PostureWarning) -> str:
    """`caution (hardened): ...`; a DANGER one as `*** DANGER (local posture): ...`."""
    if warning.severity is Severity.DANGER:
        return f"*** DANGER ({posture_id} posture): {plain_text(warning.text)}"
    return f"{warning.severity.value} ({posture_id}): {plain_text(warning.text)}"


def posture_from_args(posture_id: PostureId, args: argparse.Namespace, name: str) -> Posture:
    """`posture_id` with the limits, network, image and allowed hosts given by
    `add_run_options`'s options (allowed hosts go to bubblewrap's proxy or QuickJS's fetch;
    `run` refuses them for another posture)."""
    hosts = tuple(dict.fromkeys(args.allow_host or ()))
    if hosts and name == "run" and posture_id not in HOSTED:
        raise UsageError(
            "workbench run: --allow-host works with --posture bubblewrap or quickjs only"
        )
    for host in hosts:
        try:
            parse_host(host)
        except UsageError as error:
            raise UsageError(f"workbench {name}: --allow-host: {error}") from None
    posture = Posture(
        posture_id,
        network=Network(args.network or Network.NONE),
        allow_hosts=hosts if posture_id is PostureId.BUBBLEWRAP else (),
        image=args.image or DEFAULT_IMAGE,
        fetch_hosts=hosts if posture_id is PostureId.QUICKJS else (),
    )
    limits = {
        field: value
        for option, field in LIMIT_OPTIONS.items()
        if (value := getattr(args, option.removeprefix("--").replace("-", "_"))) is not None
    }
    if not all(math.isfinite(value) and value > 0 for value in limits.values()):
        options = ", ".join(LIMIT_OPTIONS)
        raise UsageError(f"workbench {name}: {options} must be positive numbers")
    return posture.with_limits(**limits)


async def _run_with_signals(services: "RunServices", plan: "RunPlan", live: bool) -> "CompletedRun":
    with cancel_on_signals() as cancel:
        try:
            sink = LiveOutput() if live else _no_output
            return await services.run(plan, sink, cancel, on_progress=warn)
        finally:
            await services.close()


@contextlib.contextmanager
def cancel_on_signals() -> Iterator["CancelToken"]:
    """A cancel token that Ctrl-C (SIGINT), SIGTERM and a closed terminal (SIGHUP) cancel."""
    import asyncio

    from workbench.executors.types import CancelToken

    cancel = CancelToken()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, cancel.cancel)
    try:
        yield cancel
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(signum)


class LiveOutput:
    """Writes the command's output to ours as it arrives.

    Into a pipe or file the bytes go unchanged. On a terminal they are shown as plain text
    (`AnsiDecoder` without colour): a skill's escape sequences could otherwise retitle the
    window, move the cursor over earlier lines or write the clipboard (OSC 52).
    """

    def __init__(self) -> None:
        self._decoders = {"stdout": AnsiDecoder(), "stderr": AnsiDecoder()}

    def __call__(self, chunk: "OutputChunk", /) -> None:
        stream = sys.stdout if chunk.stream == "stdout" else sys.stderr  # a `Stream` is a str
        if stream.isatty():
            pieces = self._decoders[chunk.stream].feed(chunk.data, colour=False)
            stream.write("".join("\r" if p.rewrite else p.text for p in pieces))
            stream.flush()
        else:
            stream.buffer.write(chunk.data)
            stream.buffer.flush()


def _no_output(chunk: "OutputChunk") -> None:
    del chunk  # with --json the output is in the document, not streamed


def exit_code(result: "RunResult") -> int:
    """The process exit code for a finished run (see the module doc)."""
    from workbench.executors.types import RunStatus

    fixed = {
        RunStatus.OK: 0,
        RunStatus.TIMED_OUT: EXIT_TIMEOUT,
        RunStatus.CANCELLED: EXIT_CANCELLED,
        RunStatus.OOM_KILLED: EXIT_OOM,
        RunStatus.ERROR: EXIT_NOT_RUN,
    }
    if result.status in fixed:
        return fixed[result.status]
    if result.exit_code is not None:
        return result.exit_code
    return 128 + result.signal if result.signal else 1


def cut_output(output: "CapturedOutput") -> str:
    """Where the rest of a stream that was cut in memory is, e.g. "only the first 4 MiB of 9 MiB
    shown; the full output is in /runs/x/stdout.log"."""
    from workbench.executors.process.outcome import format_bytes

    shown = len(output.text.encode())
    said = f"only the first {format_bytes(shown)} of {format_bytes(output.total_bytes)} shown"
    if output.log_path is None:
        return said
    if output.log_dropped_bytes:
        return (
            f"{said}; its log keeps the start and the end ({output.log_dropped_bytes:,} bytes "
            f"between them dropped): {output.log_path}"
        )
    return f"{said}; the full output is in {output.log_path}"


def _summary(done: "CompletedRun", layout: DataLayout) -> None:
    from workbench.executors.types import RunStatus

    result = done.result
    if result.status is RunStatus.ERROR:
        warn(f"error: the workbench could not run the command: {plain_text(result.cause)}")
    warn(
        f"run {result.run_id}: {result.status.value} ({plain_text(result.cause)}), "
        f"{result.wall_seconds:.2f} s"
    )
    for name, output in (("stdout", result.stdout), ("stderr", result.stderr)):
        if output.truncated:
            warn(f"{name}: {cut_output(output)}")
    for note in done.record.notes:
        warn(f"note: {plain_text(note)}")
    for attempt in result.network_log:
        warn(f"network: {plain_text(network_line(to_jsonable(attempt)))}")
    said_before = set(assess(result.card.posture))  # printed by `warn_posture`
    for warning in result.warnings:
        if warning not in said_before:
            warn(posture_warning(result.card.posture.id, warning))
    print_diagnosis(done.record, layout)
    changes = result.changes
    if not changes:
        warn("workspace: no changes")
        return
    warn(f"workspace: {len(changes)} changed path(s) in {done.record.workspace}")
    for change in changes[:_MAX_CHANGES_SHOWN]:
        warn(f"  {change.kind.value:<12} {path_text(change.path)}")
    if len(changes) > _MAX_CHANGES_SHOWN:
        warn(f"  ... and {len(changes) - _MAX_CHANGES_SHOWN} more")
    warn(f"undo with: workbench history restore {result.run_id}")


def run_document(record: RunRecord, layout: DataLayout) -> dict[str, Any]:
    """`record_to_dict(record)`, its diagnosis carrying `rerun_command` when it has a change."""
    document = record_to_dict(record)
    diagnosis = record.diagnosis
    if diagnosis is not None and diagnosis.change is not None and document.get("diagnosis"):
        document["diagnosis"]["rerun_command"] = [
            shlex.join(argv) for argv in rerun_commands(record, diagnosis.change, layout)
        ]
    return document


def print_diagnosis(record: RunRecord, layout: DataLayout) -> None:
    """The diagnosis of `record` on stderr (nothing for a run without one)."""
    diagnosis = record.diagnosis
    if diagnosis is None:
        return
    warn(f"why: {_heading(diagnosis)}")
    warn(f"  {diagnosis.cause}")
    if diagnosis.evidence is not None:
        warn(f"  evidence ({diagnosis.evidence.where}): {diagnosis.evidence.text}")
    if diagnosis.suggestion:
        warn(f"  suggestion: {diagnosis.suggestion}")
    if diagnosis.change is not None and record.result is not None:
        commands = rerun_commands(record, diagnosis.change, layout)
        warn(f"  re-run {diagnosis.change.words()}:")
        for argv in commands:
            warn(f"    {shlex.join(argv)}")


def _heading(diagnosis: Diagnosis) -> str:
    if not diagnosis.control:
        return f"{diagnosis.kind.value} (no control of the posture stopped it)"
    return f"{diagnosis.kind.value}, by the control: {diagnosis.control}"


def rerun_commands(record: RunRecord, change: Change, layout: DataLayout) -> list[list[str]]:
    """The commands that re-run `record` with `change`: `workbench env build` first when the
    change builds the skill's environment, then `workbench run ... --rerun-of RUN`."""
    from workbench.runs.rerun import had_fresh_workspace, rerun_argv, rerun_posture

    posture = rerun_posture(record, change)
    run = ["workbench", "run", "--skill", str(record.skill_dir), "--posture", posture.id.value]
    if not had_fresh_workspace(record, layout):
        run += ["--workspace", str(record.workspace)]
    run += posture_options(posture)
    run += ["--rerun-of", record.run_id, "--", *rerun_argv(record, posture)]
    if change.build_env:
        build = ["workbench", "env", "build", "--skill", str(record.skill_dir)]
        return [[*build, "--posture", posture.id.value], run]
    return [run]
