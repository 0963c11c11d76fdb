"""Atomic report writes: a regular file is replaced whole; a link or a special file is not."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from assay.data.fileio import write_atomic


def test_a_regular_file_is_replaced_whole(tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    target.write_text("old, and longer than the new text", encoding="utf-8")
    write_atomic(target, [b"new", b" text"])
    assert target.read_bytes() == b"new text"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temporary file left


def test_a_link_keeps_pointing_at_its_file(tmp_path: Path) -> None:
    real, link = tmp_path / "real.md", tmp_path / "link.md"
    real.write_text("old", encoding="utf-8")
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text(encoding="utf-8") == "new"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_is_written_through_not_replaced(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()), daemon=True)
    reader.start()
    write_atomic(pipe, "through the pipe")
    reader.join(10)
    assert received == [b"through the pipe"]
    assert not pipe.is_file() and pipe.exists()  # still the pipe, not a file in its place


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_a_new_file_gets_the_mode_open_gives_and_a_replaced_file_keeps_its_own(
    tmp_path: Path, umask: int
) -> None:
    """Before, every report came out 0600 (mkstemp's mode), whatever the umask or old file."""
    previous = os.umask(umask)
    try:
        plain = tmp_path / "plain.md"
        with open(plain, "w", encoding="utf-8"):  # what a normal write would give
            pass
        write_atomic(tmp_path / "new.md", "text")
        assert os.stat(tmp_path / "new.md").st_mode & 0o7777 == 0o666 & ~umask
        assert os.stat(tmp_path / "new.md").st_mode & 0o7777 == os.stat(plain).st_mode & 0o7777
        for mode in (0o640, 0o604, 0o755):
            os.chmod(tmp_path / "new.md", mode)
            write_atomic(tmp_path / "new.md", "again")
            assert os.stat(tmp_path / "new.md").st_mode & 0o7777 == mode
        link = tmp_path / "link.md"
        link.symlink_to(tmp_path / "new.md")
        write_atomic(link, "through the link")
        assert os.stat(tmp_path / "new.md").st_mode & 0o7777 == 0o755
    finally:
        os.umask(previous)
