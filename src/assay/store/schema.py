"""The run store's SQLite layout and its plumbing: tables, insert statements, JSON codec, ids.

:mod:`assay.store.runs` holds what a run does with the store; this module holds what the file is.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.data.bounded import loads_json
from assay.data.results import ExecutionResult
from assay.errors import StoreError

STORE_SCHEMA: Final = "assay.store.v2"  # v2: the chunks table (v1 stores gain it on opening)
PAGE_SIZE: Final = 16384

TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    dataset_name TEXT NOT NULL,
    dataset_path TEXT,
    status TEXT NOT NULL,
    config TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS executions (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    position INTEGER NOT NULL,
    tags TEXT NOT NULL,
    row_hash TEXT NOT NULL,
    has_error INTEGER NOT NULL,
    output TEXT,
    result TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id, repetition)
);
CREATE INDEX IF NOT EXISTS executions_order ON executions (run_id, position, repetition);
CREATE TABLE IF NOT EXISTS chunks (
    run_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    repetition INTEGER NOT NULL,
    size INTEGER NOT NULL,
    keys BLOB NOT NULL,
    rows BLOB NOT NULL,
    PRIMARY KEY (run_id, position, repetition)
);
CREATE TABLE IF NOT EXISTS gates (
    run_id TEXT PRIMARY KEY,
    passed INTEGER NOT NULL,
    result TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS compliance (
    run_id TEXT PRIMARY KEY,
    summary TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sample_hashes (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id)
);
CREATE TABLE IF NOT EXISTS judges (
    run_id TEXT PRIMARY KEY,
    blocks TEXT NOT NULL
);
"""
# sample_hashes: what each sample held when its run began (input, expected output, metadata),
# so a resume can refuse a dataset edited since (assay.store.sample_hashes). Added without a
# schema bump: stores of older versions gain it on opening, and a run without hashes resumes
# unchecked as before.

INSERT_ONE = "INSERT OR REPLACE INTO executions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
# 900 parameters a statement: under SQLite's oldest limit (999), so any build takes it.
ROWS_PER_INSERT: Final = 100
INSERT_MANY = "INSERT OR REPLACE INTO executions VALUES " + ", ".join(
    ["(?, ?, ?, ?, ?, ?, ?, ?, ?)"] * ROWS_PER_INSERT
)

# pydantic-core's encoder and decoder (Rust) are ~3x faster than the stdlib's on these small
# per-execution documents; values are already checked finite by MetricScore and check_details.
encode_json = pydantic_core.to_json
decode_json = pydantic_core.from_json
# Floats below this magnitude are written alike by orjson and pydantic-core (a property test
# checks it on the installed versions). From 1e16 up both write an exponent, whose form has
# changed between releases of their float formatters (1e16 against 1e+16): orjson 3.13 and
# pydantic-core 2.46 agree there, but the pins allow releases that may not.
ORJSON_FLOAT_BOUND: Final = 1e16


def encode_plain_rows(rows: Sequence[dict[str, Any]]) -> list[bytes]:
    """Report rows whose floats are finite and under :data:`ORJSON_FLOAT_BOUND` in magnitude
    (the caller knows: see :class:`~assay.data.executions.PlainScores`), as :data:`encode_json`
    encodes them, byte for byte.

    orjson encodes these rows about 3x faster. Where it cannot (an integer past 64 bits, a
    string that is not UTF-8) the rows are encoded by pydantic-core instead.
    """
    import orjson  # here, not at import: ~8 ms a judge run's first request would wait for

    try:
        return list(map(orjson.dumps, rows))
    except TypeError:
        return list(map(encode_json, rows))


# How a result stored as its report row starts (the row's first key); a full result document
# starts with "sut_error".
ROW_PREFIX: Final = b'{"id":'


def open_read_only(path: Path) -> sqlite3.Connection:
    """Open an existing store for reading only: SQLite refuses every write on it."""
    if not path.is_file():
        raise StoreError(f"no run store at {path} (run 'assay run' first, or pass --store)")
    try:
        db = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
        )
        db.execute("SELECT 1 FROM runs LIMIT 1").fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read run store {path}: {exc}") from None
    return db


# What a stored value that is not what assay wrote raises when read: bad JSON (ValueError), a
# wrong shape (TypeError, KeyError, AttributeError, IndexError, pydantic's ValidationError).
DAMAGE = (ValueError, TypeError, KeyError, AttributeError, IndexError)


@contextlib.contextmanager
def damaged(path: Path, run_id: str, what: str) -> Iterator[None]:
    """Read ``what`` of run ``run_id`` inside: a value assay cannot read (a store edited by
    hand, or cut short) becomes a StoreError naming the store, the run and the value."""
    try:
        yield
    except DAMAGE as exc:
        raise damage(path, run_id, what, exc) from None


