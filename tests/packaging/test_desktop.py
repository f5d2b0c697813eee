"""The launcher entry and icons: the packaged Linux files, and installing and removing them."""

import os
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from workbench import __version__
from workbench.cli import main
from workbench.platform import desktop_entry
from workbench.platform.paths import resources_dir

LINUX = Path(__file__).parents[2] / "packaging" / "linux"
ENTRY = LINUX / f"{desktop_entry.APP_ID}.desktop"
METAINFO = LINUX / f"{desktop_entry.APP_ID}.metainfo.xml"
HICOLOR = resources_dir() / "icons" / "hicolor"


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def require_tool(name: str) -> str:
    """The tool's path; without it the test skips, except in CI where it fails."""
    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {name} is missing (.ci/run installs it)")
        pytest.skip(f"{name} is not installed")
    return found


def test_packaged_entry_is_the_generated_entry_for_a_command_on_the_path() -> None:
    assert ENTRY.read_text(encoding="utf-8") == desktop_entry.desktop_entry("workbench")


def test_packaged_entry_validates() -> None:
    tool = require_tool("desktop-file-validate")
    done = subprocess.run([tool, str(ENTRY)], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def test_metainfo_validates_offline() -> None:
    tool = require_tool("appstreamcli")
    done = subprocess.run(
        [tool, "validate", "--no-net", str(METAINFO)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_metainfo_names_the_one_app_id_and_this_version() -> None:
    root = ET.parse(METAINFO).getroot()
    assert root.findtext("id") == desktop_entry.APP_ID
    assert root.findtext("launchable") == ENTRY.name
    assert root.findtext("metadata_license") == "CC0-1.0"
    assert root.findtext("project_license") == "MIT"
    assert root.find("content_rating[@type='oars-1.1']") is not None
    assert root.find("screenshots/screenshot/image") is not None
    release = root.find("releases/release")
    assert release is not None and release.get("version") == __version__


def test_icons_exist_at_every_size() -> None:
    svg = HICOLOR / "scalable" / "apps" / f"{desktop_entry.APP_ID}.svg"
    assert svg.read_text(encoding="utf-8").startswith("<svg")
    # The window icon is the same drawing.
    assert (resources_dir() / "icons" / "workbench.svg").read_bytes() == svg.read_bytes()
    for size in desktop_entry.ICON_SIZES:
        png = HICOLOR / f"{size}x{size}" / "apps" / f"{desktop_entry.APP_ID}.png"
        assert png_size(png) == (size, size)
    assert (LINUX / "icons").resolve() == HICOLOR.resolve()


def test_install_writes_entry_and_icons_into_the_xdg_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    assert main(["--install-desktop-entry"]) == 0
    out = capsys.readouterr().out
    written = desktop_entry.entry_targets(home)
    for path in written:
        assert path.is_file()
        assert f"wrote {path}\n" in out
    assert sorted(p for p in home.rglob("*") if p.is_file()) == sorted(written)
    entry = (home / "applications" / f"{desktop_entry.APP_ID}.desktop").read_text(encoding="utf-8")
    command = desktop_entry.installed_command()
    assert command.is_absolute() and command.name == "workbench" and command.is_file()
    assert f"\nExec={command} gui\n" in entry
    assert f"\nIcon={desktop_entry.APP_ID}\n" in entry
    png = home / "icons" / "hicolor" / "48x48" / "apps" / f"{desktop_entry.APP_ID}.png"
    assert png.read_bytes() == (HICOLOR / "48x48" / "apps" / png.name).read_bytes()


def test_uninstall_removes_exactly_what_install_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    other = home / "applications" / "other.desktop"
    other.parent.mkdir(parents=True)
    other.write_text("[Desktop Entry]\n")
    assert main(["--install-desktop-entry"]) == 0
    capsys.readouterr()
    assert main(["--uninstall-desktop-entry"]) == 0
    out = capsys.readouterr().out
    assert out.count("removed ") == len(desktop_entry.entry_targets(home))
    assert [p for p in home.rglob("*") if p.is_file()] == [other]
    assert main(["--uninstall-desktop-entry"]) == 0
    assert "nothing to remove" in capsys.readouterr().out


def test_the_two_flags_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--install-desktop-entry", "--uninstall-desktop-entry"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_an_awkward_command_path_is_quoted_for_the_exec_key(tmp_path: Path) -> None:
    command = '/opt/my apps/$HOME/"w"\\bench/workbench'
    entry = desktop_entry.desktop_entry(command)
    # Desktop Entry spec: quote the argument, escape " ` $ \ inside, then escape \ in the value.
    assert '\nExec="/opt/my apps/\\\\$HOME/\\\\"w\\\\"\\\\\\\\bench/workbench" gui\n' in entry
    path = tmp_path / "awkward.desktop"
    path.write_text(entry)
    if shutil.which("desktop-file-validate"):
        done = subprocess.run(
            ["desktop-file-validate", str(path)], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0 and not done.stdout.strip(), done.stdout
