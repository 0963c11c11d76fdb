"""The production trace store: sampled, redacted span parts and their online scores, in a SQLite
file of its own (``.assay/production.sqlite``; the run store's schema is not touched).

Only what :class:`~assay.production.redact.Redactor` returned is ever written. Retention is by
age of receipt and is enforced in the same transaction as every write, so an expired trace is
gone before the first row after its expiry lands.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pydantic import ValidationError

from assay.errors import StoreError
from assay.production.mapping import SpanPart, TraceRecord, assemble
from assay.store.project import project_dir

STORE_ENV: Final = "ASSAY_TRACE_STORE"
STORE_SCHEMA: Final = "assay.production-store.v1"
DEFAULT_RETENTION_S: Final = 30 * 24 * 3600

TABLES: Final = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS spans (
    trace_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    start_ns INTEGER NOT NULL,
    received_ns INTEGER NOT NULL,
    part TEXT NOT NULL,
    PRIMARY KEY (trace_id, span_id)
);
CREATE INDEX IF NOT EXISTS spans_received ON spans (received_ns);
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY,
    started_ns INTEGER NOT NULL,
    received_ns INTEGER NOT NULL,
    session TEXT
);
CREATE INDEX IF NOT EXISTS traces_started ON traces (started_ns);
CREATE INDEX IF NOT EXISTS traces_session ON traces (session, started_ns);
CREATE TABLE IF NOT EXISTS scores (
    trace_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    value REAL,
    error TEXT,
    passed INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    scored_ns INTEGER NOT NULL,
    PRIMARY KEY (trace_id, metric)
);
"""


def default_path() -> Path:
    """``$ASSAY_TRACE_STORE``, else ``production.sqlite`` in the project's ``.assay/``."""
    configured = os.environ.get(STORE_ENV, "").strip()
    return Path(configured) if configured else project_dir() / "production.sqlite"


@dataclass(frozen=True, slots=True)
class StoredSpan:
    """One span's redacted part, ready to write."""

    trace_id: str
    span_id: str
    start_ns: int
    part: SpanPart


@dataclass(frozen=True, slots=True)
class Score:
    """One trace's score (or error) on one metric, from a monitor run."""

    trace_id: str
    metric: str
    value: float | None
    error: str | None
    passed: bool
    run_id: str
    started_ns: int = 0


