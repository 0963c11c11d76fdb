"""The provider cache: SQLite (WAL) keyed by everything that can change a provider's answer.

A key is the SHA-256 of canonical JSON over the provider kind, base URL, model, every request
parameter and the prompt-template version, so a changed rubric, seed or model never reuses a
stale answer. Only successful, validated answers are written; errors never are. Modes:
``use`` reads and writes, ``refresh`` writes without reading, ``off`` does neither.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from assay.errors import StoreError

CACHE_FILE = "provider-cache.sqlite3"
CACHE_SCHEMA: Final = "assay.provider-cache.v1"

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    model TEXT NOT NULL,
    value BLOB NOT NULL,
    created_at REAL NOT NULL
);
"""


def cache_key(parts: Mapping[str, Any]) -> str:
    """SHA-256 over canonical JSON (sorted keys, no whitespace) of every keyed field."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ProviderCache:
    """A thread-safe SQLite key-value store for provider answers."""

    def __init__(self, path: str | Path, *, mode: str = "use") -> None:
        self.path = Path(path)
        self.mode = mode
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    @property
    def reads(self) -> bool:
        return self.mode == "use"

    @property
    def writes(self) -> bool:
        return self.mode in ("use", "refresh")

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.executescript(_SCHEMA_SQL)
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                    (CACHE_SCHEMA,),
                )
                conn.commit()
            except (OSError, sqlite3.Error) as exc:
                raise StoreError(f"cannot open the provider cache at {self.path}: {exc}") from None
            self._conn = conn
        return self._conn

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        """The cached values among ``keys`` (empty unless the mode reads)."""
        if not self.reads or not keys:
            return {}
        found: dict[str, bytes] = {}
        with self._lock:
            conn = self._connect()
            try:
                for start in range(0, len(keys), 500):
                    chunk = list(keys[start : start + 500])
                    marks = ",".join("?" * len(chunk))
                    rows = conn.execute(
                        f"SELECT key, value FROM entries WHERE key IN ({marks})", chunk
                    )
                    found.update((key, bytes(value)) for key, value in rows)
            except sqlite3.Error as exc:
                raise StoreError(f"cannot read the provider cache at {self.path}: {exc}") from None
        return found

    def get(self, key: str) -> bytes | None:
        return self.get_many([key]).get(key)

    def put_many(self, items: Sequence[tuple[str, str, str, bytes]]) -> None:
        """Store ``(key, kind, model, value)`` rows (no-op unless the mode writes)."""
        if not self.writes or not items:
            return
        now = time.time()
        with self._lock:
            conn = self._connect()
            try:
                conn.executemany(
                    "INSERT OR REPLACE INTO entries (key, kind, model, value, created_at) VALUES "
                    "(?, ?, ?, ?, ?)",
                    [
                        (key, kind, model, sqlite3.Binary(value), now)
                        for key, kind, model, value in items
                    ],
                )
                conn.commit()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot write the provider cache at {self.path}: {exc}") from None

    def put(self, key: str, kind: str, model: str, value: bytes) -> None:
        self.put_many([(key, kind, model, value)])

    def count(self) -> int:
        with self._lock:
            conn = self._connect()
            return int(conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    def stats(self) -> list[tuple[str, str, int, int]]:
        """``(kind, model, entries, value bytes)`` per kind and model, for ``assay cache stats``."""
        with self._lock:
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
            conn = self._connect()
            try:
                deleted = conn.execute(f"DELETE FROM entries{where}", values).rowcount
                conn.commit()
                conn.execute("VACUUM")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot clear the provider cache at {self.path}: {exc}") from None
            return int(deleted)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


_open: dict[tuple[str, str], ProviderCache] = {}
_open_lock = threading.Lock()


def open_cache(cache_dir: str | Path, mode: str) -> ProviderCache:
    """The process-wide cache object for a directory and mode (one connection each)."""
    path = Path(cache_dir) / CACHE_FILE
    key = (str(path.resolve()), mode)
    with _open_lock:
        cache = _open.get(key)
        if cache is None:
            cache = _open[key] = ProviderCache(path, mode=mode)
        return cache


def close_all() -> None:
    """Close every open cache connection (end of a run, tests)."""
    with _open_lock:
        for cache in _open.values():
            cache.close()
        _open.clear()
