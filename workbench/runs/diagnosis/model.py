"""The data of a diagnosis: its `Kind`, the `Evidence` line, the `Change` a re-run makes, the
`Diagnosis` itself (and its JSON form back), and the `RunFacts` every rule reads."""

import re
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.postures.description import posture_title
from workbench.postures.model import Network, Posture, PostureId

if TYPE_CHECKING:  # the executors package is heavy to import; the records only name it
    from workbench.executors.types import RunResult


_FRAME = re.compile(r'File "[^"]*", line \d+|at \S+ \(.*:\d+(:\d+)?\)$|at \S+:\d+:\d+$')
_MARKERS = re.compile(r"[\^~ ]+")
MAX_LINES = 5000
MAX_LINE_CHARS = 1000


class Kind(StrEnum):
    """What made a run fail, as a diagnosis names it."""

    WRITE_OUTSIDE = "write-outside-workspace"
    HIDDEN_FILE = "hidden-file"
    NETWORK_OFF = "network-off"
    MISSING_TOOL = "missing-tool"
    MISSING_MODULE = "missing-module"
    PERMISSION = "permission-dropped"
    PROCESS_LIMIT = "process-limit"
    FILE_SIZE_LIMIT = "file-size-limit"
    MEMORY_LIMIT = "memory-limit"
    CPU_LIMIT = "cpu-limit"
    WAITING_FOR_INPUT = "waiting-for-input"
    TIMEOUT = "timeout"
    NOT_RUN = "not-run"
    SKILL_FAILED = "skill-failed"


@dataclass(frozen=True, slots=True)
class Evidence:
    """The line that shows the cause: its text, the stream it is in (`stdout`, `stderr`,
    `network` for a host call, `run` for how the run ended) and its 1-based line number in
    that stream's kept text (None when it is not a line of output)."""

    text: str
    stream: str
    line: int | None = None

    @property
    def where(self) -> str:
        """`stderr line 12`, `network log`, `run`."""
        if self.line is not None:
            return f"{self.stream} line {self.line}"
        return "network log" if self.stream == "network" else self.stream


@dataclass(frozen=True, slots=True)
class Change:
    """What a re-run changes: another posture, the network, hosts for the network's allow-list
    (bubblewrap's proxy, QuickJS's fetch), limits (a `Limits` field and its new value), or
    building the skill's environment first. Empty fields change nothing."""

    posture: PostureId | None = None
    network: Network | None = None
    allow_hosts: tuple[str, ...] = ()
    limits: tuple[tuple[str, float], ...] = ()
    build_env: bool = False

    def apply(self, posture: Posture) -> Posture:
        """`posture` (the failed run's) with this change made."""
        changed = posture if self.posture is None else replace(posture, id=self.posture)
        if self.network is not None:
            changed = replace(changed, network=self.network)
        if self.allow_hosts and changed.id is PostureId.QUICKJS:
            hosts = tuple(dict.fromkeys(changed.fetch_hosts + self.allow_hosts))
            changed = replace(changed, fetch_hosts=hosts)
        elif self.allow_hosts:
            hosts = tuple(dict.fromkeys(changed.allow_hosts + self.allow_hosts))
            changed = replace(changed, allow_hosts=hosts)
        limits = {name: type(getattr(changed.limits, name))(value) for name, value in self.limits}
        return changed.with_limits(**limits) if limits else changed

    def words(self) -> str:
        """The change in a few words: `under Hardened local`, `with the network on`."""
        parts = []
        if self.build_env:
            parts.append("after building the skill's environment")
        if self.posture is not None:
            parts.append(f"under {posture_title(self.posture)}")
        if self.network is Network.BRIDGE:
            parts.append("with the network on")
        if self.allow_hosts:
            parts.append(f"with {', '.join(self.allow_hosts)} allowed")
        parts += [
            f"with {LIMIT_WORDS[name]} {show_limit(name, value)}" for name, value in self.limits
        ]
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Why one run failed (see the module doc). `control` is empty when no control of the
    posture did it; `change` is None when no re-run would help."""

    kind: Kind
    cause: str
    control: str
    evidence: Evidence | None
    suggestion: str
    change: Change | None = None

    @property
    def sandbox(self) -> bool:
        """True when a control of the posture (not the skill itself) made the run fail."""
        return bool(self.control)


LIMIT_WORDS = {
    "timeout_s": "a timeout of",
    "memory_bytes": "a memory limit of",
    "pids": "a process limit of",
    "file_size_bytes": "a file-size limit of",
    "cpu_seconds": "a CPU-time limit of",
}


def show_limit(name: str, value: float) -> str:
    """A limit's value for people: `2 GiB`, `90 s`, `512`."""
    if name.endswith("_bytes"):
        for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if value >= scale:
                return f"{value / scale:g} {unit}"
        return f"{value:g} bytes"
    return f"{value:g} s" if name in ("timeout_s", "cpu_seconds") else f"{value:g}"