def damage(path: Path, run_id: str, what: str, exc: Exception) -> StoreError:
    """The StoreError for ``exc`` (one of :data:`DAMAGE`) met reading ``what`` of a run; for
    per-execution loops, where :func:`damaged` (~2.5 us a use) would cost seconds a million."""
    return StoreError(f"run store {path}: run '{run_id}': {what} is damaged ({_reason(exc)[:200]})")


def _reason(exc: Exception) -> str:
    """What :func:`damaged` caught, in a few words (a validation error: its first problem)."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"key '{'.'.join(map(str, first['loc']))}': {first['msg']}"
    if isinstance(exc, KeyError):
        return f"no key {exc}"
    return " ".join(str(exc).split())


class _StoredConfig(BaseModel):
    """The keys of a run's stored configuration that assay reads back, with their types."""

    # built when a stored run is first read back, not when a run imports the store
    model_config = ConfigDict(extra="allow", strict=True, defer_build=True)
    metrics: list[str] = []
    scopes: dict[str, list[str]] = {}
    thresholds: dict[str, float] = {}
    repetitions: int = Field(1, ge=1)
    dataset_samples: int = Field(0, ge=0)
    system_under_test: dict[str, Any] = {}


def stored_tags(value: object) -> list[str]:
    """A stored execution's tags read back: a list of strings (ValueError if not)."""
    if type(value) is list:
        for tag in value:  # a plain loop: the quickest check of a row's one or two tags
            if type(tag) is not str:
                break
        else:
            return value
    raise ValueError("its tags are not a list of strings")


def stored_execution(sample_id: object, repetition: object, part: str = "execution") -> str:
    """How :func:`damaged` names a ``part`` of one stored execution."""
    return f"the stored {part} of sample {sample_id!r} repetition {repetition}"


def stored_config(text: str | bytes, path: Path, run_id: str) -> dict[str, Any]:
    """A run's configuration from its stored JSON, checked to be what assay wrote."""
    with damaged(path, run_id, "the stored configuration (runs.config)"):
        config = loads_json(text, ValueError)
        if not isinstance(config, dict):
            raise TypeError(f"a JSON {type(config).__name__}, not an object")
        _StoredConfig.model_validate(config)
    return config


def store_path() -> Path:
    """Default store location: ``$ASSAY_STORE``, else ``runs.db`` in the project's ``.assay/``."""
    from assay.store.project import project_dir

    return Path(os.environ.get("ASSAY_STORE") or project_dir() / "runs.db")


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]


@dataclass(frozen=True)
class RunRecord:
    """A run as ``assay runs`` lists it: the runs table's row and its execution counts."""

    run_id: str
    created_at: str
    updated_at: str
    dataset_name: str
    dataset_path: str | None
    status: str
    config: dict[str, Any]
    executions: int
    errored: int


@dataclass(frozen=True, slots=True)
class StoredExecution:
    """One finished execution as the store takes it.

    ``row`` is the execution's report row as JSON (:func:`assay.data.results.row_document`); a
    result without provider usage is stored as that row, so a report is written from the
    stored bytes as they are, and one with usage keeps its full result document.
    """

    result: ExecutionResult
    output: dict[str, Any] | None
    position: int
    tags: list[str]
    row_hash: str
    row: bytes | None = None


def checkpoint(path: Path) -> None:
    """A passive checkpoint of the store at ``path``; a failure leaves the work to the close."""
    with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA wal_checkpoint(PASSIVE)")


_KNOWN_SCHEMAS: Final = ("assay.store.v1", STORE_SCHEMA)


def check_schema(db: sqlite3.Connection, path: Path) -> None:
    """Refuse a store this assay cannot read faithfully: a newer schema (rewriting its
    version would silently downgrade it), or a v2 store whose chunks table is gone (its
    executions would read as none: a report of 0 samples)."""
    if not has_table(db, "meta"):
        return  # a new store, or one from before the meta table: nothing recorded
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    version = None if row is None else row[0]
    if version is not None and version not in _KNOWN_SCHEMAS:
        raise StoreError(
            f"run store {path} has schema {version!r}; this assay reads "
            f"{', '.join(_KNOWN_SCHEMAS)} (a newer assay wrote it?)"
        )
    if version == STORE_SCHEMA and not has_table(db, "chunks"):
        raise StoreError(f"run store {path} is damaged: its 'chunks' table is missing")


def has_table(db: sqlite3.Connection, name: str) -> bool:
    """Whether the store has table ``name`` (an older store may lack a newer table)."""
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
    return found.fetchone() is not None
