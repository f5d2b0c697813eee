"""Rows of the workspace: snapshot + diff of a 10k (and 50k) file tree against `git status`.

The tree holds files of 64-2048 random bytes, 100 per folder. git keeps its repository
outside the tree (so neither side sees it), takes the tree as its base commit, and after the
change (10 files modified, 5 added, 5 removed) both sides must report the same 20 changes
before anything is timed. Ours is what a run costs once it ends: `take_snapshot` against the
"before" snapshot (only changed files are hashed) and `diff_snapshots`.
"""

import asyncio
import os
import random
import subprocess
import time
from pathlib import Path

from workbench.bench.rows import BenchContext, Goal, Group, Need, Outcome, RowSpec, run_quiet
from workbench.bench.stats import Case, interleave, timed_call
from workbench.workspace.diff import diff_snapshots
from workbench.workspace.snapshot import RACY_NS, Snapshot, take_snapshot

PER_FOLDER = 100
CHANGED = 20  # 10 modified, 5 added, 5 removed
GIT_STATUS = ("git", "status", "--porcelain", "-uall")


def _tree_row(files: int, max_ratio: float) -> RowSpec:
    return RowSpec(
        f"workspace-{files // 1000}k",
        f"workspace snapshot + diff, {files // 1000}k files",
        "take_snapshot(previous) + diff_snapshots",
        "git status --porcelain -uall",
        Goal(f"<= {max_ratio:g}x", max_ratio=max_ratio),
    )


TREE_10K = _tree_row(10_000, 2.0)
TREE_50K = _tree_row(50_000, 3.0)


def make_tree(root: Path, files: int, rnd: random.Random) -> None:
    """`files` files of 64-2048 random bytes under `root`, `PER_FOLDER` per folder."""
    for index in range(files):
        folder = root / f"d{index // PER_FOLDER:04d}"
        if index % PER_FOLDER == 0:
            folder.mkdir(parents=True)
        (folder / f"f{index:06d}.bin").write_bytes(os.urandom(rnd.randint(64, 2048)))


def change_tree(root: Path, files: int, rnd: random.Random) -> None:
    """Modify 10 files, add 5 and remove 5 (20 changes in all)."""
    picked = rnd.sample(range(files), 15)
    for index in picked[:10]:
        path = root / f"d{index // PER_FOLDER:04d}" / f"f{index:06d}.bin"
        path.write_bytes(path.read_bytes() + b"changed")
    for index in picked[10:]:
        (root / f"d{index // PER_FOLDER:04d}" / f"f{index:06d}.bin").unlink()
    for number in range(5):
        (root / "d0000" / f"new{number}.txt").write_text("new\n")


def _git_env(work_tree: Path, git_dir: Path) -> dict[str, str]:
    """git with its repository outside the tree and a fixed identity for the base commit.

    Automatic `git gc` is off: started by the big base commit, it would run in the background
    while the rows are timed, and hold files in the repository when the bench removes it.
    """
    identity = {
        f"GIT_{who}_{what}": value
        for who in ("AUTHOR", "COMMITTER")
        for what, value in (("NAME", "bench"), ("EMAIL", "bench@localhost"))
    }
    no_gc = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "gc.auto", "GIT_CONFIG_VALUE_0": "0"}
    return {
        **os.environ,
        "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(work_tree),
        **identity,
        **no_gc,
    }


async def measure_tree(context: BenchContext, files: int) -> Outcome:
    """Build the tree, check both sides see the same change, then time them interleaved."""
    tree = context.scratch / f"tree-{files}" / "tree"
    env, before = await asyncio.to_thread(_changed_tree, tree, files)
    cases = [
        Case("ours", timed_call(lambda: snapshot_diff(tree, before))),
        Case("floor", timed_call(lambda: run_quiet(GIT_STATUS, env=env, cwd=tree))),
    ]
    stats = await interleave(cases, context.rounds(9, 5))
    return Outcome(stats["ours"], stats["floor"], note=f"{files} files, {CHANGED} changed")


def _changed_tree(tree: Path, files: int) -> tuple[dict[str, str], Snapshot]:
    """Make `tree` with `files` files, commit it to git (the repository beside it) and take
    the workbench's snapshot, then change `CHANGED` of them; git's environment and the
    snapshot. `RuntimeError` unless both sides see the same changes."""
    rnd = random.Random(files)
    make_tree(tree, files, rnd)
    env = _git_env(tree, tree.parent / "git")
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        run_quiet(["git", *step], env=env, cwd=tree)
    time.sleep(2 * RACY_NS / 1e9)  # past the window where a snapshot re-hashes fresh files
    before = take_snapshot(tree)
    change_tree(tree, files, rnd)
    seen_by_git = subprocess.run(
        GIT_STATUS, env=env, cwd=tree, capture_output=True, check=True
    ).stdout.splitlines()
    seen_by_us = snapshot_diff(tree, before)
    if len(seen_by_git) != CHANGED or seen_by_us != CHANGED:
        raise RuntimeError(
            f"expected {CHANGED} changes; git saw {len(seen_by_git)}, the workbench {seen_by_us}"
        )
    return env, before


def snapshot_diff(tree: Path, before: Snapshot) -> int:
    """What a finished run costs: snapshot against `before`, diff; returns the change count."""
    return len(diff_snapshots(before, take_snapshot(tree, previous=before)))


async def workspace_rows(
    context: BenchContext, wanted: frozenset[str], outcomes: dict[str, Outcome]
) -> None:
    """The 10k row, and the 50k row unless --quick."""
    if TREE_10K.id in wanted:
        outcomes[TREE_10K.id] = await measure_tree(context, 10_000)
    if TREE_50K.id in wanted:
        outcomes[TREE_50K.id] = (
            Outcome(skipped="--quick leaves out the 50k-file tree")
            if context.quick
            else await measure_tree(context, 50_000)
        )


GROUPS = (Group("workspace", (TREE_10K, TREE_50K), workspace_rows, needs=(Need.GIT,)),)
