"""The `hardened` and `local` postures run by an ordinary user, for real, on a root machine.

Each test runs `workbench run --json` as an unprivileged uid of its own, with no account (see
`tests/e2e/nonroot.py`), so the app is not root: the command runs as that user, the hardened
app makes itself non-dumpable, RLIMIT_NPROC is set in a user namespace of the run's own, and
no limit can go above the app's own hard one. Afterwards root checks, with a full process scan,
that nothing of that user is left running.
"""

import json
import os
import shlex
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.e2e.nonroot import OrdinaryUser, find_user
from workbench.executors.hardened.executor import OWN_USERNS_CHECK

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root to switch uid (as a user, every test is non-root)"
)

CANARY = "canary-9c3e71"
FORK_BOMB = """
import os, sys, time
made = 1
try:
    while True:
        if os.fork() == 0:
            time.sleep(120)
            os._exit(0)
        made += 1
finally:
    print("processes", made, file=sys.stderr)
"""

Result = dict[str, Any]


@pytest.fixture(scope="session")
def user() -> OrdinaryUser:
    """The unprivileged uid of this test session and its interpreter."""
    found = find_user()
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture
def home(user: OrdinaryUser) -> Iterator[Path]:
    """A folder the user owns, with a skill and a workspace; its processes are ended after."""
    folder = Path(tempfile.mkdtemp(prefix="workbench-nonroot-"))
    (folder / "skill").mkdir()
    (folder / "skill" / "SKILL.md").write_text(
        "---\nname: nonroot-skill\ndescription: A skill for tests.\n---\n# Demo\n"
    )
    (folder / "ws").mkdir()
    for path in (folder, *folder.rglob("*")):
        os.chown(path, user.uid, user.gid)
    yield folder
    for process in user.processes():  # only after a failure: the tests assert none are left
        process.kill()
    shutil.rmtree(folder)


RunAs = Callable[..., tuple[Result, int]]


@pytest.fixture
def run_as_user(user: OrdinaryUser, home: Path) -> RunAs:
    """`run_as_user(posture, *options, "--", *command)`: the run's result and the app's pid."""

    def run(*args: str, prefix: tuple[str, ...] = ()) -> tuple[Result, int]:
        env = user.env(home, WB_CANARY_TOKEN=CANARY)
        skill, workspace = str(home / "skill"), str(home / "ws")
        cli = ("run", "--json", "--skill", skill, "--workspace", workspace, "--posture", *args)
        process, out, err = user.workbench(env, *cli, prefix=prefix)
        assert out, err
        return json.loads(out)["result"], process.pid

    return run


def test_a_hardened_run_is_the_users_own_and_cannot_read_the_app(
    run_as_user: RunAs, user: OrdinaryUser, home: Path
) -> None:
    script = "echo $PPID; id -u; echo hi > made.txt; env; cat /proc/$PPID/environ || echo closed"
    result, app_pid = run_as_user(
        "hardened", "--memory", "300m", "--pids", "99", "--", "sh", "-c", script
    )
    assert result["status"] == "ok", result["cause"]
    parent, uid, *rest = result["stdout"]["text"].splitlines()
    assert (int(parent), int(uid)) == (app_pid, user.uid)  # the app itself is the parent
    assert rest[-1] == "closed"
    assert "Permission denied" in result["stderr"]["text"]
    assert CANARY not in result["stdout"]["text"] + result["stderr"]["text"]
    assert (home / "ws" / "made.txt").stat().st_uid == user.uid
    card = result["card"]
    assert card["run_as"].startswith(f"uid {user.uid}: you (the workbench is not root")
    checks = dict(card["checks"])
    assert checks["RLIMIT_AS 300 MiB"] is True
    assert checks["RLIMIT_NPROC 99"] is True
    assert all(held for name, held in checks.items() if name.startswith("RLIMIT_"))
    assert checks["app not dumpable (its environment is unreadable)"] is True
    assert checks[OWN_USERNS_CHECK] is True
    assert checks["no_new_privs (set-uid programs gain nothing)"] is True
    assert checks["CPU share 1 core(s) (needs a cgroup)"] is False
    assert not any(name.startswith("runs as uid") for name in checks)
    assert any("/dev/shm" in w["text"] and "stay after" in w["text"] for w in result["warnings"])
    assert user.processes() == []


