"""A posture as `workbench run` options: the one table of limit options, and the argument list
that gives a posture back to the command line (the re-run a diagnosis prints, the pool refill
a run starts)."""

from workbench.postures.model import (
    CONTAINER_POSTURES,
    DEFAULT_IMAGE,
    DEFAULT_LIMITS,
    MIB,
    Network,
    Posture,
    PostureId,
)

LIMIT_OPTIONS = {
    "--timeout": "timeout_s",
    "--memory": "memory_bytes",
    "--cpus": "cpus",
    "--pids": "pids",
    "--file-size": "file_size_bytes",
    "--cpu-time": "cpu_seconds",
}
HOSTED = (PostureId.BUBBLEWRAP, PostureId.QUICKJS)  # the postures `--allow-host` serves


def posture_options(posture: Posture) -> list[str]:
    """The options that give `posture` its limits, network, allowed hosts and image where they
    are not the defaults (hosts only for a posture that uses them, the image only for a
    container posture, so the command is one `workbench run` accepts)."""
    options = []
    for option, name in LIMIT_OPTIONS.items():
        value = getattr(posture.limits, name)
        if value != getattr(DEFAULT_LIMITS, name):
            options += [option, size_text(value) if name.endswith("_bytes") else f"{value:g}"]
    if posture.network is not Network.NONE:
        options += ["--network", posture.network.value]
    if posture.id in HOSTED:
        for host in posture.allow_hosts + posture.fetch_hosts:
            options += ["--allow-host", host]
    if posture.id in CONTAINER_POSTURES and posture.image != DEFAULT_IMAGE:
        options += ["--image", posture.image]
    return options


def size_text(value: int) -> str:
    """`value` bytes as the shortest exact size option (`512m`, `1g`, or plain bytes)."""
    for unit, scale in (("g", 1024 * MIB), ("m", MIB), ("k", 1024)):
        if value % scale == 0:
            return f"{value // scale}{unit}"
    return str(value)
