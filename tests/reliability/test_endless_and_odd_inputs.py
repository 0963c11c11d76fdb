"""Hostile inputs found by a black-box sweep of the CLI: each ends as a typed error (exit 2
with one line) or a recorded failure, never a hang, a traceback or a silent wrong answer."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from assay import documents
from assay.errors import DatasetError, TezError
from assay.tez.addendum import load_previous


def _feed(fifo: Path, size: int) -> threading.Thread:
    """A writer that pushes ``size`` bytes into ``fifo`` (a reader that stops early is fine)."""

    def write() -> None:
        try:
            with fifo.open("wb") as handle:
                handle.write(b"x" * size)
        except BrokenPipeError:
            pass

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_past_the_size_cap_is_refused_without_reading_it_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pipe (or ``/dev/zero``) has no size to check first: before, ``assay validate
    /dev/zero`` read until memory ran out. Now the read stops one byte past the cap."""
    monkeypatch.setattr(documents, "MAX_DATASET_BYTES", 1000)
    fifo = tmp_path / "d.json"
    os.mkfifo(fifo)
    writer = _feed(fifo, 5000)
    with pytest.raises(DatasetError, match="file is over the limit of 1000 bytes"):
        documents.read_text(fifo)
    writer.join(5)
    writer = _feed(fifo, 5000)
    with pytest.raises(TezError, match="file is over the limit of 1000 bytes"):
        load_previous(fifo)
    writer.join(5)
