"""The provider cache: SQLite (WAL) keyed by everything that can change a provider's answer.

A key is the SHA-256 of canonical JSON over the provider kind, base URL, model, every request
parameter and the prompt-template version, so a changed rubric, seed or model never reuses a
stale answer. Only successful, validated answers are written; errors never are. Modes:
``use`` reads and writes, ``refresh`` writes without reading, ``off`` does neither.

A judge run writes one small answer per call; committing each costs more CPU than the rest of
the call's bookkeeping, on the event loop. Callers may therefore ``put(..., defer=True)``: the
row is visible to this object's reads at once and committed with the next batch (64 rows, or
the first put after half a second), when the cache closes, or at interpreter exit. A crash
loses at most that batch, which only means asking those questions again.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from assay.errors import StoreError
from assay.store.backend import Column, Connection, PgConnection, Table, create_tables
from assay.store.location import StoreUrl, store_location

CACHE_FILE = "provider-cache.sqlite3"
CACHE_SCHEMA: Final = "assay.provider-cache.v1"
DEFER_ROWS: Final = 64  # deferred rows committed together
DEFER_S: Final = 0.5  # the oldest deferred row waits at most this long (checked on put)
_Row = tuple[str, str, str, bytes, float]  # key, kind, model, value, created_at

# The cache's tables, for SQLite and PostgreSQL (:mod:`assay.store.backend`). On a PostgreSQL
# server they live in their own schema, beside the run store's tables in the same database.
CACHE_TABLES: Final = (
    Table(
        "meta",
        (Column("key", "TEXT", "TEXT"), Column("value", "TEXT NOT NULL", "TEXT NOT NULL")),
        ("key",),
    ),
    Table(
        "entries",
        (
            Column("key", "TEXT", "TEXT"),
            Column("kind", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("model", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("value", "BLOB NOT NULL", "BYTEA NOT NULL"),
            Column("created_at", "REAL NOT NULL", "DOUBLE PRECISION NOT NULL"),
        ),
        ("key",),
    ),
)
CACHE_SCHEMA_NAME: Final = "assay_cache"  # PostgreSQL: the schema the cache's tables are in


def cache_key(parts: Mapping[str, Any]) -> str:
    """SHA-256 over canonical JSON (sorted keys, no whitespace) of every keyed field."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ProviderCache:
    """A thread-safe SQLite key-value store for provider answers."""

    def __init__(self, path: str | Path | StoreUrl, *, mode: str = "use") -> None:
        self.path: Path | StoreUrl = path if isinstance(path, StoreUrl) else Path(path)
        self.mode = mode
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._pending: dict[str, _Row] = {}  # deferred rows, not yet committed
        self._pending_since = 0.0

    @property
    def reads(self) -> bool:
        return self.mode == "use"

    @property
    def writes(self) -> bool:
        return self.mode in ("use", "refresh")

    def _connect(self) -> Connection:
        if self._conn is None:
            if isinstance(self.path, StoreUrl):
                conn: Connection = PgConnection(self.path, CACHE_TABLES, schema=CACHE_SCHEMA_NAME)
            else:
                conn = self._open_sqlite(self.path)
            try:
                create_tables(conn, CACHE_TABLES)
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                    (CACHE_SCHEMA,),
                )
                _commit(conn)
            except sqlite3.Error as exc:
                raise StoreError(f"cannot open the provider cache at {self.path}: {exc}") from None
            self._conn = conn
        return self._conn

    @staticmethod
    def _open_sqlite(path: Path) -> sqlite3.Connection:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(path), timeout=30.0, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the provider cache at {path}: {exc}") from None
        return conn

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        """The cached values among ``keys`` (empty unless the mode reads)."""
        if not self.reads or not keys:
            return {}
        found: dict[str, bytes] = {}
        with self._lock:
            pending = [key for key in keys if key in self._pending]
            found.update((key, self._pending[key][3]) for key in pending)
            keys = [key for key in keys if key not in self._pending] if pending else keys
            if not keys:
                return found
            conn = self._connect()
            try:
                for start in range(0, len(keys), 500):
                    chunk = list(keys[start : start + 500])
                    marks = ",".join("?" * len(chunk))
                    rows = conn.execute(
                        f"SELECT key, value FROM entries WHERE key IN ({marks})", chunk
                    )
                    # a value that is not a blob (a cache edited by hand) is a miss: asked again
                    found.update((k, bytes(v)) for k, v in rows if isinstance(v, bytes))
            except sqlite3.Error as exc:
                raise StoreError(f"cannot read the provider cache at {self.path}: {exc}") from None
        return found

    def get(self, key: str) -> bytes | None:
        return self.get_many([key]).get(key)

    def put_many(
        self, items: Sequence[tuple[str, str, str, bytes]], *, defer: bool = False
    ) -> None:
        """Store ``(key, kind, model, value)`` rows (no-op unless the mode writes).

        ``defer``: commit with the next batch instead of now (see the module docstring).
        """
        if not self.writes or not items:
            return
        now = time.time()
        rows = [(key, kind, model, value, now) for key, kind, model, value in items]
        with self._lock:
            if not self._pending:
                self._pending_since = time.monotonic()
            self._pending.update((row[0], row) for row in rows)
            due = len(self._pending) >= DEFER_ROWS
            if not defer or due or time.monotonic() - self._pending_since >= DEFER_S:
                self._commit_pending()

    def put(self, key: str, kind: str, model: str, value: bytes, *, defer: bool = False) -> None:
        self.put_many([(key, kind, model, value)], defer=defer)

    def _commit_pending(self) -> None:
        """Write the deferred rows in one transaction (the caller holds the lock)."""
        if not self._pending:
            return
        rows, self._pending = list(self._pending.values()), {}
        conn = self._connect()
        try:
            conn.executemany(
                "INSERT OR REPLACE INTO entries (key, kind, model, value, created_at) VALUES "
                "(?, ?, ?, ?, ?)",
                [
                    (key, kind, model, sqlite3.Binary(value), at)
                    for key, kind, model, value, at in rows
                ],
            )
            _commit(conn)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write the provider cache at {self.path}: {exc}") from None

    def flush(self) -> None:
        """Commit the deferred rows now."""
        with self._lock:
            self._commit_pending()

    def count(self) -> int:
        with self._lock:
            self._commit_pending()
            conn = self._connect()
            return int(conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    def stats(self) -> list[tuple[str, str, int, int]]:
        """``(kind, model, entries, value bytes)`` per kind and model, for ``assay cache stats``."""
        with self._lock:
            self._commit_pending()
            conn = self._connect()
            rows = conn.execute(
                "SELECT kind, model, COUNT(*), COALESCE(SUM(LENGTH(value)), 0) FROM entries "
                "GROUP BY kind, model ORDER BY kind, model"
            )
            return [(str(k), str(m), int(n), int(b)) for k, m, n, b in rows]

    def clear(self, *, kind: str | None = None, model: str | None = None) -> int:
        """Delete entries (all, or of one kind and/or model); returns how many went."""
        clauses, values = [], []
        if kind is not None:
            clauses.append("kind = ?")
            values.append(kind)
        if model is not None:
            clauses.append("model = ?")
            values.append(model)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._lock:
            self._commit_pending()
            conn = self._connect()
            try:
                deleted = conn.execute(f"DELETE FROM entries{where}", values).rowcount
                _commit(conn)
                if isinstance(conn, sqlite3.Connection):  # PostgreSQL's autovacuum does this
                    conn.execute("VACUUM")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot clear the provider cache at {self.path}: {exc}") from None
            return int(deleted)

    def close(self) -> None:
        """Commit the deferred rows and close the connection (it reopens on next use)."""
        with self._lock:
            with contextlib.suppress(StoreError):  # closing must not fail: rows only a cache
                self._commit_pending()
            if self._conn is not None:
                self._conn.close()
                self._conn = None


_open: dict[tuple[str, str], ProviderCache] = {}
_open_lock = threading.Lock()


def _commit(conn: Connection) -> None:
    """Commit SQLite's open transaction (a PostgreSQL cache commits each statement)."""
    if isinstance(conn, sqlite3.Connection):
        conn.commit()


def cache_location(cache_dir: str | Path) -> Path | StoreUrl:
    """The cache a ``cache_dir`` names: ``provider-cache.sqlite3`` in that folder, or, for a
    ``postgresql://`` URL, that database (shared by every machine that names it)."""
    place = store_location(cache_dir)
    return place if isinstance(place, StoreUrl) else place / CACHE_FILE


def open_cache(cache_dir: str | Path, mode: str) -> ProviderCache:
    """The process-wide cache object for a directory (or URL) and mode (one connection each)."""
    path = cache_location(cache_dir)
    key = (path.url if isinstance(path, StoreUrl) else str(path.resolve()), mode)
    with _open_lock:
        cache = _open.get(key)
        if cache is None:
            cache = _open[key] = ProviderCache(path, mode=mode)
        return cache


def close_all() -> None:
    """Close every open cache connection, committing deferred rows (end of a run, tests)."""
    with _open_lock:
        for cache in _open.values():
            cache.close()
        _open.clear()


atexit.register(close_all)  # deferred rows of caches nobody closed
