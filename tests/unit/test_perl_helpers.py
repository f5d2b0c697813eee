"""Starting the perl helpers: where they can run, and the environment they start with."""

import os
import subprocess
from pathlib import Path

import pytest

from workbench.platform import perl
from workbench.platform.perl import helper_launch, helper_problem


def test_the_helpers_need_a_64_bit_perl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if os.uname().machine not in ("x86_64", "aarch64"):
        pytest.skip("this machine's system calls are not in the table")
    assert helper_problem("it sets the limits") == ""  # the system's perl
    monkeypatch.setattr(perl, "PERL", tmp_path / "perl")
    assert helper_problem("it sets the limits") == f"No {tmp_path / 'perl'}: it sets the limits."
    (tmp_path / "perl").write_bytes(b"\x7fELF\x01\x01\x01")  # a 32-bit program
    assert "not a 64-bit program" in helper_problem("it sets the limits")


def test_a_helper_starts_with_none_of_the_environment_and_hands_all_of_it_on() -> None:
    env = {"PATH": os.environ["PATH"], "LD_PRELOAD": "/no/such.so", "PERL5OPT": "-MNo::Such"}
    script = 'print join(",", map { "$_=$ENV{$_}" } sort keys %ENV), "\\n";'
    argv, start_env = helper_launch(script, [], env)
    assert not set(start_env) & set(env)  # neither the loader nor perl sees them as they start
    done = subprocess.run(argv, env=start_env, capture_output=True, text=True, check=True)
    assert done.stdout == ",".join(f"{name}={env[name]}" for name in sorted(env)) + "\n"
    assert done.stderr == ""
