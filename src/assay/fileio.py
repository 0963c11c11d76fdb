"""Atomic file writes: a reader never sees half a report."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from assay.errors import UsageError


def write_atomic(path: str | Path, text: str | bytes) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and a rename."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
