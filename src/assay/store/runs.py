"""The run store: every finished execution committed to SQLite (WAL) as the run goes.

An execution is stored a row each, or, clean and in the session that created the run, a chunk
to a row (:mod:`assay.store.chunks`); the readers here merge the two in dataset order.

A run that is interrupted, killed or whose provider fails keeps every finished result; the run
can be resumed (finished executions are not redone) and any stored run can be reported again.
Commits are grouped for at most ``commit_interval_s`` so 100,000 fast executions do not pay
one fsync each; a SIGKILL loses at most that window plus what was in flight.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from assay.data.results import ExecutionResult
from assay.errors import StoreError
from assay.store.backend import Connection, PgConnection, transaction
from assay.store.chunks import (
    INSERT_CHUNK,
    chunk_row,
)
from assay.store.location import StoreName, StoreUrl, store_location
from assay.store.reads import StoredRuns
from assay.store.schema import (
    INSERT_MANY,
    INSERT_ONE,
    INSERT_SAMPLE_HASH,
    ROWS_PER_INSERT,
    RunRecord,
    StoredExecution,
    check_schema,
    checkpoint,
    encode_json,
    has_table,
    now_iso,
    open_postgres,
    open_read_only,
    open_sqlite,
    stored_config,
)


class RunStore(StoredRuns):
    """SQLite-backed store of runs and their executions: what a run writes, here; what is read
    back, from :class:`~assay.store.reads.StoredRuns` (and :class:`RunVerdicts`, the gate
    outcomes and compliance summaries kept beside them)."""

    def __init__(
        self,
        path: str | Path | StoreUrl | None = None,
        *,
        commit_interval_s: float = 0.1,
        read_only: bool = False,
    ) -> None:
        self.path: StoreName = path if isinstance(path, StoreUrl) else store_location(path)
        self.commit_interval_s = commit_interval_s
        self.read_only = read_only
        self._pending = 0
        self._rows: list[tuple[Any, ...]] = []
        self._chunks: list[tuple[Any, ...]] = []  # chunk rows not yet written
        self._hashes: list[tuple[str, str, str]] = []  # sample content hashes not yet written
        self._created: set[str] = set()  # runs this store object created: they take chunks
        self._tags_json: dict[tuple[str, ...], bytes] = {}
        self._last_commit = time.monotonic()
        self._checkpoint: threading.Thread | None = None
        self._has_chunks = True  # TABLES creates it
        if isinstance(self.path, StoreUrl):
            self.db: Connection = open_postgres(self.path, read_only=read_only)
        elif read_only:
            self.db = open_read_only(self.path)
            check_schema(self.db, self.path)
            self._has_chunks = has_table(self.db, "chunks")  # a v1 store opened read-only
        else:
            self.db = open_sqlite(self.path)

    # ----------------------------------------------------------------------- runs

    def create_run(
        self, run_id: str, *, dataset_name: str, dataset_path: str | None, config: dict[str, Any]
    ) -> None:
        stamp = now_iso()
        added = self.db.execute(
            "INSERT OR IGNORE INTO runs (run_id, created_at, updated_at, dataset_name, "
            "dataset_path, status, config) VALUES (?, ?, ?, ?, ?, 'running', ?)",
            (run_id, stamp, stamp, dataset_name, dataset_path, json.dumps(config)),
        )
        if added.rowcount != 1:
            raise StoreError(f"run '{run_id}' already exists in {self.path}")
        self._created.add(run_id)

    def set_status(self, run_id: str, status: str) -> None:
        self.flush()
        self.db.execute(
            "UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ?",
            (status, now_iso(), run_id),
        )

    def has_run(self, run_id: str) -> bool:
        row = self.db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return row is not None

    def get_run(self, run_id: str) -> RunRecord:
        self.flush()
        row = self.db.execute(
            "SELECT r.run_id, r.created_at, r.updated_at, r.dataset_name, r.dataset_path, "
            "r.status, r.config, "
            "(SELECT COUNT(*) FROM executions e WHERE e.run_id = r.run_id) "
            + (
                "+ (SELECT CAST(COALESCE(SUM(c.size), 0) AS BIGINT) FROM chunks c "
                "WHERE c.run_id = r.run_id), "
                if self._has_chunks
                else ", "
            )
            + "(SELECT COUNT(*) FROM executions e WHERE e.run_id = r.run_id AND e.has_error <> 0) "
            "FROM runs r WHERE r.run_id = ?",
            (run_id,),
        ).fetchone()
        if row is None:
            raise self._no_run(run_id)
        run_id, created, updated, name, path, status, config, executions, errored = row
        config = stored_config(config, self.path, run_id)
        return RunRecord(run_id, created, updated, name, path, status, config, executions, errored)

    def run_config(self, run_id: str) -> dict[str, Any]:
        """A run's configuration (metrics, thresholds, ...): :meth:`get_run`'s ``config``
        without counting the run's executions."""
        row = self.db.execute("SELECT config FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise self._no_run(run_id)
        return stored_config(row[0], self.path, run_id)

    def _no_run(self, run_id: str) -> StoreError:
        return StoreError(f"no run '{run_id}' in {self.path} (see 'assay runs')")

    def latest_run_id(self, dataset_name: str | None = None) -> str:
        query = "SELECT run_id FROM runs"
        params: tuple[Any, ...] = ()
        if dataset_name is not None:
            query += " WHERE dataset_name = ?"
            params = (dataset_name,)
        row = self.db.execute(
            query + " ORDER BY created_at DESC, rowid DESC LIMIT 1", params
        ).fetchone()
        if row is None:
            raise StoreError(
                f"no runs in {self.path}"
                + (f" for dataset '{dataset_name}'" if dataset_name else "")
            )
        return str(row[0])

    def run_index(self) -> list[tuple[str, str, dict[str, Any]]]:
        """Every run's (id, dataset, configuration), newest first; a run whose configuration
        is damaged is left out (``get_run`` names it)."""
        found = self.db.execute(
            "SELECT run_id, dataset_name, config FROM runs ORDER BY created_at DESC, rowid DESC"
        ).fetchall()
        index = []
        for run_id, dataset, config in found:
            try:
                index.append((str(run_id), str(dataset), stored_config(config, self.path, run_id)))
            except StoreError:
                continue
        return index

    def list_runs(self, limit: int = 20) -> list[RunRecord]:
        ids = [
            r[0]
            for r in self.db.execute(
                "SELECT run_id FROM runs ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,)
            )
        ]
        return [self.get_run(i) for i in ids]

    # ----------------------------------------------------------------------- executions

    def record(
        self,
        run_id: str,
        result: ExecutionResult,
        output: dict[str, Any] | None,
        *,
        position: int,
        tags: list[str],
        row_hash: str,
        row: bytes | None = None,
    ) -> None:
        """Store one finished execution (replacing an earlier attempt at the same one)."""
        self.record_many(run_id, [StoredExecution(result, output, position, tags, row_hash, row)])

    def record_many(self, run_id: str, executions: Iterable[StoredExecution]) -> None:
        """Store finished executions; they are committed within ``commit_interval_s``."""
        for execution in executions:
            self._rows.append(self._row(run_id, execution))
            self._pending += 1
        self._flush_when_due()

    def record_clean(
        self,
        run_id: str,
        ids: Sequence[str],
        repetitions: Sequence[int],
        *,
        positions: Sequence[int],
        tags: Sequence[list[str]],
        row_hashes: Sequence[str],
        rows: Sequence[bytes],
        outputs: Sequence[dict[str, Any] | None],
    ) -> None:
        """Store finished executions given as columns (each's sample id, repetition...), none
        with an error or provider usage (the caller knows: see
        :class:`~assay.data.executions.ResultChunk`), so each is stored as its report row, already
        encoded. Committed as :meth:`record_many` commits.

        Executions of a run this store object created, with no answer to keep, are stored as
        one chunk (:mod:`assay.store.chunks`); others a row each.
        """
        if ids and run_id in self._created and all(o is None for o in outputs):
            self._chunks.append(
                chunk_row(
                    run_id,
                    ids,
                    repetitions,
                    positions=positions,
                    tags=tags,
                    row_hashes=row_hashes,
                    rows=rows,
                )
            )
            self._pending += len(ids)
            self._flush_when_due()
            return
        tags_json = self._tags_of
        self._rows.extend(
            (
                run_id,
                sample_id,
                repetition,
                position,
                tags_json(labels),
                row_hash,
                0,
                encode_json(output) if output is not None else None,
                row,
            )
            for sample_id, repetition, position, labels, row_hash, row, output in zip(
                ids, repetitions, positions, tags, row_hashes, rows, outputs
            )
        )
        self._pending += len(ids)
        self._flush_when_due()

    def note_contents(self, run_id: str, sample_ids: Sequence[str], hashes: Sequence[str]) -> None:
        """Each sample's content hash (:mod:`assay.store.sample_hashes`), written in the same
        transaction as the executions recorded with it, so a resume finds a hash for every
        sample it has a stored execution of."""
        self._hashes.extend(
            (run_id, sample_id, value) for sample_id, value in zip(sample_ids, hashes)
        )

    def _flush_when_due(self) -> None:
        """Commit once ``commit_interval_s`` has passed since the last commit."""
        if time.monotonic() - self._last_commit >= self.commit_interval_s:
            self.flush()

    def _row(self, run_id: str, execution: StoredExecution) -> tuple[Any, ...]:
        """The table row of one execution; a result without usage is stored as its report row."""
        result, row, output = execution.result, execution.row, execution.output
        has_error = result.sut_error is not None or any(
            s.error is not None for s in result.scores.values()
        )
        return (
            run_id,
            result.sample_id,
            result.repetition,
            execution.position,
            self._tags_of(execution.tags),
            execution.row_hash,
            int(has_error),
            encode_json(output) if output is not None else None,
            row if row is not None and not result.has_usage else encode_json(result.to_json()),
        )

    def flush(self) -> None:
        """Write and commit what was recorded since the last flush, in one transaction."""
        if self._rows or self._chunks or self._hashes:
            rows, self._rows = self._rows, []
            chunks, self._chunks = self._chunks, []
            hashes, self._hashes = self._hashes, []

            def write() -> None:
                self._insert(rows)
                self.db.executemany(INSERT_CHUNK, chunks)
                self.db.executemany(INSERT_SAMPLE_HASH, hashes)

            try:
                transaction(self.db, write)
            except BaseException:
                # e.g. Ctrl-C between BEGIN and COMMIT: keep the rows for the next flush
                self._rows, self._chunks = rows + self._rows, chunks + self._chunks
                self._hashes = hashes + self._hashes
                raise
        self._pending = 0
        self._last_commit = time.monotonic()

    def _insert(self, rows: list[tuple[Any, ...]]) -> None:
        """Insert (or replace) execution rows, :data:`ROWS_PER_INSERT` to a statement: about
        20% less CPU than a statement per row. Later rows replace earlier ones, as one by one."""
        if isinstance(self.db, PgConnection):  # one statement may not upsert a key twice there
            rows = list({row[:3]: row for row in rows}.values())
        whole = len(rows) - len(rows) % ROWS_PER_INSERT
        if whole:
            self.db.executemany(
                INSERT_MANY,
                (
                    list(chain.from_iterable(rows[start : start + ROWS_PER_INSERT]))
                    for start in range(0, whole, ROWS_PER_INSERT)
                ),
            )
        if whole < len(rows):
            self.db.executemany(INSERT_ONE, rows[whole:])

    def checkpoint_behind(self) -> None:
        """Copy the write-ahead log into the database file now, in a thread with its own
        connection, while this one goes on reading; :meth:`close` waits for it and then has
        little or nothing left to copy (and sync: ~15 ms at the end of every ``assay run``)."""
        self.flush()
        if not isinstance(self.path, Path):
            return  # PostgreSQL: the server checkpoints
        self._checkpoint = threading.Thread(target=checkpoint, args=(self.path,), daemon=True)
        self._checkpoint.start()

    def close(self) -> None:
        try:
            self.flush()
        finally:
            if self._checkpoint is not None:
                self._checkpoint.join()
            self.db.close()
