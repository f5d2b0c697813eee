"""The lab's site: what it plants, the loopback listener, and that it removes everything."""

import asyncio
import contextlib
import os
import stat
import sys
from pathlib import Path

import psutil
import pytest

from workbench.postures.model import PostureId
from workbench.probes.catalogue import ProbeId
from workbench.probes.site import CANARY_ENV, LabSite
from workbench.skills import Skill, load_skill
from workbench.skills.diagnostics import Diagnostic, DiagnosticSeverity


def mode(path: Path) -> int:
    """The permission bits of `path`."""
    return stat.S_IMODE(path.stat().st_mode)


def errors(skill: Skill) -> list[Diagnostic]:
    """The skill's error diagnostics."""
    return [d for d in skill.diagnostics if d.severity is DiagnosticSeverity.ERROR]


def test_the_site_plants_its_canaries_and_removes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CANARY_ENV, "the user's own value")

    async def scenario() -> LabSite:
        async with LabSite(tmp_path) as site:
            assert os.environ[CANARY_ENV] == site.token
            assert site.canary_file.read_text() == site.token + "\n"
            assert (mode(site.canary_file), mode(site.dotfile)) == (0o644, 0o600)
            assert (mode(site.dotfile.parent), mode(site.root)) == (0o700, 0o755)
            assert site.drop.is_dir()
            return site

    site = asyncio.run(scenario())
    assert not site.root.exists()
    assert list(tmp_path.iterdir()) == []
    assert os.environ[CANARY_ENV] == "the user's own value"


def test_the_site_is_removed_when_the_lab_fails(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with LabSite(tmp_path):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        asyncio.run(scenario())
    assert list(tmp_path.iterdir()) == []
    assert CANARY_ENV not in os.environ


def test_the_listener_records_tokens_on_loopback_and_replies(tmp_path: Path) -> None:
    async def scenario() -> tuple[bytes, bool, bool]:
        async with LabSite(tmp_path) as site:
            reader, writer = await asyncio.open_connection("127.0.0.1", site.listener.port)
            writer.write(b"tok-123\n")
            reply = await reader.readline()
            writer.close()
            await writer.wait_closed()
            return reply, site.listener.saw("tok-123"), site.listener.saw("other")

    assert asyncio.run(scenario()) == (b"ok\n", True, False)


def test_take_written_checks_the_token_and_removes_the_file(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with LabSite(tmp_path) as site:
            written = site.drop / "probe-write-outside.txt"
            written.write_text("wrong\n")
            assert not site.take_written(site.drop, ProbeId.WRITE_OUTSIDE, "tok")
            assert not written.exists()
            written.write_text("tok\n")
            assert site.take_written(site.drop, ProbeId.WRITE_OUTSIDE, "tok")
            assert not site.take_written(site.drop, ProbeId.WRITE_OUTSIDE, "tok")

    asyncio.run(scenario())


def test_cell_tokens_are_per_cell_and_folders_per_session(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with LabSite(tmp_path) as site:
            tokens = {
                site.cell_token(posture_id, probe)
                for posture_id in (PostureId.LOCAL, PostureId.HARDENED)
                for probe in (ProbeId.LOOPBACK, ProbeId.DAEMON)
            }
            assert len(tokens) == 4
            assert all(site.token in token for token in tokens)
            one = site.session_folders("one", [ProbeId.FORK, ProbeId.DAEMON])
            two = site.session_folders("two", [ProbeId.FORK])
            assert not (two.skill_dir / "probe-daemon").exists()  # only its probes' skills
            for folders in (one, two):
                assert folders.workspace.parent == site.workspaces
                assert folders.drop.parent == site.drop
                skill = load_skill(folders.skill_dir)
                assert skill.name == "probe-lab" and not errors(skill)
                assert (folders.skill_dir / "probe-fork" / "scripts" / "probe.sh").is_file()
                assert mode(folders.skill_dir) == mode(folders.workspace) == 0o755
            assert {one.skill_dir, one.workspace, one.drop}.isdisjoint(
                {two.skill_dir, two.workspace, two.drop}
            )

    asyncio.run(scenario())


async def exec_done(pid: int, token: str) -> None:
    """Wait until process `pid` shows `token` in its command line (it has exec'd)."""
    for _ in range(500):
        with contextlib.suppress(psutil.Error):
            if token in psutil.Process(pid).cmdline():
                return
        await asyncio.sleep(0.02)
    raise AssertionError(f"process {pid} never showed its token")


def test_a_process_carrying_the_token_is_found_and_killed(tmp_path: Path) -> None:
    async def scenario() -> int:
        async with LabSite(tmp_path) as site:
            token = site.cell_token(PostureId.LOCAL, ProbeId.DAEMON)
            # One process, no children: a shell's child briefly shows the token while it forks.
            sleeper = ("-c", "import time; time.sleep(30)", token)
            daemon = await asyncio.create_subprocess_exec(sys.executable, *sleeper)
            try:
                await exec_done(daemon.pid, token)
                found = site.end_survivors(token)
                await asyncio.wait_for(daemon.wait(), 10)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    daemon.kill()
                await daemon.wait()
            assert site.end_survivors(token) == 0
            return found

    assert asyncio.run(scenario()) == 1
