"""Atomic file writes (a reader never sees half a report), and path checks that never raise."""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

from assay.errors import UsageError


def write_atomic(path: str | Path, text: str | bytes | Iterable[bytes]) -> None:
    """Write ``text`` (or chunks of bytes) to ``path`` via a temporary file and a rename.

    A symbolic link keeps pointing where it did: the file it names is replaced. A path that is
    not a regular file (``/dev/null``, ``/dev/stdout``, a pipe) is written to as it is, never
    replaced by a file. The file gets the mode ``open(path, "w")`` would give it (0666 less the
    umask), or keeps the mode of the regular file it replaces.
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
    try:
        path = Path(os.path.realpath(path)) if path.is_symlink() else path
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = _mode_kept(path)
        fd, tmp = _temporary(path)
        try:
            with os.fdopen(fd, "wb") as handle:
                if kept is not None:
                    os.chmod(tmp, kept)
                for piece in pieces:
                    handle.write(piece)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _mode_kept(path: Path) -> int | None:
    """The permission bits of the regular file at ``path`` that a write replaces; None when
    there is none (the new file then gets 0666 less the umask, as ``open`` gives)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


def _temporary(path: Path) -> tuple[int, str]:
    """A new file beside ``path``, open for writing, created with mode 0666 that the umask
    trims as for ``open`` (``mkstemp`` made every report 0600)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):  # a clash of 48 random bits is all but impossible; a few are retried
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


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


def is_file(path: Path) -> bool:
    """``path.is_file()``, False where the system refuses the name itself: Python 3.11 raises
    OSError (ENAMETOOLONG) for a name over 255 bytes; the read that follows names the file."""
    try:
        return path.is_file()
    except OSError:
        return False


def is_dir(path: Path) -> bool:
    """``path.is_dir()``, False where the system refuses the name (as :func:`is_file`)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def exists(path: Path) -> bool:
    """``path.exists()``, False where the system refuses the name (as :func:`is_file`)."""
    try:
        return path.exists()
    except OSError:
        return False
