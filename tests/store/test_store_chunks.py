"""Clean executions stored a chunk to a row read back exactly as executions stored a row each:
the same rows in the same (position, repetition) order, the same resume keys and counts."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from assay.store.runs import RunStore

from .test_store import new_run, result

Key = tuple[str, int, int]  # sample id, repetition, position


def row_of(key: Key) -> bytes:
    return f'{{"id":"{key[0]}","repetition":{key[1]},"note":"a\\nb {key[2]}"}}'.encode()


def plan(samples: int, repetitions: int) -> list[Key]:
    return [(f"s{p}", r, p) for p in range(samples) for r in range(repetitions)]


def write(store: RunStore, keys: list[Key], chunked: bool, chunk: int) -> None:
    """``keys`` in order: runs of ``chunk`` clean executions through record_clean (with an
    answer kept when ``chunked`` is False, which stores them a row each), every fifth key
    instead an execution with an error, stored a row each."""
    pending: list[Key] = []

    def flush_clean() -> None:
        if pending:
            store.record_clean(
                "r",
                [k[0] for k in pending],
                [k[1] for k in pending],
                positions=[k[2] for k in pending],
                tags=[["t"] if k[2] % 2 else [] for k in pending],
                row_hashes=[f"h{k[2]}" for k in pending],
                rows=[row_of(k) for k in pending],
                outputs=[None if chunked else {"output": "x"} for _ in pending],
            )
            pending.clear()

    for index, key in enumerate(keys):
        if index % 5 == 4:
            flush_clean()
            failed = result(key[0], key[1], error="boom")
            store.record("r", failed, None, position=key[2], tags=[], row_hash=f"h{key[2]}")
            continue
        pending.append(key)
        if len(pending) == chunk:
            flush_clean()
    flush_clean()


def read(path: Path) -> tuple[list[tuple[object, ...]], set[tuple[str, int]], int, int, int]:
    """Everything a reader sees of run "r": rows in order, resume keys (all, and clean only),
    the run's execution and error counts."""
    store = RunStore(path, read_only=True)
    try:
        record = store.get_run("r")
        rows = [tuple(row) for row in store.iter_stored("r")]
        clean_keys = store.done_keys("r", include_errored=False)
        return rows, store.done_keys("r"), len(clean_keys), record.executions, record.errored
    finally:
        store.db.close()


@pytest.mark.parametrize("seed", range(6))
def test_chunks_read_back_as_rows_stored_one_by_one(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    keys = plan(rng.randint(1, 40), rng.randint(1, 3))
    chunk = rng.randint(1, 9)
    seen = []
    for chunked in (False, True):
        path = tmp_path / f"{chunked}.db"
        store = RunStore(path, commit_interval_s=rng.choice([0, 3600]))
        new_run(store)
        write(store, keys, chunked, chunk)
        store.close()
        seen.append(read(path))
    assert seen[0] == seen[1]
    rows = seen[1][0]
    assert [(row[0], row[1]) for row in rows] == [(k[0], k[1]) for k in keys]
    assert chunk_count(tmp_path / "True.db") >= 1  # the chunk rows are really there


def test_a_resumed_session_stores_rows_one_by_one_around_its_chunks(tmp_path: Path) -> None:
    """A second store object (a resumed run) fills gaps between the first one's chunks with
    rows of its own; the reader merges them in dataset order."""
    path = tmp_path / "runs.db"
    first = RunStore(path, commit_interval_s=0)
    new_run(first)
    keys = plan(12, 2)
    gaps = {key for index, key in enumerate(keys) if index % 5 == 4}
    write(first, [k for k in keys if k not in gaps], True, 4)
    first.close()
    chunks = chunk_count(path)
    resumed = RunStore(path, commit_interval_s=0)
    assert len(resumed.done_keys("r")) == len(keys) - len(gaps)
    write(resumed, sorted(gaps, key=lambda k: (k[2], k[1])), True, 3)
    resumed.close()
    rows, done, _, executions, _ = read(path)
    assert [(row[0], row[1]) for row in rows] == [(k[0], k[1]) for k in keys]
    assert done == {(k[0], k[1]) for k in keys} and executions == len(keys)
    assert chunk_count(path) == chunks  # the resumed session wrote rows, no chunk


def chunk_count(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])


def test_a_v1_store_without_the_chunks_table_reads_as_before(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = RunStore(path)
    new_run(store)
    store.record("r", result("a"), None, position=0, tags=["t"], row_hash="h")
    store.close()
    with sqlite3.connect(path) as db:  # as assay wrote stores before the chunks table
        db.execute("DROP TABLE chunks")
        db.execute("UPDATE meta SET value = 'assay.store.v1' WHERE key = 'schema_version'")
    rows, done, _, executions, errored = read(path)
    assert [row[:4] for row in rows] == [("a", 0, b'["t"]', "h")]
    assert done == {("a", 0)} and (executions, errored) == (1, 0)


def test_a_row_with_a_raw_line_break_is_refused_not_split(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    new_run(store)
    with pytest.raises(ValueError, match="line break"):
        store.record_clean(
            "r",
            ["a"],
            [0],
            positions=[0],
            tags=[[]],
            row_hashes=["h"],
            rows=[b'{"id":"a",\n"x":1}'],
            outputs=[None],
        )
    store.close()


@pytest.mark.parametrize("seed", range(4))
def test_a_run_stored_only_in_chunks_reads_its_rows_without_the_merge(
    tmp_path: Path, seed: int
) -> None:
    """``chunked_rows`` gives what ``iter_stored`` gives as rows, in the same order; a run
    with any execution stored a row of its own gets None (the merge is needed)."""
    rng = random.Random(seed)
    keys = plan(rng.randint(1, 40), rng.randint(1, 3))
    store = RunStore(tmp_path / "runs.db", commit_interval_s=rng.choice([0, 3600]))
    new_run(store)
    size = rng.randint(1, 9)
    for first in range(0, len(keys), size):
        part = keys[first : first + size]
        store.record_clean(
            "r",
            [k[0] for k in part],
            [k[1] for k in part],
            positions=[k[2] for k in part],
            tags=[[] for _ in part],
            row_hashes=[f"h{k[2]}" for k in part],
            rows=[row_of(k) for k in part],
            outputs=[None for _ in part],
        )
    chunked = store.chunked_rows("r")
    assert chunked is not None
    assert list(chunked) == [row[4] for row in store.iter_stored("r")]
    assert len([row[4] for row in store.iter_stored("r")]) == len(keys)
    store.record("r", result("late", 0, error="boom"), None, position=99, tags=[], row_hash="h")
    assert store.chunked_rows("r") is None
    store.close()
