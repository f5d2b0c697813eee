"""The hardened posture's environment: an allow-list, with credential-looking names removed.

A variable reaches the command when its name is allow-listed (or the user passed it for this
run), unless the name looks like a credential; a credential passes only when the user confirmed
it in `posture.confirmed_secret_env`. Every name left out is reported.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from workbench.postures.model import Posture

CREDENTIAL_WORDS = (
    "TOKEN",
    "SECRET",
    "KEY",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "SESSION",
    "COOKIE",
    "AUTH",
    "PRIVATE",
)
CREDENTIAL_NAMES = frozenset(
    {
        "SSH_AUTH_SOCK",
        "SSH_AGENT_PID",
        "KUBECONFIG",
        "DOCKER_HOST",
        "DOCKER_CONFIG",
        "GPG_AGENT_INFO",
        "NETRC",
        "PGPASSFILE",
        "DATABASE_URL",
    }
)
CREDENTIAL_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "GCP_", "GCLOUD_", "VAULT_", "OP_")


def looks_like_credential(name: str) -> bool:
    """True for names that commonly hold secrets (`GITHUB_TOKEN`, `AWS_REGION`, ...)."""
    upper = name.upper()
    return (
        upper in CREDENTIAL_NAMES
        or upper.startswith(CREDENTIAL_PREFIXES)
        or any(word in upper for word in CREDENTIAL_WORDS)
    )


@dataclass(frozen=True, slots=True)
class ScrubbedEnv:
    """The environment a command gets, and the names that were left out."""

    env: dict[str, str]
    kept: tuple[str, ...]
    dropped: tuple[str, ...]


def scrub_env(
    posture: Posture,
    source: Mapping[str, str],
    requested: Mapping[str, str],
    fixed: Mapping[str, str],
) -> ScrubbedEnv:
    """Build the environment from `source` (the app's), `requested` (the user's extras for
    this run) and `fixed` (the workbench's own variables, always set)."""
    allowed = set(posture.env_allow) | set(posture.confirmed_secret_env)
    confirmed = set(posture.confirmed_secret_env)

    def passes(name: str, listed: bool) -> bool:
        return listed and (name in confirmed or not looks_like_credential(name))

    env = {name: value for name, value in source.items() if passes(name, name in allowed)}
    env.update({name: value for name, value in requested.items() if passes(name, True)})
    dropped = (set(source) | set(requested)) - set(env) - set(fixed)
    env.update(fixed)
    return ScrubbedEnv(env=env, kept=tuple(sorted(env)), dropped=tuple(sorted(dropped)))