def test_a_command_that_ends_at_once_still_shows_its_own_namespace_and_limit(
    run_as_user: RunAs, user: OrdinaryUser
) -> None:
    """The card's namespace and NPROC rows come from the wrapper's report, not from /proc of a
    command that may be gone (reaped) by the time they are read."""
    for _ in range(3):
        result, _ = run_as_user("hardened", "--pids", "50", "--", "true")
        checks = dict(result["card"]["checks"])
        assert (checks[OWN_USERNS_CHECK], checks["RLIMIT_NPROC 50"]) == (True, True)
        assert not any("user namespace" in w["text"] for w in result["warnings"])
    assert user.processes() == []


@pytest.mark.slow
def test_a_timeout_kills_the_background_children(run_as_user: RunAs, user: OrdinaryUser) -> None:
    script = "sleep 300 & sleep 301 & sleep 302"
    result, _ = run_as_user("hardened", "--timeout", "2", "--", "sh", "-c", script)
    assert result["status"] == "timed_out"
    assert result["cause"] == "wall-clock timeout of 2 s"
    assert result["leftover_processes"] == 0
    assert user.processes() == []


def test_daemons_that_left_the_tree_are_killed(
    run_as_user: RunAs, user: OrdinaryUser, home: Path
) -> None:
    script = (  # one keeps the run's tag, one empties its environment but copies the app's mark
        '(setsid sh -c "sleep 300 & echo \\$! > tagged.pid" &); '
        '(setsid env -i WORKBENCH_APP=$PPID sh -c "sleep 301 & echo \\$! > marked.pid" &); '
        "while [ ! -s tagged.pid ] || [ ! -s marked.pid ]; do sleep 0.1; done"
    )
    result, _ = run_as_user("hardened", "--", "sh", "-c", script)
    assert result["status"] == "ok"
    assert "background processes it left behind" in result["cause"]
    assert result["leftover_processes"] == 0
    for name in ("tagged.pid", "marked.pid"):
        assert not psutil.pid_exists(int((home / "ws" / name).read_text()))
    assert user.processes() == []


# Both set RLIMIT_NPROC inside a user namespace of the run's own, where it counts the run's
# processes only, so the 16 sleepers do not eat the budget (bubblewrap's PID 1 is among its).
@pytest.mark.parametrize(("posture", "fewest"), [("hardened", 23), ("bubblewrap", 20)])
def test_a_fork_bomb_stops_at_the_process_limit_and_spares_the_users_others(
    run_as_user: RunAs, user: OrdinaryUser, home: Path, posture: str, fewest: int
) -> None:
    env = user.env(home)
    others = [user.popen(["sleep", "120"], env) for _ in range(16)]
    try:
        result, _ = run_as_user(posture, "--pids", "24", "--", "python3", "-c", FORK_BOMB)
        assert result["status"] == "limit_exceeded"
        assert result["cause"] == "process limit 24 (RLIMIT_NPROC)"
        made = int(result["stderr"]["text"].split("processes ")[1].split()[0])
        assert fewest <= made <= 24
        assert result["leftover_processes"] == 0
        assert all(other.poll() is None for other in others)
        assert {p.pid for p in user.processes()} == {other.pid for other in others}
    finally:
        for other in others:
            other.kill()
            other.communicate()
    assert user.processes() == []


@pytest.mark.slow
def test_the_users_processes_that_end_during_a_run_give_it_no_more_processes(
    run_as_user: RunAs, user: OrdinaryUser, home: Path
) -> None:
    """Counted over all the user's processes, the budget of a run would be the limit plus what
    the user ran as it started, and grow as those end: here 16 end (and are reaped: a zombie
    still counts) before the bomb starts."""
    env = user.env(home)
    others = [user.popen(["sleep", "3"], env) for _ in range(16)]
    reaper = threading.Thread(target=lambda: [other.communicate() for other in others])
    reaper.start()
    try:
        command = f"sleep 5; exec python3 -c {shlex.quote(FORK_BOMB)}"
        result, _ = run_as_user("hardened", "--pids", "24", "--", "sh", "-c", command)
    finally:
        reaper.join()
    assert result["status"] == "limit_exceeded", result["cause"]
    made = int(result["stderr"]["text"].split("processes ")[1].split()[0])
    assert 23 <= made <= 24
    assert user.processes() == []


