"""The two databases a store can live in, behind one connection shape.

SQLite is used through :mod:`sqlite3` as it always was. PostgreSQL is used through psycopg 3
and :class:`PgConnection`, which takes the store's SQL as written for SQLite (``?``
placeholders, ``INSERT OR REPLACE``/``OR IGNORE``) and says it in PostgreSQL (``%s``,
``ON CONFLICT``), from the one table definition in :data:`assay.store.schema.TABLES`: a column
added there is added to both databases. Bulk paths stay the drivers' own (sqlite3's
``executemany``; psycopg's pipelined ``executemany``), with no layer between.

A PostgreSQL connection that the server drops (a restart, a failover) is opened again; a
transaction cut short is redone whole (:meth:`PgConnection.transaction`), which is safe since
every write of a store replaces what it writes.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from assay.errors import StoreError
from assay.store.location import StoreUrl

if TYPE_CHECKING:  # psycopg is imported only when a PostgreSQL store is opened (~40 ms)
    import psycopg

RECONNECT_S: Final = 60.0  # how long a dropped connection is tried again before giving up


@dataclass(frozen=True)
class Column:
    """One column: its name and its type in SQLite and in PostgreSQL (None: not there)."""

    name: str
    sqlite: str | None
    postgres: str | None


@dataclass(frozen=True)
class Table:
    """A table of a store: columns, primary key, and indexes (name: columns)."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    indexes: tuple[tuple[str, str], ...] = ()

    def ddl(self, dialect: str) -> str:
        """``CREATE TABLE IF NOT EXISTS`` (and its indexes) in ``dialect``."""
        parts = [
            f"{c.name} {kind}"
            for c in self.columns
            if (kind := c.sqlite if dialect == "sqlite" else c.postgres) is not None
        ]
        parts.append(f"PRIMARY KEY ({', '.join(self.key)})")
        statements = [f"CREATE TABLE IF NOT EXISTS {self.name} ({', '.join(parts)})"]
        statements += [
            f"CREATE INDEX IF NOT EXISTS {name} ON {self.name} ({columns})"
            for name, columns in self.indexes
        ]
        return ";\n".join(statements) + ";\n"

    def upsert(self) -> str:
        """PostgreSQL's ending of an ``INSERT`` that replaces a row with the same key."""
        rest = [c.name for c in self.columns if c.sqlite is not None and c.name not in self.key]
        sets = ", ".join(f"{name} = EXCLUDED.{name}" for name in rest)
        action = f"DO UPDATE SET {sets}" if sets else "DO NOTHING"
        return f" ON CONFLICT ({', '.join(self.key)}) {action}"


