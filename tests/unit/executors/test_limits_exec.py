"""The hardened exec wrapper (a perl helper): its status report, its environment and a real exec."""

import os
import subprocess
from pathlib import Path

import pytest

from workbench.executors.hardened.limits_exec import (
    app_user_namespace,
    decode_report,
    own_user_namespace_problem,
    wrapper_launch,
)
from workbench.platform import perl


def _wrap(
    *command: str, rlimits: dict[str, tuple[int, int]], env: dict[str, str] | None = None
) -> tuple[str, dict[str, str], int]:
    out, _, report, code = _wrap_all(*command, rlimits=rlimits, env=env)
    return out, report, code


def _wrap_all(
    *command: str,
    rlimits: dict[str, tuple[int, int]],
    env: dict[str, str] | None = None,
    own_userns: bool = False,
) -> tuple[str, str, dict[str, str], int]:
    read_fd, write_fd = os.pipe()
    env = env or {"PATH": os.environ["PATH"], "KEEP_ME": "1", "DROP_ME": "1"}
    names = ["PATH", "KEEP_ME", "PERL5OPT", "PERL_UNICODE", "LANG"]
    argv, start_env = wrapper_launch(rlimits, None, write_fd, names, env, own_userns)
    with subprocess.Popen(
        [*argv, *command],
        env=start_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=(write_fd,),
    ) as proc:
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as status:
            report = decode_report(status.read())
        out, err = proc.communicate()
    return out.decode(), err.decode(), report, proc.returncode


def test_wrapper_applies_limits_filters_env_and_reports() -> None:
    out, report, code = _wrap(
        "sh", "-c", 'ulimit -n; echo "${KEEP_ME:-}${DROP_ME:-}"', rlimits={"NOFILE": (64, 64)}
    )
    assert (out, code) == ("64\n1\n", 0)
    assert "error" not in report
    assert "Max open files            64" in report["limits"]
    assert "NoNewPrivs:\t1" in report["status"]


def test_the_command_s_environment_reaches_the_command_but_not_perl() -> None:
    """As root the wrapper runs before the uid switch: perl must start without `PERL5OPT` (it
    loads a module), `PERL_UNICODE` (it broke the status pipe) or a missing locale (a warning
    in the command's stderr), and the loader without `LD_PRELOAD`."""
    env = {
        "PATH": os.environ["PATH"],
        "PERL5OPT": "-MNo::Such::Module",
        "PERL_UNICODE": "SDA",
        "LANG": "xx_YY.UTF-8",
        "LD_PRELOAD": "/no/such/library.so",
    }
    command = ("sh", "-c", 'echo "$PERL5OPT $PERL_UNICODE $LANG ${LD_PRELOAD:-dropped}"')
    out, err, report, code = _wrap_all(*command, rlimits={}, env=env)
    assert (out, err, code) == ("-MNo::Such::Module SDA xx_YY.UTF-8 dropped\n", "", 0)
    assert "error" not in report and "NoNewPrivs:\t1" in report["status"]


def test_a_file_the_kernel_will_not_exec_is_refused_not_run_by_a_shell(tmp_path: Path) -> None:
    script = tmp_path / "no-shebang"
    script.write_text(f"touch {tmp_path}/ran\n")
    script.chmod(0o755)
    out, report, code = _wrap(str(script), rlimits={})
    assert (out, code) == ("", 126)
    assert report["error"].startswith(f"cannot run {script}: ")
    assert not (tmp_path / "ran").exists()


def test_wrapper_reports_a_missing_command() -> None:
    for missing in ("no-such-command-q", "/no/such/program"):
        out, report, code = _wrap(missing, rlimits={})
        assert (out, code) == ("", 127)
        assert report["error"] == f"command not found: {missing}"


def test_a_folder_on_path_it_may_not_enter_is_passed_over(tmp_path: Path) -> None:
    shut = tmp_path / "shut"
    shut.mkdir(mode=0o000)
    env = {"PATH": f"{shut}:{os.environ['PATH']}"}
    out, _, code = _wrap("echo", "found", rlimits={}, env=env)
    assert (out, code) == ("found\n", 0)


def test_wrapper_reports_a_limit_it_may_not_set() -> None:
    beyond = int(Path("/proc/sys/fs/nr_open").read_text()) + 1  # above any hard limit, root's too
    out, report, code = _wrap("echo", "ran", rlimits={"NOFILE": (beyond, beyond)})
    assert (out, code) == ("", 126)
    prefix = f"could not apply the hardened limits: RLIMIT_NOFILE {beyond}:{beyond}: "
    assert report["error"].startswith(prefix) and len(report["error"]) > len(prefix)


OWN_NAMESPACE = "grep processes /proc/self/limits; readlink /proc/self/ns/user; id -u"


def test_a_user_namespace_of_the_run_s_own_gets_the_process_limit() -> None:
    out, _, report, code = _wrap_all(
        "sh", "-c", OWN_NAMESPACE, rlimits={"NPROC": (40, 40)}, own_userns=True
    )
    limit, namespace, uid = out.splitlines()
    assert (report["userns"], report["userns_id"], code) == ("own", namespace, 0)
    assert limit.split()[2:4] == ["40", "40"]
    assert namespace != app_user_namespace()
    assert int(uid) == os.geteuid()  # mapped to itself


def _refuse_unshare(monkeypatch: pytest.MonkeyPatch) -> None:
    numbers = {**perl._SYSCALLS[os.uname().machine], "unshare": 100_000}  # ENOSYS
    monkeypatch.setitem(perl._SYSCALLS, os.uname().machine, numbers)


def test_where_the_kernel_refuses_a_user_namespace_the_limits_are_set_outside(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _refuse_unshare(monkeypatch)
    out, _, report, code = _wrap_all(
        "sh", "-c", OWN_NAMESPACE, rlimits={"NPROC": (40, 40)}, own_userns=True
    )
    limit, namespace, _ = out.splitlines()
    assert report["userns"].startswith("refused: ") and code == 0
    assert limit.split()[2:4] == ["40", "40"]  # set all the same
    assert namespace == app_user_namespace()


def test_the_session_s_check_says_why_a_run_would_get_no_user_namespace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert own_user_namespace_problem() == ""  # this kernel (5.14+) allows one
    _refuse_unshare(monkeypatch)
    assert own_user_namespace_problem().startswith("refused: ")
    here = os.uname()
    old = os.uname_result((here.sysname, here.nodename, "5.10.0-28-amd64", "#1", here.machine))
    monkeypatch.setattr(os, "uname", lambda: old)
    assert own_user_namespace_problem() == (
        "Linux 5.10.0-28-amd64 counts RLIMIT_NPROC over all your processes before 5.14"
    )