def test_a_memory_bomb_names_the_memory_limit(run_as_user: RunAs, user: OrdinaryUser) -> None:
    bomb = "x = []\nwhile True: x.append(bytearray(10**6))"
    result, _ = run_as_user("hardened", "--memory", "128m", "--", "python3", "-c", bomb)
    assert result["status"] == "oom_killed"
    assert result["cause"] == "memory limit 128 MiB (RLIMIT_AS)"
    assert "MemoryError" in result["stderr"]["text"]
    assert user.processes() == []


def test_a_hard_limit_below_the_postures_is_kept_and_the_card_says_so(
    run_as_user: RunAs, user: OrdinaryUser
) -> None:
    lowered = ("sh", "-c", 'ulimit -n 200 && exec "$@"', "sh")  # soft and hard: 200 < 256
    result, _ = run_as_user("hardened", "--", "sh", "-c", "ulimit -n", prefix=lowered)
    assert result["status"] == "ok", result["cause"]
    assert result["stdout"]["text"] == "200\n"
    checks = dict(result["card"]["checks"])
    assert checks["RLIMIT_NOFILE 256"] is False  # not what the posture asks: never pretended
    lowered_row = "RLIMIT_NOFILE lowered to 200: your hard limit is below the posture's"
    assert checks[f"{lowered_row}, and only root can raise it"] is True
    assert user.processes() == []


def test_the_local_posture_runs_as_the_user_with_its_environment(
    run_as_user: RunAs, user: OrdinaryUser
) -> None:
    script = 'id -u; echo "[$WB_CANARY_TOKEN]"; sleep 300 &'
    result, _ = run_as_user("local", "--", "sh", "-c", script)
    assert result["status"] == "ok"
    assert result["stdout"]["text"] == f"{user.uid}\n[{CANARY}]\n"
    assert result["cause"] == "exited with code 0; killed 1 background process it left behind"
    assert result["card"]["run_as"] == f"uid {user.uid}: you, with no isolation"
    assert result["leftover_processes"] == 0
    assert user.processes() == []


def test_restore_opens_up_and_removes_what_the_run_locked(user: OrdinaryUser, home: Path) -> None:
    workspace = home / "ws"
    (workspace / "notes.txt").write_text("mine")
    (workspace / "kept").mkdir()
    for path in (workspace / "notes.txt", workspace / "kept"):
        os.chown(path, user.uid, user.gid)
    chain = (  # 300 folders, each read-only, a file in each: deeper than a snapshot looks
        "import os\nfor _ in range(300): os.mkdir('d'); os.chdir('d'); open('f', 'w').close()\n"
        "for _ in range(300): os.chdir('..'); os.chmod('d', 0o500)"
    )
    script = (
        "echo changed > notes.txt; mkdir -p locked/in; touch locked/in/f kept/new; "
        f'chmod 0 locked/in locked; chmod 500 kept; python3 -c "{chain}"'
    )
    env = user.env(home)
    cli = ("--skill", str(home / "skill"), "--workspace", str(workspace), "--posture", "local")
    ran, _, err = user.workbench(env, "run", *cli, "--", "sh", "-c", script)
    assert ran.returncode == 0, err

    restored, out, err = user.workbench(env, "history", "restore", "last", "--json")

    assert restored.returncode == 0, err
    assert json.loads(out)["complete"] is True
    assert sorted(path.name for path in workspace.iterdir()) == ["kept", "notes.txt"]
    assert (workspace / "notes.txt").read_text() == "mine"
    assert list((workspace / "kept").iterdir()) == []
    assert (workspace / "kept").stat().st_mode & 0o777 == 0o755


def test_the_bubblewrap_lab_contains_every_probe_as_a_user(user: OrdinaryUser, home: Path) -> None:
    (home / "tmp").mkdir()
    os.chown(home / "tmp", user.uid, user.gid)
    env = user.env(home, TMPDIR=str(home / "tmp"))
    _, out, err = user.workbench(env, "probe", "--postures", "bubblewrap", "--json")
    board = json.loads(out)
    assert board["as_root"] is False, err
    verdicts = {cell["probe"]: cell["verdict"] for cell in board["cells"]}
    assert verdicts.pop("escape") == "not applicable"  # about display, not the posture
    assert set(verdicts.values()) == {"contained"}, board["cells"]
    assert not [cell for cell in board["cells"] if cell["unexpected"]]
    assert user.processes() == []
