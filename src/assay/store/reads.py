"""The run store's readers: a run's executions read back in dataset order, from its rows and
its chunks (:mod:`assay.store.chunks`) merged, and the answers kept beside them.

:class:`~assay.store.runs.RunStore` writes; every read first flushes what it holds, so a reader sees
all that was recorded.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from assay.data.results import ExecutionResult
from assay.store.chunks import ROW_BREAK, StoredEntry, chunk_entries, chunk_keys, merged
from assay.store.schema import (
    DAMAGE,
    ROW_PREFIX,
    damage,
    damaged,
    decode_json,
    encode_json,
    stored_execution,
    stored_tags,
)
from assay.store.verdicts import RunVerdicts


class StoredRuns(RunVerdicts):
    """Reads of a run store (``db``: its open connection; ``flush``: write what is pending)."""

    db: sqlite3.Connection
    path: Path
    _has_chunks: bool  # False: a v1 store opened read-only, with no chunks table
    _tags_json: dict[tuple[str, ...], bytes]

    def flush(self) -> None:
        """Write what is pending (nothing here: the writer overrides this)."""

    def _tags_of(self, tags: list[str]) -> bytes:
        """A list of tags as JSON; each distinct list encoded once."""
        key = tuple(tags)
        encoded = self._tags_json.get(key)
        if encoded is None:
            encoded = self._tags_json[key] = encode_json(tags)
        return encoded

    def done_keys(self, run_id: str, *, include_errored: bool = True) -> set[tuple[str, int]]:
        """(sample_id, repetition) pairs already stored for a run."""
        self.flush()
        query = "SELECT sample_id, repetition FROM executions WHERE run_id = ?"
        if not include_errored:
            query += " AND has_error = 0"
        done = {(r[0], r[1]) for r in self.db.execute(query, (run_id,))}
        with damaged(self.path, run_id, "a chunk of stored executions (chunks.keys)"):
            for (keys,) in self._chunk_rows(run_id, "keys"):  # clean: done either way
                done.update(chunk_keys(keys))
        return done

    def iter_stored(self, run_id: str) -> Iterator[tuple[str, int, bytes, str, bytes]]:
        """Stored executions in dataset order, undecoded: (sample id, repetition, tags JSON,
        row hash, result JSON). The order comes from an index, so nothing is sorted in memory;
        executions stored in chunks are merged in by their (position, repetition)."""
        self.flush()
        if next(iter(self._chunk_rows(run_id, "1")), None) is None:
            yield from self.db.execute(
                "SELECT sample_id, repetition, tags, row_hash, result FROM executions "
                "WHERE run_id = ? ORDER BY position, repetition",
                (run_id,),
            )
            return
        keyed = self.db.execute(
            "SELECT position, sample_id, repetition, tags, row_hash, result FROM executions "
            "WHERE run_id = ? ORDER BY position, repetition",
            (run_id,),
        )
        rows: Iterator[StoredEntry] = ((row[0], row[2], row[1:]) for row in keyed)
        chunked = chunk_entries(self._chunk_rows(run_id, "keys, rows"), self._tags_of)
        with damaged(self.path, run_id, "a chunk of stored executions (chunks)"):
            yield from merged(rows, chunked)

    def chunked_rows(self, run_id: str) -> Iterator[bytes] | None:
        """A run's stored report rows in dataset order, straight from its chunks, when every
        execution of it is in one (a run stored in one session: no resume, no row with an
        error or usage); else None, and :meth:`iter_stored` merges the two tables.

        Chunks are stored in dataset order, so their rows need no keys and no merge: at 100k
        rows, ~0.05 s of CPU against ~0.25 s through :meth:`iter_stored`.
        """
        self.flush()
        if not self._has_chunks:
            return None
        loose = self.db.execute("SELECT 1 FROM executions WHERE run_id = ? LIMIT 1", (run_id,))
        if loose.fetchone() is not None:
            return None
        return self._chunk_bodies(run_id)

    def _chunk_bodies(self, run_id: str) -> Iterator[bytes]:
        """Each chunk's rows, checked as far as costs nothing per row: as many as the chunk
        says it holds, each a report row (a store edited by hand: a StoreError)."""
        for position, size, body in self._chunk_rows(run_id, "position, size, rows"):
            raw = body.encode("utf-8") if isinstance(body, str) else body
            rows = raw.split(ROW_BREAK) if isinstance(raw, bytes) else []
            if len(rows) != size or not all(row.startswith(ROW_PREFIX) for row in rows):
                problem = (
                    f"{len(rows)} rows where {size} were stored"
                    if len(rows) != size
                    else "a row that is not a report row"
                )
                where = f"the chunk at position {position}"
                raise damage(self.path, run_id, where, ValueError(problem))
            yield from rows

    def _chunk_rows(self, run_id: str, columns: str) -> Iterable[Any]:
        """``columns`` of a run's chunks, in order; none in a v1 store opened read-only."""
        if not self._has_chunks:
            return ()
        return self.db.execute(
            f"SELECT {columns} FROM chunks WHERE run_id = ? ORDER BY position, repetition",
            (run_id,),
        )

    def iter_results(self, run_id: str) -> Iterator[tuple[ExecutionResult, list[str], str]]:
        """Stored executions in dataset order, with each sample's tags and row hash."""
        sample_id: str | None = None
        repetition: int | None = None
        try:
            for sample_id, repetition, tags, row_hash, result in self.iter_stored(run_id):
                yield (
                    ExecutionResult.from_json(sample_id, repetition, decode_json(result)),
                    stored_tags(decode_json(tags)),
                    row_hash,
                )
        except DAMAGE as exc:  # only this generator's reads: a consumer's errors stay there
            what = stored_execution(sample_id, repetition)
            raise damage(self.path, run_id, what, exc) from None

    def outputs(
        self, run_id: str, sample_id: str | None = None
    ) -> Iterator[tuple[str, int, dict[str, Any]]]:
        """Stored answers (sample id, repetition, output) of a run or of one of its samples.

        Saved-outputs runs keep none here: their answers stay in their file.
        """
        self.flush()
        query = "SELECT sample_id, repetition, output FROM executions WHERE run_id = ?"
        params: tuple[str, ...] = (run_id,)
        if sample_id is not None:
            query += " AND sample_id = ?"
            params = (run_id, sample_id)
        cursor = self.db.execute(
            query + " AND output IS NOT NULL ORDER BY position, repetition", params
        )
        found, repetition = None, None
        try:
            for found, repetition, output in cursor:
                yield found, repetition, decode_json(output)
        except DAMAGE as exc:
            what = stored_execution(found, repetition, "answer")
            raise damage(self.path, run_id, what, exc) from None
