"""Units of the quickjs posture that need no worker: framing, script resolution, fs policy."""

import json
from pathlib import Path

import pytest

from workbench.executors.quickjs.executor import resolve_entry_script
from workbench.executors.quickjs.run import limit_checks, uid_check, worker_rlimits
from workbench.executors.quickjs.worker import jsonwire
from workbench.executors.quickjs.worker.fs import MAX_FILES_CREATED, FsRefused, WorkspaceFs
from workbench.executors.quickjs.worker.main import clean_stack
from workbench.executors.quickjs.worker.protocol import (
    HEADER,
    MAX_MESSAGE,
    MessageDecoder,
    ProtocolError,
    encode_message,
)
from workbench.executors.types import SessionSpec
from workbench.postures.model import MIB, Limits


def test_decoder_reassembles_messages_split_anywhere() -> None:
    data = encode_message({"type": "ready"}) + encode_message({"type": "result", "n": 1})
    decoder = MessageDecoder()
    messages = []
    for i in range(len(data)):
        messages += decoder.feed(data[i : i + 1])
    assert messages == [{"type": "ready"}, {"type": "result", "n": 1}]


@pytest.mark.parametrize(
    "data",
    [
        HEADER.pack(MAX_MESSAGE + 1),
        HEADER.pack(3) + b"[1]",
        HEADER.pack(3) + b"{x}",
    ],
)
def test_decoder_rejects_malformed_messages(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        MessageDecoder().feed(data)


def test_encode_refuses_oversized_messages() -> None:
    with pytest.raises(ProtocolError):
        encode_message({"x": "y" * MAX_MESSAGE})


@pytest.fixture
def session(tmp_path: Path) -> SessionSpec:
    (tmp_path / "skill/scripts").mkdir(parents=True)
    (tmp_path / "skill/scripts/a.js").write_text("")
    (tmp_path / "ws/sub").mkdir(parents=True)
    (tmp_path / "ws/sub/b.js").write_text("")
    (tmp_path / "outside.js").write_text("")
    return SessionSpec(tmp_path / "skill", "demo", tmp_path / "ws", tmp_path / "runs")


def test_entry_scripts_resolve_in_the_skill_or_the_workspace(session: SessionSpec) -> None:
    skill_script = session.skill_dir.resolve() / "scripts/a.js"
    assert resolve_entry_script(session, "$SKILL_DIR/scripts/a.js") == (
        skill_script,
        "$SKILL_DIR/scripts/a.js",
    )
    assert resolve_entry_script(session, "${SKILL_DIR}/scripts/a.js")[1] == (
        "$SKILL_DIR/scripts/a.js"
    )
    assert resolve_entry_script(session, "sub/b.js")[1] == "sub/b.js"
    assert resolve_entry_script(session, str(skill_script))[1] == "$SKILL_DIR/scripts/a.js"


@pytest.mark.parametrize(
    "argv0", ["../outside.js", "/etc/hosts.js", "$SKILL_DIR/../outside.js", "sub/../../outside.js"]
)
def test_entry_scripts_outside_their_root_are_refused(session: SessionSpec, argv0: str) -> None:
    assert isinstance(resolve_entry_script(session, argv0), str)


def test_limit_checks_compare_proc_limits_with_the_wanted_ones() -> None:
    wanted = worker_rlimits(Limits(memory_bytes=64 * MIB, cpu_seconds=5))
    proc = (
        "Limit                     Soft Limit           Hard Limit           Units\n"
        "Max cpu time              5                    5                    seconds\n"
        "Max file size             1024                 unlimited            bytes\n"
        "Max open files            1024                 1024                 files\n"
        f"Max address space         {320 * MIB}            {320 * MIB}            bytes\n"
    )
    checks = dict(limit_checks(proc, wanted))
    assert checks["RLIMIT_CPU 5 s"] is True
    assert checks["RLIMIT_AS 320 MiB"] is True
    assert checks["RLIMIT_FSIZE 256 MiB"] is False  # a hard limit above the soft one
    assert checks["RLIMIT_NOFILE 16"] is False
    assert checks["RLIMIT_CORE 0"] is False


def test_uid_check_needs_every_uid_of_the_worker_to_be_the_throwaway_one() -> None:
    assert uid_check(
        "Name:\tpython\nUid:\t1610612737\t1610612737\t1610612737\t1610612737\n", 1610612737
    ) == ("runs as uid 1610612737", True)
    assert uid_check("Uid:\t1610612737\t1610612737\t0\t1610612737\n", 1610612737)[1] is False
    assert uid_check("Uid:\t0\t0\t0\t0\n", 1610612737)[1] is False
    assert uid_check("", 1610612737)[1] is False


def test_workspace_fs_policy(tmp_path: Path) -> None:
    (tmp_path / "ws/sub").mkdir(parents=True)
    (tmp_path / "ws/inner.txt").write_text("in")
    (tmp_path / "ws/link-in").symlink_to(tmp_path / "ws/inner.txt")
    (tmp_path / "ws/dir-link").symlink_to(tmp_path / "ws/sub")
    (tmp_path / "ws/loop").symlink_to(tmp_path / "ws/loop")
    fs = WorkspaceFs(tmp_path / "ws")
    assert fs.call("exists", "./inner.txt", None) is True
    assert fs.call("exists", "nope/inner.txt", None) is False
    assert fs.call("list", ".", None) == ["dir-link", "inner.txt", "link-in", "loop", "sub"]
    for bad in ["", "a\0b", "/ws/inner.txt", "x/../inner.txt"]:
        with pytest.raises(FsRefused):
            fs.call("exists", bad, None)
    # Links are refused wherever they are on the path, even ones that stay inside.
    for op, rel in [
        ("readText", "link-in"),
        ("readText", "loop"),
        ("list", "dir-link"),
        ("exists", "dir-link/x"),
        ("writeText", "dir-link/new.txt"),
    ]:
        with pytest.raises(FsRefused, match="is a symbolic link"):
            fs.call(op, rel, "x")
    assert list((tmp_path / "ws/sub").iterdir()) == []
    fs.call("remove", "link-in", None)
    assert (tmp_path / "ws/inner.txt").read_text() == "in"
    assert not (tmp_path / "ws/link-in").is_symlink()
    with pytest.raises(FsRefused, match="workspace itself"):
        fs.call("remove", ".", None)
    with pytest.raises(FsRefused, match="unknown operation"):
        fs.call("chmod", "inner.txt", None)


def test_workspace_fs_counts_new_files_against_the_cap(tmp_path: Path) -> None:
    fs = WorkspaceFs(tmp_path)
    fs.files_created = MAX_FILES_CREATED - 1
    fs.call("writeText", "a/last.txt", "1")
    fs.call("writeText", "a/last.txt", "2")  # overwriting is not a new file
    with pytest.raises(FsRefused, match="new files cap"):
        fs.call("writeText", "a/one-too-many.txt", "3")
    assert (tmp_path / "a/last.txt").read_text() == "2"
    assert not (tmp_path / "a/one-too-many.txt").exists()


def test_clean_stack_names_the_script_and_drops_host_frames() -> None:
    text = (
        "Error: nope\n    at __workbench_fs (<input>:20)\n    at __workbench_readText (<input>)\n"
        "    at main (<input>:3)\n    at <eval> (<input>:5)\n"
    )
    assert clean_stack(text, "job.js") == (
        "Error: nope\n    at main (job.js:3)\n    at <eval> (job.js:5)"
    )


JSON_VALUES = [
    {"type": "result", "outcome": "ok", "n": -0.0, "big": 10**30, "f": 1e300, "none": None},
    ['é\u2028\ud800 \x00\x1f"\\', [], {}, True, False, 2.5],
    float("inf"),
    "",
]


@pytest.mark.parametrize("value", JSON_VALUES, ids=range(len(JSON_VALUES)))
def test_the_wire_json_writes_and_reads_as_json_does(value: object) -> None:
    text = json.dumps(value)
    assert jsonwire.dumps(value) == text
    assert repr(jsonwire.loads(f" {text}\n")) == repr(json.loads(text))


@pytest.mark.parametrize("text", ["", " ", "{", "[1,]", "1 2", "{'a': 1}", "NaNa"])
def test_the_wire_json_refuses_what_json_refuses(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    with pytest.raises(json.JSONDecodeError):
        jsonwire.loads(text)


def test_the_wire_json_refuses_what_json_cannot_write() -> None:
    looped: list[object] = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular"):
        jsonwire.dumps(looped)
    with pytest.raises(TypeError, match="not JSON serializable"):
        jsonwire.dumps({"x": object()})
    assert jsonwire.dumps([1]) == "[1]"  # the failures left no marks behind


def test_a_scripts_strings_lose_only_their_lone_surrogates() -> None:
    sent = r'["a\ud800", {"k\udfff": ["\ud83d\ude00", "é", 1, null]}, "plain"]'
    assert jsonwire.from_script(sent) == [
        "a\ufffd",
        {"k\ufffd": ["\U0001f600", "é", 1, None]},
        "plain",
    ]
