"""Executor postures as typed data: the ids, the settings and limits, warnings, availability.

A `Posture` is a frozen dataclass whose every knob has the safest default. Loosening a knob is
an explicit change of a field, which `description.assess()` turns into a plain-data warning
(what each posture contains is `containment.py`'s table). Which postures can run on this
machine is asked by `workbench.executors.availability`; `default_posture_id()` picks the
strongest of them.
"""

from dataclasses import dataclass, field, replace
from enum import StrEnum

from workbench.errors import PostureError

MIB = 1024 * 1024


class PostureId(StrEnum):
    """The executor postures, from no isolation to the strongest."""

    LOCAL = "local"
    HARDENED = "hardened"
    BUBBLEWRAP = "bubblewrap"
    DOCKER = "docker"
    GVISOR = "gvisor"
    QUICKJS = "quickjs"


class Network(StrEnum):
    """Network access a command gets. Only container postures honour this setting (bubblewrap's
    network is off but for its allowed hosts)."""

    NONE = "none"
    BRIDGE = "bridge"


CONTAINER_POSTURES = (PostureId.DOCKER, PostureId.GVISOR)


class Severity(StrEnum):
    """How loud a posture warning is: `danger` for no isolation or a loosened control."""

    INFO = "info"
    CAUTION = "caution"
    DANGER = "danger"


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of a run. The defaults are the safe ones a user may change."""

    timeout_s: float = 60.0
    memory_bytes: int = 512 * MIB
    cpus: float = 1.0
    pids: int = 128
    cpu_seconds: int = 30  # below the timeout: a busy loop is stopped by it, not the clock
    open_files: int = 256
    file_size_bytes: int = 256 * MIB
    # What a run may write to disk: all it writes under bubblewrap (counted), what it adds to
    # the workspace under the other postures (watched).
    disk_bytes: int = 1024 * MIB
    log_bytes: int = 16 * MIB  # each stream's log on disk (its head and tail)


DEFAULT_LIMITS = Limits()

DEFAULT_ENV_ALLOW: tuple[str, ...] = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ")
DEFAULT_IMAGE = "skill-workbench-sandbox:latest"


@dataclass(frozen=True, slots=True)
class Posture:
    """One executor posture with every knob it honours.

    Fields a posture does not use are ignored by it (for example `image` for `hardened`);
    `description.assess()` reports only the ones its containment claims name (`unless`).
    """

    id: PostureId
    limits: Limits = field(default_factory=Limits)
    network: Network = Network.NONE
    env_allow: tuple[str, ...] = DEFAULT_ENV_ALLOW
    confirmed_secret_env: tuple[str, ...] = ()
    extra_mounts: tuple[str, ...] = ()
    run_as_root: bool = False
    image: str = DEFAULT_IMAGE
    fetch_hosts: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()  # HOST[:PORT] bubblewrap's proxy lets through

    def with_limits(self, **changes: float | int) -> "Posture":
        """A copy with some limits changed, e.g. `posture.with_limits(timeout_s=5)`."""
        return replace(self, limits=replace(self.limits, **changes))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class PostureWarning:
    """One sentence about a posture that a user must see before trusting it."""

    severity: Severity
    text: str
    loosened: bool = False


@dataclass(frozen=True, slots=True)
class Availability:
    """Whether a posture can run on this machine, and the reason when it cannot."""

    available: bool
    reason: str


# Strongest first: the default posture is the first available one in this order.
STRENGTH_ORDER: tuple[PostureId, ...] = (
    PostureId.GVISOR,
    PostureId.DOCKER,
    PostureId.BUBBLEWRAP,
    PostureId.HARDENED,
)


def parse_posture_id(text: str) -> PostureId:
    """The posture named `text`, or a `PostureError` listing the known names."""
    try:
        return PostureId(text)
    except ValueError:
        known = ", ".join(p.value for p in PostureId)
        raise PostureError(f"Unknown posture {text!r}. Known postures: {known}.") from None


def default_posture_id(available: dict[PostureId, Availability]) -> PostureId:
    """The strongest available posture that runs shell commands; never `local`."""
    for posture_id in STRENGTH_ORDER:
        if available[posture_id].available:
            return posture_id
    raise PostureError(
        "No sandboxing posture is available on this machine; choose --posture local "
        "explicitly if you accept running without one."
    )