Rule = Callable[["RunFacts"], Diagnosis | None]


@dataclass(frozen=True)
class RunFacts:
    """What the rules read: the result, where its workspace is on this computer, and the name
    of the skill it ran (for the commands a suggestion gives)."""

    result: "RunResult"
    workspace: Path | None
    skill: str = "SKILL"

    @property
    def posture(self) -> Posture:
        """The posture the run actually had (its card's)."""
        return self.result.card.posture

    @property
    def where(self) -> str:
        """`under Docker container`, for sentences."""
        return f"under {posture_title(self.posture.id)}"

    @cached_property
    def lines(self) -> list[Evidence]:
        """The lines of output, stderr first (where errors go), then stdout: the last
        `MAX_LINES` of each, each cut at `MAX_LINE_CHARS` (hostile output stays cheap)."""
        return [line for line, _ in self._lines]

    @cached_property
    def messages(self) -> list[Evidence]:
        """`lines` without stack traces: the frames of Python and Node tracebacks and the
        source lines (and `^^^` markers) Python quotes; what the program said, not where."""
        return [line for line, said in self._lines if said]

    @cached_property
    def _lines(self) -> list[tuple[Evidence, bool]]:
        found = []
        for stream in ("stderr", "stdout"):
            quoting = False
            numbered = list(enumerate(getattr(self.result, stream).text.splitlines(), 1))
            for number, raw in numbered[-MAX_LINES:]:
                text = raw.strip()[:MAX_LINE_CHARS]
                frame = bool(_FRAME.match(text))
                quoted = (quoting and raw[:1].isspace()) or bool(_MARKERS.fullmatch(text))
                if text:
                    found.append((Evidence(text, stream, number), not (frame or quoted)))
                quoting = frame
        return found


def diagnosis_from_dict(item: dict[str, Any] | None) -> Diagnosis | None:
    """A `Diagnosis` back from its JSON form (None for none, or one this build cannot read)."""
    if not item:
        return None
    try:
        evidence = item.get("evidence")
        change = item.get("change")
        return Diagnosis(
            kind=Kind(item["kind"]),
            cause=str(item["cause"]),
            control=str(item.get("control", "")),
            evidence=None if not evidence else Evidence(**_known(Evidence, evidence)),
            suggestion=str(item.get("suggestion", "")),
            change=None if change is None else _change(change),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _change(item: dict[str, Any]) -> Change:
    values = _known(Change, item)
    posture, network = values.get("posture"), values.get("network")
    return Change(
        posture=None if posture is None else PostureId(posture),
        network=None if network is None else Network(network),
        allow_hosts=tuple(values.get("allow_hosts", ())),
        limits=tuple((str(name), float(value)) for name, value in values.get("limits", ())),
        build_env=bool(values.get("build_env", False)),
    )


def _known(cls: type, item: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {key: value for key, value in item.items() if key in names}
