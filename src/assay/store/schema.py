"""The run store's SQLite layout and its plumbing: tables, insert statements, JSON codec, ids.

:mod:`assay.store.runs` holds what a run does with the store; this module holds what the file is.
"""

from __future__ import annotations

import contextlib
import itertools
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
from assay.data.executions import DetailRows
from assay.data.results import ExecutionResult, ScoredColumn, passes, scored_rows
from assay.errors import StoreError
from assay.store.backend import Column, Connection, PgConnection, Table, create_tables
from assay.store.backend import has_table as has_table
from assay.store.location import StoreName, StoreUrl, store_location

STORE_SCHEMA: Final = "assay.store.v2"  # v2: the chunks table (v1 stores gain it on opening)
PAGE_SIZE: Final = 16384

# One definition of the store's tables for both databases (SQLite type, PostgreSQL type);
# :mod:`assay.store.backend` writes each one's DDL and PostgreSQL's upserts from it. A column
# added here is added to both. JSON documents are kept as bytes (BYTEA in PostgreSQL).
TABLES: Final = (
    Table(
        "meta",
        (Column("key", "TEXT", "TEXT"), Column("value", "TEXT NOT NULL", "TEXT NOT NULL")),
        ("key",),
    ),
    Table(
        "runs",
        (
            Column("run_id", "TEXT", "TEXT"),
            Column("created_at", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("updated_at", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("dataset_name", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("dataset_path", "TEXT", "TEXT"),
            Column("status", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("config", "TEXT NOT NULL", "TEXT NOT NULL"),
            # SQLite's implicit rowid, made explicit: the order runs were created in
            Column("rowid", None, "BIGSERIAL"),
        ),
        ("run_id",),
    ),
    Table(
        "executions",
        (
            Column("run_id", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("sample_id", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("repetition", "INTEGER NOT NULL", "INTEGER NOT NULL"),
            Column("position", "INTEGER NOT NULL", "BIGINT NOT NULL"),
            Column("tags", "TEXT NOT NULL", "BYTEA NOT NULL"),
            Column("row_hash", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("has_error", "INTEGER NOT NULL", "INTEGER NOT NULL"),
            Column("output", "TEXT", "BYTEA"),
            Column("result", "TEXT NOT NULL", "BYTEA NOT NULL"),
        ),
        ("run_id", "sample_id", "repetition"),
        (("executions_order", "run_id, position, repetition"),),
    ),
    Table(
        "chunks",
        (
            Column("run_id", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("position", "INTEGER NOT NULL", "BIGINT NOT NULL"),
            Column("repetition", "INTEGER NOT NULL", "INTEGER NOT NULL"),
            Column("size", "INTEGER NOT NULL", "BIGINT NOT NULL"),
            Column("keys", "BLOB NOT NULL", "BYTEA NOT NULL"),
            Column("rows", "BLOB NOT NULL", "BYTEA NOT NULL"),
        ),
        ("run_id", "position", "repetition"),
    ),
    Table(
        "gates",
        (
            Column("run_id", "TEXT", "TEXT"),
            Column("passed", "INTEGER NOT NULL", "INTEGER NOT NULL"),
            Column("result", "TEXT NOT NULL", "TEXT NOT NULL"),
        ),
        ("run_id",),
    ),
    Table(
        "compliance",
        (Column("run_id", "TEXT", "TEXT"), Column("summary", "TEXT NOT NULL", "TEXT NOT NULL")),
        ("run_id",),
    ),
    # the judge blocks of a run (assay run with judges): replaced when written again
    Table(
        "judges",
        (Column("run_id", "TEXT", "TEXT"), Column("blocks", "TEXT NOT NULL", "TEXT NOT NULL")),
        ("run_id",),
    ),
    # named baselines (assay baseline set --name): the report each name points at
    Table(
        "baselines",
        (
            Column("name", "TEXT", "TEXT"),
            Column("set_at", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("source", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("report", "BLOB NOT NULL", "BYTEA NOT NULL"),
        ),
        ("name",),
    ),
    # whole documents by name: the adversarial lane's history on a shared store
    Table(
        "documents",
        (
            Column("name", "TEXT", "TEXT"),
            Column("updated_at", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("body", "BLOB NOT NULL", "BYTEA NOT NULL"),
        ),
        ("name",),
    ),
    # what each sample held when its run began (input, expected output, metadata), so a resume
    # can refuse a dataset edited since (assay.store.sample_hashes); a store of an older version
    # gains it on opening, and a run without hashes resumes unchecked as before
    Table(
        "sample_hashes",
        (
            Column("run_id", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("sample_id", "TEXT NOT NULL", "TEXT NOT NULL"),
            Column("content_hash", "TEXT NOT NULL", "TEXT NOT NULL"),
        ),
        ("run_id", "sample_id"),
    ),
)

INSERT_ONE = "INSERT OR REPLACE INTO executions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
INSERT_SAMPLE_HASH: Final = "INSERT OR REPLACE INTO sample_hashes VALUES (?, ?, ?)"
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


def encode_scored_columns(
    ids: Sequence[str],
    repetitions: Sequence[int],
    tags: Sequence[list[str]],
    row_hashes: Sequence[str],
    columns: Sequence[ScoredColumn],
) -> list[bytes]:
    """:func:`encode_plain_rows` of :func:`~assay.data.results.scored_rows`'s rows, byte for
    byte, written from the columns without building a dict per row, score or detail.

    A column of scalars is encoded by orjson in one call and cut at its commas (no number,
    boolean or null holds one); strings, and details kept as a dict per row, are encoded one by
    one. Where orjson cannot encode a value, the rows are built and encoded the usual way.
    """
    import orjson  # here, not at import: see encode_plain_rows

    if not columns:
        return encode_plain_rows(scored_rows(ids, repetitions, tags, row_hashes, columns))
    try:
        entries, verdicts = [], []
        for name, threshold, values, details in columns:
            passed = list(map(passes, values, itertools.repeat(threshold)))
            verdicts.append(passed)
            entries.append(_entry_bytes(_literal(name), values, passed, details))
        labels = [b"[]" if not labels else orjson.dumps(labels) for labels in tags]
        fields = zip(
            _scalar_bytes(ids),
            _scalar_bytes(row_hashes),
            _scalar_bytes(repetitions),
            labels,
            [b"true" if all(row) else b"false" for row in zip(*verdicts)],
            [b",".join(row) for row in zip(*entries)],
        )
    except TypeError:  # an integer past 64 bits, a string that is not UTF-8
        return encode_plain_rows(scored_rows(ids, repetitions, tags, row_hashes, columns))
    row = b'{"id":%b,"row_hash":%b,"repetition":%b,"tags":%b,"passed":%b,"scores":{%b},"errors":{}}'
    return [row % parts for parts in fields]


def _entry_bytes(
    name: bytes, values: Sequence[float], passed: list[bool], details: Sequence[dict[str, Any]]
) -> list[bytes]:
    """One metric's ``"name":{"score":..,"passed":..,"details":{..}}`` for each row."""
    import orjson

    head = name + b':{"score":%b,"passed":%b,"details":'
    verdict = [b"true" if p else b"false" for p in passed]
    if type(details) is not DetailRows:
        entry = head + b"%b}"
        return [
            entry % parts
            for parts in zip(_scalar_bytes(values), verdict, map(orjson.dumps, details))
        ]
    keys = b",".join(_literal(key) + b":%b" for key in details.keys)
    entry = head + b"{" + keys + b"}}"
    cells = [_scalar_bytes(column) for column in details.columns]
    return [entry % parts for parts in zip(_scalar_bytes(values), verdict, *cells)]


def _literal(text: str) -> bytes:
    """``text`` as a JSON string, ready to stand in a ``%`` template."""
    import orjson

    return orjson.dumps(text).replace(b"%", b"%%")


def _scalar_bytes(values: Sequence[Any]) -> list[bytes]:
    """Each JSON scalar of ``values`` as orjson writes it."""
    import orjson

    if not values:
        return []
    if set(map(type, values)) <= _COMMALESS:  # one call, cut at the commas between values
        return orjson.dumps(values)[1:-1].split(b",")
    return list(map(orjson.dumps, values))  # a string (or a subclass) may hold a comma


_COMMALESS = frozenset({int, float, bool, type(None)})
"""The JSON scalars whose written form never holds a comma."""


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
def damaged(path: StoreName, run_id: str, what: str) -> Iterator[None]:
    """Read ``what`` of run ``run_id`` inside: a value assay cannot read (a store edited by
    hand, or cut short) becomes a StoreError naming the store, the run and the value."""
    try:
        yield
    except DAMAGE as exc:
        raise damage(path, run_id, what, exc) from None


def damage(path: StoreName, run_id: str, what: str, exc: Exception) -> StoreError:
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


def stored_config(text: str | bytes, path: StoreName, run_id: str) -> dict[str, Any]:
    """A run's configuration from its stored JSON, checked to be what assay wrote."""
    with damaged(path, run_id, "the stored configuration (runs.config)"):
        config = loads_json(text, ValueError)
        if not isinstance(config, dict):
            raise TypeError(f"a JSON {type(config).__name__}, not an object")
        _StoredConfig.model_validate(config)
    return config


def store_path() -> StoreName:
    """Default store: ``$ASSAY_STORE``, else ``store =`` in ``assay.toml``, else ``runs.db``
    in the project's ``.assay/`` (a SQLite file's path, or a PostgreSQL URL)."""
    return store_location(None)


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


def check_schema(db: Connection, path: StoreName) -> None:
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


def open_sqlite(path: Path) -> sqlite3.Connection:
    """Open (or create) the SQLite store at ``path`` for writing, its tables made."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        # A new store only (an existing one keeps its pages): rows of a few hundred bytes
        # insert with ~15% less CPU in 16 KiB pages than in the default 4 KiB.
        db.execute(f"PRAGMA page_size={PAGE_SIZE}")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        check_schema(db, path)
        create_tables(db, TABLES)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (STORE_SCHEMA,))
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open run store {path}: {exc}") from None
    except OSError as exc:  # its folder cannot be made: a file in the way, a name too long
        raise StoreError(f"cannot open run store {path}: {exc.strerror or exc}") from None
    return db


def open_postgres(url: StoreUrl, *, read_only: bool) -> PgConnection:
    """Connect to the PostgreSQL store at ``url``: its schema checked, and (unless
    ``read_only``) its tables made; a refused connection, a wrong password, a missing
    database or a newer schema is a StoreError naming the store (password hidden)."""
    db = PgConnection(url, TABLES, read_only=read_only)
    try:
        check_schema(db, url)
        if read_only:
            return db
        if not all(has_table(db, table.name) for table in TABLES):
            create_tables(db, TABLES)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (STORE_SCHEMA,))
    except BaseException:
        db.close()
        raise
    return db
