"""The desktop launcher entry and the app icons in the user's XDG folders (headless, no Qt).

`desktop_entry()` is the one source of the freedesktop entry (the static copy in
`packaging/linux/` is this text with `Exec=workbench gui`, checked by a test). `install()` writes
the entry to `$XDG_DATA_HOME/applications/` and the bundled hicolor icons to
`$XDG_DATA_HOME/icons/hicolor/`, with `Exec=` naming the installed `workbench` command by its
absolute path; `uninstall()` deletes exactly those files and nothing else.
"""

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import platformdirs

from workbench.errors import WorkbenchError
from workbench.platform.paths import APP_NAME, resources_dir

APP_ID = "io.github.skillworkbench.SkillWorkbench"
ICON_SIZES = (48, 128, 256, 512)

_ENTRY = """\
[Desktop Entry]
Type=Application
Name=Skill Workbench
GenericName=Agent Skill Workbench
Comment=Browse agent skills, run them under a chosen sandbox posture, and watch what they do
Icon={app_id}
TryExec={try_exec}
Exec={exec_line}
Terminal=false
Categories=Development;Debugger;
Keywords=agent;skill;sandbox;docker;gvisor;quickjs;
StartupNotify=true
StartupWMClass={wm_class}
"""

# Characters that need no quoting in an Exec argument (Desktop Entry spec, "The Exec key").
_PLAIN_ARGUMENT = re.compile(r"[A-Za-z0-9_./+,:@=-]+")


def desktop_entry(command: str) -> str:
    """The desktop entry that opens the GUI by running `command gui`."""
    argument = command if _PLAIN_ARGUMENT.fullmatch(command) else _quote(command)
    # The value itself is a string: its backslashes are escaped once more, and % is literal.
    value = argument.replace("\\", "\\\\").replace("%", "%%")
    try_exec = command.replace("\\", "\\\\")
    return _ENTRY.format(
        app_id=APP_ID, try_exec=try_exec, exec_line=f"{value} gui", wm_class=APP_NAME
    )


def data_home() -> Path:
    """`$XDG_DATA_HOME`, or `~/.local/share` when it is unset."""
    return Path(platformdirs.user_data_dir())


def installed_command() -> Path:
    """The absolute path of the `workbench` command that is running (or of this install's)."""
    if getattr(sys, "frozen", False):
        return Path(sys.executable).absolute()
    launched = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if launched is not None and launched.name == "workbench" and launched.is_file():
        return launched.absolute()
    beside = Path(sys.executable).parent / "workbench"
    if beside.is_file():
        return beside.absolute()
    found = shutil.which("workbench")
    if found is None:
        raise WorkbenchError(
            "Cannot find the installed `workbench` command to put in the launcher entry: "
            "install the package (e.g. with pipx) and run `workbench --install-desktop-entry`."
        )
    return Path(found).absolute()


def entry_targets(home: Path) -> list[Path]:
    """Every file `install()` writes under the data folder `home`, entry first."""
    icons = home / "icons" / "hicolor"
    return [
        home / "applications" / f"{APP_ID}.desktop",
        icons / "scalable" / "apps" / f"{APP_ID}.svg",
        *(icons / f"{size}x{size}" / "apps" / f"{APP_ID}.png" for size in ICON_SIZES),
    ]


def install(command: Path, home: Path) -> list[Path]:
    """Write the entry (running `command`) and the icons under `home`; returns what it wrote."""
    _require_linux()
    entry, *icons = entry_targets(home)
    bundled = resources_dir() / "icons" / "hicolor"
    written = []
    for target in icons:
        source = bundled / target.relative_to(home / "icons" / "hicolor")
        try:
            data = source.read_bytes()
        except OSError as error:
            message = f"This install lacks its icon {source}: {error.strerror}."
            raise WorkbenchError(message) from None
        _write(target, data)
        written.append(target)
    _write(entry, desktop_entry(str(command)).encode())
    written.append(entry)
    return written


def uninstall(home: Path) -> list[Path]:
    """Delete the files `install()` writes under `home`; returns those that were there."""
    removed = []
    for target in entry_targets(home):
        try:
            target.unlink()
        except FileNotFoundError:
            continue
        except OSError as error:
            raise WorkbenchError(f"Could not remove {target}: {error.strerror}.") from None
        removed.append(target)
    return removed


def _quote(argument: str) -> str:
    """An Exec argument in double quotes, with `"`, backquote, `$` and backslash escaped."""
    return '"' + re.sub(r'(["`$\\])', r"\\\1", argument) + '"'


def _write(target: Path, data: bytes) -> None:
    """Replace `target` with `data` in one step (a reader never sees half a file)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        temporary = Path(name)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            temporary.chmod(0o644)
            temporary.replace(target)
        except OSError:
            temporary.unlink(missing_ok=True)
            raise
    except OSError as error:
        raise WorkbenchError(f"Could not write {target}: {error.strerror}.") from None


def _require_linux() -> None:
    if not sys.platform.startswith("linux"):
        raise WorkbenchError("Desktop entries are a Linux (freedesktop.org) feature.")