class TraceStore:
    """Span parts, traces and scores; one writer at a time (SQLite WAL)."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        retention_s: float = DEFAULT_RETENTION_S,
        read_only: bool = False,
    ):
        if not retention_s > 0:
            raise StoreError(f"retention must be a positive number of seconds; got {retention_s}")
        self.path = path if path is not None else default_path()
        self.retention_ns = int(retention_s * 1e9)
        if read_only:  # the viewer: nothing created, nothing written
            self._open_read_only()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA busy_timeout=10000")
            self.db.executescript(TABLES)
            self._check_schema()
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"{self.path}: cannot open the trace store: {exc}") from None

    def _open_read_only(self) -> None:
        try:
            self.db = sqlite3.connect(f"{self.path.absolute().as_uri()}?mode=ro", uri=True)
            row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot read the trace store: {exc}") from None
        if row is None or row[0] != STORE_SCHEMA:
            raise StoreError(f"{self.path}: not a trace store of this version")

    def _check_schema(self) -> None:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (STORE_SCHEMA,))
        elif row[0] != STORE_SCHEMA:
            raise StoreError(f"{self.path}: not a trace store of this version ({row[0]})")

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from None

    def write(self, spans: Sequence[StoredSpan], now_ns: int | None = None) -> int:
        """Store redacted spans (a span seen again replaces itself) and drop expired traces."""
        now = now_ns if now_ns is not None else time.time_ns()
        rows = [(s.trace_id, s.span_id, s.start_ns, now, s.part.model_dump_json()) for s in spans]
        firsts: dict[str, int] = {}
        sessions: dict[str, str] = {}
        for span in spans:
            firsts[span.trace_id] = min(firsts.get(span.trace_id, span.start_ns), span.start_ns)
            if span.part.session is not None:
                sessions.setdefault(span.trace_id, span.part.session)
        with self._transaction() as db:
            db.executemany("INSERT OR REPLACE INTO spans VALUES (?, ?, ?, ?, ?)", rows)
            db.executemany(
                "INSERT INTO traces VALUES (?, ?, ?, ?) ON CONFLICT (trace_id) DO UPDATE SET "
                "started_ns = min(started_ns, excluded.started_ns), received_ns = ?, "
                "session = coalesce(session, excluded.session)",
                [(t, first, now, sessions.get(t), now) for t, first in firsts.items()],
            )
            self._expire(db, now)
        return len(rows)

    def _expire(self, db: sqlite3.Connection, now_ns: int) -> None:
        cutoff = now_ns - self.retention_ns
        db.execute("DELETE FROM spans WHERE received_ns < ?", (cutoff,))
        db.execute("DELETE FROM traces WHERE received_ns < ?", (cutoff,))
        db.execute("DELETE FROM scores WHERE trace_id NOT IN (SELECT trace_id FROM traces)")

    def expire(self, now_ns: int | None = None) -> None:
        """Drop traces past retention now (also done by every write)."""
        with self._transaction() as db:
            self._expire(db, now_ns if now_ns is not None else time.time_ns())

    def trace_ids(
        self, since_ns: int = 0, until_ns: int | None = None, settled_ns: int | None = None
    ) -> list[tuple[str, int]]:
        """(trace id, start) of stored traces started in [since, until), oldest first; with
        ``settled_ns``, only traces whose last span arrived before it."""
        query = "SELECT trace_id, started_ns FROM traces WHERE started_ns >= ? AND started_ns < ?"
        args: list[int] = [since_ns, until_ns if until_ns is not None else 2**63 - 1]
        if settled_ns is not None:
            query += " AND received_ns < ?"
            args.append(settled_ns)
        return [(t, s) for t, s in self.db.execute(query + " ORDER BY started_ns, trace_id", args)]

    def record(self, trace_id: str) -> TraceRecord | None:
        """One trace assembled from its stored parts; None when it is not (or no longer) kept."""
        first = self.db.execute(
            "SELECT started_ns FROM traces WHERE trace_id = ?", (trace_id,)
        ).fetchone()
        if first is None:
            return None
        rows = self.db.execute(
            "SELECT part FROM spans WHERE trace_id = ? ORDER BY start_ns, span_id", (trace_id,)
        ).fetchall()
        try:
            parts = [SpanPart.model_validate_json(row[0]) for row in rows]
        except ValidationError as exc:
            raise StoreError(f"{self.path}: trace {trace_id}: damaged span part: {exc}") from None
        return assemble(trace_id, first[0], parts)

    def session_traces(self, session: str) -> list[str]:
        """The stored traces of one session, in the order they started."""
        rows = self.db.execute(
            "SELECT trace_id FROM traces WHERE session = ? ORDER BY started_ns, trace_id",
            (session,),
        )
        return [row[0] for row in rows]

    def save_scores(self, scores: Sequence[Score], now_ns: int | None = None) -> None:
        now = now_ns if now_ns is not None else time.time_ns()
        rows = [
            (s.trace_id, s.metric, s.value, s.error, int(s.passed), s.run_id, now) for s in scores
        ]
        with self._transaction() as db:
            db.executemany("INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?, ?, ?, ?)", rows)

    def scored(self, metrics: Sequence[str]) -> set[str]:
        """Trace ids that already have a score (or error) for every one of ``metrics``."""
        marks = ",".join("?" * len(metrics))
        rows = self.db.execute(
            f"SELECT trace_id FROM scores WHERE metric IN ({marks}) GROUP BY trace_id "
            "HAVING count(DISTINCT metric) = ?",
            [*metrics, len(metrics)],
        )
        return {row[0] for row in rows}

    def scores(self, metric: str, since_ns: int = 0, until_ns: int | None = None) -> list[Score]:
        """A metric's scores over traces started in [since, until), oldest trace first."""
        rows = self.db.execute(
            "SELECT s.trace_id, s.value, s.error, s.passed, s.run_id, t.started_ns "
            "FROM scores s JOIN traces t USING (trace_id) WHERE s.metric = ? "
            "AND t.started_ns >= ? AND t.started_ns < ? ORDER BY t.started_ns, s.trace_id",
            (metric, since_ns, until_ns if until_ns is not None else 2**63 - 1),
        )
        return [Score(t, metric, v, e, bool(p), r, s) for t, v, e, p, r, s in rows]

    def metrics(self) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT DISTINCT metric FROM scores")]

    def counts(self) -> tuple[int, int]:
        """(traces, spans) kept now."""
        traces = self.db.execute("SELECT count(*) FROM traces").fetchone()[0]
        spans = self.db.execute("SELECT count(*) FROM spans").fetchone()[0]
        return int(traces), int(spans)
