"""The lab's site: everything the probe lab plants for its probes, and its removal.

`LabSite.open()` makes one temporary folder with the canaries the probes look for (a file outside
the workspace, a private dotfile in a fake home), starts a loopback listener that records what
connections send, and puts a canary into a credential-looking variable (`CANARY_ENV`); each
session of probes gets its own folders (`session_folders`: a skill holding a copy of its probes'
skills, a workspace, a folder to write into), so sessions that run at once never see each other's
files; `close()` removes all of it, with any process still carrying the lab's random token.
"""

import asyncio
import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

from workbench.postures.model import PostureId
from workbench.probes.catalogue import PROBE_BY_ID, ProbeId, probe_skills_dir

CANARY_ENV = "WORKBENCH_PROBE_CANARY_TOKEN"
LAB_FOLDER_PREFIX = "workbench-probe-lab-"  # the lab's temporary folder (names its runs' skills)
LISTEN_HOST = "127.0.0.1"  # the only address the lab ever listens on or names
_MAX_CONNECTIONS = 200  # recorded per lab; later ones are closed unread
_READ_TIMEOUT_S = 3.0
_DEFAULT_ROUTE_V4 = "00000000"
_DEFAULT_ROUTE_V6 = "0" * 32
LAB_SKILL = "probe-lab"  # the skill folder of a session, holding every probe skill
LAB_SKILL_MD = (
    f"---\nname: {LAB_SKILL}\ndescription: The sandbox probe lab's experiments for one lab "
    "session, one folder per probe skill. Run them with `workbench probe`.\n---\n"
)


@dataclass(frozen=True, slots=True)
class SessionFolders:
    """One session's folders: its skill folder (every probe skill inside it), workspace and
    the folder outside both that `write-outside` aims at."""

    skill_dir: Path
    workspace: Path
    drop: Path


class LoopbackListener:
    """A TCP listener on 127.0.0.1 that records the first line each connection sends."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        """Listen on a random port of 127.0.0.1."""
        self._server = await asyncio.start_server(self._serve, LISTEN_HOST, 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if len(self.received) < _MAX_CONNECTIONS:
                line = await asyncio.wait_for(reader.readline(), _READ_TIMEOUT_S)
                self.received.append(line[:256].decode("utf-8", errors="replace"))
                writer.write(b"ok\n")
                await writer.drain()
        except (TimeoutError, OSError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def saw(self, token: str) -> bool:
        """True when a connection sent `token`."""
        return any(token in line for line in self.received)

    async def stop(self) -> None:
        """Stop listening (idempotent)."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None


class LabSite:
    """What the lab planted (see the module doc). Use `async with LabSite() as site:`."""

    def __init__(self, parent: Path | None = None) -> None:
        self.token = secrets.token_hex(8)
        self.root = Path(tempfile.mkdtemp(prefix=LAB_FOLDER_PREFIX, dir=parent))
        self.outside = self.root / "outside"
        self.home = self.root / "home"
        self.drop = self.root / "drop"
        self.skills = self.root / "skills"
        self.workspaces = self.root / "workspaces"
        self.listener = LoopbackListener()
        self._saved_env: str | None = None
        self._planted_env = False

    @property
    def canary_file(self) -> Path:
        """The plain canary file outside the workspace."""
        return self.outside / "canary.txt"

    @property
    def dotfile(self) -> Path:
        """The private canary dotfile in the lab's home-like folder."""
        return self.home / ".ssh" / "id_canary"

    async def __aenter__(self) -> "LabSite":
        try:
            await asyncio.to_thread(self._plant_files)
            self._saved_env = os.environ.get(CANARY_ENV)
            os.environ[CANARY_ENV] = self.token
            self._planted_env = True
            await self.listener.start()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _plant_files(self) -> None:
        self.root.chmod(0o755)
        for folder in (self.outside, self.drop, self.skills, self.workspaces):
            folder.mkdir(mode=0o755)
        self.canary_file.write_text(self.token + "\n")
        self.canary_file.chmod(0o644)
        self.dotfile.parent.mkdir(parents=True, mode=0o700)
        self.home.chmod(0o755)
        self.dotfile.write_text(self.token + "\n")
        self.dotfile.chmod(0o600)

    def session_folders(self, name: str, probes: Iterable[ProbeId]) -> SessionFolders:
        """Make the folders of the session `name` that runs `probes` (blocking; see the
        module doc)."""
        folders = SessionFolders(
            self.skills / name / LAB_SKILL, self.workspaces / name, self.drop / name
        )
        folders.skill_dir.mkdir(mode=0o755, parents=True)
        for skill in {PROBE_BY_ID[probe].skill for probe in probes}:
            shutil.copytree(probe_skills_dir() / skill, folders.skill_dir / skill)
        (folders.skill_dir / "SKILL.md").write_text(LAB_SKILL_MD)
        for folder in (folders.skill_dir.parent, folders.skill_dir):
            folder.chmod(0o755)
        folders.workspace.mkdir(mode=0o755)
        folders.drop.mkdir(mode=0o755)
        return folders

    def cell_token(self, posture_id: PostureId, probe: ProbeId) -> str:
        """The token one cell's probe sends or writes: only that run can leave it."""
        return f"{self.token}-{posture_id.value}-{probe.value}"

    def take_written(self, folder: Path, probe: ProbeId, token: str) -> bool:
        """True when `folder` holds the probe's file with `token`; removes the file either way."""
        path = folder / f"probe-{probe.value}.txt"
        try:
            found = path.read_text(encoding="utf-8", errors="replace").strip() == token
        except OSError:
            return False
        with contextlib.suppress(OSError):
            path.unlink()
        return found

    def end_survivors(self, token: str) -> int:
        """Kill the processes whose command line carries `token` (left-behind daemons);
        returns how many there were."""
        found = 0
        for process in psutil.process_iter(["cmdline"]):
            cmdline = process.info["cmdline"] or []
            if any(token in part for part in cmdline):
                found += 1
                with contextlib.suppress(psutil.Error):
                    process.kill()
        return found

    async def close(self) -> None:
        """Remove everything planted (idempotent): env canary, listener, daemons, folder."""
        if self._planted_env:
            if self._saved_env is None:
                os.environ.pop(CANARY_ENV, None)
            else:
                os.environ[CANARY_ENV] = self._saved_env
            self._planted_env = False
        await self.listener.stop()
        await asyncio.to_thread(self._remove)

    def _remove(self) -> None:
        self.end_survivors(self.token)
        shutil.rmtree(self.root, ignore_errors=True)


def host_route_off_machine() -> bool:
    """True when this machine has a default route that is not on the loopback."""
    tables = (
        ("/proc/net/route", 0, 1, _DEFAULT_ROUTE_V4),
        ("/proc/net/ipv6_route", -1, 0, _DEFAULT_ROUTE_V6),
    )
    for path, iface_col, dest_col, default in tables:
        try:
            lines = Path(path).read_text(encoding="ascii", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 2 and fields[dest_col] == default and fields[iface_col] != "lo":
                if path.endswith("ipv6_route") and fields[1] != "00":
                    continue
                return True
    return False
