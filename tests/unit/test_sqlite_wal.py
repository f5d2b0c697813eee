"""The workbench's databases open cleanly when many processes open a new one at once."""

import multiprocessing
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from workbench.runs.history import RunHistory
from workbench.workspace.blobs import BlobStore

PROCESSES = 8
ROUNDS = 6
FORK = multiprocessing.get_context("fork")


def _keep_a_blob(root: Path) -> None:
    kept = root.parent / f"kept-{os.getpid()}"
    kept.write_bytes(b"kept")
    fd = os.open(kept, os.O_RDONLY)
    try:
        with BlobStore(root).session() as blobs:
            blobs.put_fd(fd, 4)
    finally:
        os.close(fd)


def _open_history(root: Path) -> None:
    RunHistory(root / "history.sqlite3")


def _open_together(open_: Callable[[Path], None], root: Path, start, errors) -> None:
    start.wait()
    try:
        open_(root)
    except Exception as error:  # every failure is reported
        errors.put(str(error))


@pytest.mark.parametrize("open_", [_keep_a_blob, _open_history], ids=["blobs", "history"])
def test_a_new_database_opened_by_many_processes_at_once(
    tmp_path: Path, open_: Callable[[Path], None]
) -> None:
    errors = FORK.SimpleQueue()
    for round_ in range(ROUNDS):
        root = tmp_path / str(round_)
        start = FORK.Barrier(PROCESSES)
        openers = [
            FORK.Process(target=_open_together, args=(open_, root, start, errors))
            for _ in range(PROCESSES)
        ]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join(60)
        assert [opener.exitcode for opener in openers] == [0] * PROCESSES
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert failures == []
