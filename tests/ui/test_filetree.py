"""The file preview: capped, binary and special files as placeholders, links never followed."""

import os
from pathlib import Path

from workbench.ui.skills.files import PREVIEW_LIMIT, read_preview


def test_text_is_shown_and_capped(tmp_path: Path) -> None:
    (tmp_path / "small.txt").write_text("hello <b>x</b>\n", encoding="utf-8")
    assert read_preview(tmp_path, Path("small.txt")) == "hello <b>x</b>\n"
    (tmp_path / "big.txt").write_text("a" * (PREVIEW_LIMIT * 2), encoding="utf-8")
    text = read_preview(tmp_path, Path("big.txt"))
    assert text.startswith("a" * PREVIEW_LIMIT)
    assert "preview stops at 64.0 KiB of 128.0 KiB" in text


def test_binary_fifo_and_links_are_placeholders(tmp_path: Path) -> None:
    (tmp_path / "image.png").write_bytes(b"\x89PNG\0\0\0" * 10)
    assert read_preview(tmp_path, Path("image.png")).startswith("[binary file")
    os.mkfifo(tmp_path / "pipe")
    assert read_preview(tmp_path, Path("pipe")) == "[not a regular file — not shown]"
    (tmp_path / "link").symlink_to("/etc/hostname")
    assert read_preview(tmp_path, Path("link")) == "[symbolic link to /etc/hostname — not followed]"
    assert read_preview(tmp_path, Path("missing")).startswith("[cannot read this file")