class Cursor(Protocol):
    """What the store reads from a statement's result."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """The part of a DB-API connection the store uses (sqlite3's, or :class:`PgConnection`)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any: ...

    def close(self) -> None: ...


_INSERT = re.compile(r"^\s*INSERT OR (REPLACE|IGNORE) INTO (\w+)", re.IGNORECASE)


def postgres_sql(sql: str, tables: dict[str, Table]) -> str:
    """``sql`` as written for SQLite, said for PostgreSQL (placeholders, upserts)."""
    text = sql.replace("%", "%%").replace("?", "%s")
    match = _INSERT.match(text)
    if match is None:
        return text
    table = tables[match.group(2)]
    ending = table.upsert() if match.group(1).upper() == "REPLACE" else " ON CONFLICT DO NOTHING"
    return f"INSERT INTO {match.group(2)}{text[match.end() :]}{ending}"


class PgConnection:
    """A psycopg connection (autocommit) that runs the store's SQLite-worded statements."""

    def __init__(
        self,
        url: StoreUrl,
        tables: Iterable[Table],
        *,
        schema: str = "public",
        read_only: bool = False,
    ) -> None:
        self.url = url
        self.schema = schema
        # said again on every new connection
        self._session = ["SET default_transaction_read_only = on"] if read_only else []
        if schema != "public":
            self._session.append(f"SET search_path TO {schema}")
        self._tables = {table.name: table for table in tables}
        self._said: dict[str, str] = {}
        self._depth = 0  # transactions open
        self._conn = self._connect()

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            import psycopg
        except ImportError:
            raise StoreError(
                f"store {self.url}: PostgreSQL needs psycopg (pip install 'assay[postgres]')"
            ) from None

        try:
            conn = psycopg.connect(self.url.url, autocommit=True, connect_timeout=10)
            if self.schema != "public":
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
            for statement in self._session:
                conn.execute(statement)
        except psycopg.Error as exc:
            raise StoreError(f"cannot open store {self.url}: {first_line(exc)}") from None
        return conn

    def _sql(self, sql: str) -> str:
        said = self._said.get(sql)
        if said is None:
            said = self._said[sql] = postgres_sql(sql, self._tables)
        return said

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        """Run one statement (outside a transaction: again on a new connection if the server
        dropped this one)."""
        return self._run(lambda: self._conn.execute(self._sql(sql), parameters or None))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any:
        """Run one statement for each of ``parameters``, pipelined."""
        rows = list(parameters)
        cursor = self._conn.cursor()
        if rows:
            self._run(lambda: cursor.executemany(self._sql(sql), rows))
        return cursor

    def executescript(self, script: str) -> None:
        self._run(lambda: self._conn.execute(script.encode()))

    def has_table(self, name: str) -> bool:
        # unqualified: found where the connection's search_path makes tables
        row = self.execute("SELECT to_regclass(?) IS NOT NULL", (name,))
        return bool(row.fetchone()[0])

    def transaction(self, work: Callable[[], None]) -> None:
        """Run ``work`` in one transaction; redone whole on a new connection if the server
        dropped this one (for up to :data:`RECONNECT_S`)."""
        self._again(lambda: self._in_transaction(work))

    def _in_transaction(self, work: Callable[[], None]) -> None:
        self._depth += 1
        try:
            with self._conn.transaction():
                work()
        finally:
            self._depth -= 1

    def _run(self, work: Callable[[], Any]) -> Any:
        """``work`` alone (tried again on a dropped connection), or as part of a transaction
        (a dropped connection is left to the transaction, which redoes all of it)."""
        return self._guarded(work) if self._depth else self._again(work)

    def _again(self, work: Callable[[], Any]) -> Any:
        import psycopg

        deadline = time.monotonic() + RECONNECT_S
        while True:
            try:
                return self._guarded(work)
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    raise StoreError(f"store {self.url}: {first_line(exc)}") from None
                time.sleep(0.5)
                self._reopen()

    def _reopen(self) -> None:
        """A new connection in place of a dropped one (left as it is while the server is down)."""
        import psycopg

        try:
            fresh = psycopg.connect(self.url.url, autocommit=True, connect_timeout=5)
            for statement in self._session:
                fresh.execute(statement)
        except psycopg.OperationalError:
            return
        self._conn.close()
        self._conn = fresh

    def _guarded(self, work: Callable[[], Any]) -> Any:
        """Run ``work``; a database error becomes a StoreError naming the store, except a
        dropped connection, raised as it is to be tried again."""
        import psycopg

        try:
            return work()
        except psycopg.OperationalError as exc:
            if self._conn.closed or self._conn.broken or _lost(exc):
                raise
            raise StoreError(f"store {self.url}: {first_line(exc)}") from None
        except psycopg.Error as exc:
            raise StoreError(f"store {self.url}: {first_line(exc)}") from None

    def close(self) -> None:
        self._conn.close()


def _lost(exc: Exception) -> bool:
    """Whether ``exc`` says the server went away (shut down, restarted, connection reset)."""
    state = getattr(exc, "sqlstate", None)
    return state is None or str(state).startswith(("08", "57P"))


def first_line(exc: BaseException) -> str:
    """An exception's message, first line, trimmed."""
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def transaction(db: Connection, work: Callable[[], None]) -> None:
    """Run ``work`` in one transaction of ``db`` (SQLite: BEGIN/COMMIT, ROLLBACK on error)."""
    if isinstance(db, PgConnection):
        db.transaction(work)
        return
    db.execute("BEGIN")
    try:
        work()
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def has_table(db: Connection, name: str) -> bool:
    """Whether the store has table ``name`` (an older store may lack a newer table)."""
    if isinstance(db, PgConnection):
        return db.has_table(name)
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
    return found.fetchone() is not None


# Taken while a PostgreSQL store's tables are made: concurrent CREATE TABLE IF NOT EXISTS
# statements can collide in the server's catalogue.
_DDL_LOCK: Final = 0x61737361  # 'assa'


def create_tables(db: Connection, tables: Iterable[Table]) -> None:
    """Create the tables (and indexes) that do not exist yet."""
    if isinstance(db, PgConnection):
        script = "".join(table.ddl("postgres") for table in tables)

        def make() -> None:
            db.execute("SELECT pg_advisory_xact_lock(?)", (_DDL_LOCK,))
            db.executescript(script)

        db.transaction(make)
    elif isinstance(db, sqlite3.Connection):
        db.executescript("".join(table.ddl("sqlite") for table in tables))
