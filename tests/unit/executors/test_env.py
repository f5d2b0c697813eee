"""The hardened environment: allow-list, credential names, confirmed secrets, the report."""

import pytest

from workbench.executors.hardened.environ import looks_like_credential, scrub_env
from workbench.postures.model import Posture, PostureId


@pytest.mark.parametrize(
    "name",
    [
        "GITHUB_TOKEN",
        "AWS_REGION",
        "db_password",
        "SSH_AUTH_SOCK",
        "KUBECONFIG",
        "MY_API_KEY",
        "DOCKER_HOST",
        "GPG_AGENT_INFO",
        "SESSION_COOKIE",
        "X_AUTH_HEADER",
        "PASSWD",
    ],
)
def test_credential_names(name: str) -> None:
    assert looks_like_credential(name)


@pytest.mark.parametrize("name", ["PATH", "LANG", "LC_ALL", "TERM", "TZ", "HOME", "EDITOR"])
def test_ordinary_names(name: str) -> None:
    assert not looks_like_credential(name)


def test_allow_list_fixed_values_and_report() -> None:
    posture = Posture(PostureId.HARDENED, env_allow=("PATH", "LANG", "GITHUB_TOKEN"))
    source = {"PATH": "/bin", "LANG": "C", "GITHUB_TOKEN": "t", "SHELL": "/bin/sh", "HOME": "/r"}
    scrubbed = scrub_env(posture, source, {"EXTRA": "1", "API_KEY": "k"}, {"HOME": "/private"})
    assert scrubbed.env == {"PATH": "/bin", "LANG": "C", "EXTRA": "1", "HOME": "/private"}
    assert scrubbed.kept == ("EXTRA", "HOME", "LANG", "PATH")
    # allow-listed credential, unlisted name, and a credential the user asked for: all reported
    assert scrubbed.dropped == ("API_KEY", "GITHUB_TOKEN", "SHELL")


def test_confirmed_secret_passes() -> None:
    posture = Posture(PostureId.HARDENED, env_allow=("PATH",), confirmed_secret_env=("NPM_TOKEN",))
    scrubbed = scrub_env(posture, {"NPM_TOKEN": "n", "PATH": "/bin"}, {}, {})
    assert scrubbed.env == {"NPM_TOKEN": "n", "PATH": "/bin"}
    assert scrubbed.dropped == ()
