"""Clean executions kept a chunk to a row: the run store's table ``chunks``.

A saved-outputs run scores its executions a chunk at a time; a chunk with no error, no provider
usage and no answer to keep (see :class:`~assay.data.executions.ResultChunk`) is stored as one row:
its executions' keys as columns in one JSON document, and their report rows, already encoded,
joined by newlines (a JSON text has none of its own: JSON escapes them inside strings). One
SQLite row per chunk instead of one per execution costs about a quarter of the CPU.

Chunks are written only by the session that created the run, in dataset order, so they never
overlap: reading them in order gives their executions in (position, repetition) order, ready
to merge with the executions stored a row each. A resumed session stores a row per execution
(it may fill gaps between chunks); a chunk's executions are clean, so no later session redoes
them.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

from assay.store.schema import decode_json, encode_json

INSERT_CHUNK: Final = "INSERT OR REPLACE INTO chunks VALUES (?, ?, ?, ?, ?, ?)"
ROW_BREAK: Final = b"\n"

# (position, repetition, (sample id, repetition, tags JSON, row hash, row JSON)): what
# RunStore.iter_stored yields, behind the keys it is merged on.
StoredEntry = tuple[int, int, tuple[str, int, bytes, str, bytes]]


def chunk_row(
    run_id: str,
    ids: Sequence[str],
    repetitions: Sequence[int],
    *,
    positions: Sequence[int],
    tags: Sequence[list[str]],
    row_hashes: Sequence[str],
    rows: Sequence[bytes],
) -> tuple[Any, ...]:
    """The table row of a chunk of clean executions (at least one), given as columns."""
    keys = {
        "ids": list(ids),
        "repetitions": list(repetitions),
        "positions": list(positions),
        "tags": list(tags),
        "row_hashes": list(row_hashes),
    }
    return (run_id, positions[0], repetitions[0], len(ids), encode_json(keys), _joined(rows))


def _joined(rows: Sequence[bytes]) -> bytes:
    """The rows, a line each (a row with a line break in it cannot be split again: refused)."""
    body = ROW_BREAK.join(rows)
    if body.count(ROW_BREAK) != len(rows) - 1:
        raise ValueError("a stored report row holds a raw line break")
    return body


def chunk_keys(keys: bytes) -> Iterator[tuple[str, int]]:
    """The (sample id, repetition) of each execution of a chunk."""
    columns = decode_json(keys)
    return zip(columns["ids"], columns["repetitions"])


def chunk_entries(
    chunks: Iterable[tuple[bytes, bytes]], tags_json: Callable[[list[str]], bytes]
) -> Iterator[StoredEntry]:
    """The executions of ``chunks`` (their keys and rows, in order), each as
    :meth:`RunStore.iter_stored` yields it behind its (position, repetition); ``tags_json``
    encodes a list of tags."""
    for keys, body in chunks:
        columns = decode_json(keys)
        for sample_id, repetition, position, tags, row_hash, row in zip(
            columns["ids"],
            columns["repetitions"],
            columns["positions"],
            columns["tags"],
            columns["row_hashes"],
            body.split(ROW_BREAK),
            strict=True,
        ):
            yield position, repetition, (sample_id, repetition, tags_json(tags), row_hash, row)


def merged(*ordered: Iterator[StoredEntry]) -> Iterator[tuple[str, int, bytes, str, bytes]]:
    """Streams of executions, each in (position, repetition) order, as one in that order."""
    for _, _, row in heapq.merge(*ordered, key=_order):
        yield row


def _order(entry: StoredEntry) -> tuple[int, int]:
    return entry[0], entry[1]
