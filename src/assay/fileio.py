"""Atomic file writes: a reader never sees half a report."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from assay.errors import UsageError


def write_atomic(path: str | Path, text: str | bytes | Iterable[bytes]) -> None:
    """Write ``text`` (or chunks of bytes) to ``path`` via a temporary file and a rename."""
    pieces: Iterable[bytes] = (
        [text.encode("utf-8")]
        if isinstance(text, str)
        else [text]
        if isinstance(text, bytes)
        else text
    )
    path = Path(path)
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
