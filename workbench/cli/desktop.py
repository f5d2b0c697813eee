"""`workbench --install-desktop-entry` and `--uninstall-desktop-entry`: the launcher entry."""

import argparse
from collections.abc import Callable, Sequence
from typing import Any


def register_flags(parser: argparse.ArgumentParser) -> None:
    """Add the two flags to the root parser; each picks its handler."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--install-desktop-entry",
        action=_PickHandler,
        handler=_install,
        help="add a launcher entry and the icons to your desktop's menu (your XDG data folder)",
    )
    group.add_argument(
        "--uninstall-desktop-entry",
        action=_PickHandler,
        handler=_uninstall,
        help="remove what --install-desktop-entry added",
    )


class _PickHandler(argparse.Action):
    """A flag that takes no value and makes `handler` the command's handler."""

    def __init__(self, *, handler: Callable[[argparse.Namespace], int], **kwargs: Any) -> None:
        super().__init__(nargs=0, **kwargs)
        self._handler = handler

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        namespace.handler = self._handler


def _install(args: argparse.Namespace) -> int:
    # Here, not at the top: every command loads this module.
    from workbench.platform import desktop_entry

    del args
    command = desktop_entry.installed_command()
    for path in desktop_entry.install(command, desktop_entry.data_home()):
        print(f"wrote {path}")
    print(f"The launcher entry runs {command} gui.")
    return 0


def _uninstall(args: argparse.Namespace) -> int:
    from workbench.platform import desktop_entry

    del args
    removed = desktop_entry.uninstall(desktop_entry.data_home())
    for path in removed:
        print(f"removed {path}")
    if not removed:
        print("No launcher entry or icons were installed; nothing to remove.")
    return 0
