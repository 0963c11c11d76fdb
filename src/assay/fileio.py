"""Atomic file writes: a reader never sees half a report."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from assay.errors import UsageError


def write_atomic(path: str | Path, text: str | bytes | Iterable[bytes]) -> None:
    """Write ``text`` (or chunks of bytes) to ``path`` via a temporary file and a rename.

    A symbolic link keeps pointing where it did: the file it names is replaced. A path that is
    not a regular file (``/dev/null``, ``/dev/stdout``, a pipe) is written to as it is, never
    replaced by a file.
    """
    pieces: Iterable[bytes] = (
        [text.encode("utf-8")]
        if isinstance(text, str)
        else [text]
        if isinstance(text, bytes)
        else text
    )
    path = Path(path)
    if _special(path):
        _write_through(path, pieces)
        return
    path = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                for piece in pieces:
                    handle.write(piece)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _special(path: Path) -> bool:
    """Whether ``path`` (its link followed) exists and is not a regular file."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:  # missing (or unreadable): the usual write reports what is wrong
        return False


def _write_through(path: Path, pieces: Iterable[bytes]) -> None:
    """Write to a device, pipe or other special file in place."""
    try:
        with path.open("wb") as handle:
            for piece in pieces:
                handle.write(piece)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
