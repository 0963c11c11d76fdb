"""``assay store copy SRC DST``: a store's history moved between SQLite and PostgreSQL.

Every run (its record, executions, chunks, gate outcome and compliance summary), every named
baseline and every stored document (the adversarial lane's history) is copied as stored, byte
for byte, so a report rendered from the copy is the report rendered from the original. Runs
keep their order (the order they were created in). A run that the destination already holds
is refused before anything is written: a copy never mixes two histories of one run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from assay.errors import StoreError
from assay.store.backend import Table, has_table, transaction
from assay.store.location import StoreName
from assay.store.runs import RunStore
from assay.store.schema import TABLES

# Tables copied a run at a time, then those copied whole.
_PER_RUN = ("executions", "chunks", "gates", "compliance", "judges")
_BATCH = 500


@dataclass(frozen=True)
class Copied:
    """How much a copy moved."""

    runs: int
    rows: dict[str, int]


def _table(name: str) -> Table:
    return next(table for table in TABLES if table.name == name)


def _columns(table: Table) -> list[str]:
    """The columns both databases have (PostgreSQL's explicit rowid is left to the target)."""
    return [column.name for column in table.columns if column.sqlite is not None]


def _binary(table: Table) -> set[int]:
    """Positions of the columns PostgreSQL keeps as bytes."""
    columns = [c for c in table.columns if c.sqlite is not None]
    return {i for i, c in enumerate(columns) if c.postgres and c.postgres.startswith("BYTEA")}


def _rows(
    source: RunStore, table: Table, where: str, params: Sequence[Any]
) -> list[tuple[Any, ...]]:
    """A table's rows (of one run, or all), each value as the target takes it: a JSON
    document as bytes (SQLite may hand back text or bytes; PostgreSQL gives bytes)."""
    if not has_table(source.db, table.name):  # an older store: it never had this table
        return []
    binary = _binary(table)
    found = source.db.execute(
        f"SELECT {', '.join(_columns(table))} FROM {table.name}{where}", tuple(params)
    )
    return [
        tuple(
            value.encode("utf-8")
            if i in binary and isinstance(value, str)
            else bytes(value)
            if isinstance(value, memoryview)
            else value
            for i, value in enumerate(row)
        )
        for row in found
    ]


def _insert(target: RunStore, table: Table, rows: Iterable[tuple[Any, ...]]) -> int:
    columns = _columns(table)
    statement = (
        f"INSERT OR REPLACE INTO {table.name} ({', '.join(columns)}) "
        f"VALUES ({', '.join('?' * len(columns))})"
    )
    batch = list(rows)
    for start in range(0, len(batch), _BATCH):
        target.db.executemany(statement, batch[start : start + _BATCH])
    return len(batch)


def copy_store(src: StoreName, dst: StoreName) -> Copied:
    """Copy every run and named baseline of ``src`` into ``dst`` (made if it is new)."""
    source = RunStore(src, read_only=True)
    try:
        target = RunStore(dst)
        try:
            return _copy(source, target)
        finally:
            target.close()
    finally:
        source.close()


def _copy(source: RunStore, target: RunStore) -> Copied:
    runs = _rows(source, _table("runs"), " ORDER BY created_at, rowid", ())
    ids = [str(run[0]) for run in runs]
    clash = [run_id for run_id in ids if target.has_run(run_id)]
    if clash:
        raise StoreError(
            f"{target.path} already holds run '{clash[0]}'"
            + (f" and {len(clash) - 1} more" if len(clash) > 1 else "")
            + f" of {source.path}; nothing copied (copy into a new store)"
        )
    counts = {name: 0 for name in ("runs", *_PER_RUN, "baselines", "documents")}
    for run in runs:

        def one_run(run: tuple[Any, ...] = run) -> None:
            counts["runs"] += _insert(target, _table("runs"), [run])
            for name in _PER_RUN:
                table = _table(name)
                found = _rows(source, table, " WHERE run_id = ?", (run[0],))
                counts[name] += _insert(target, table, found)

        transaction(target.db, one_run)
    for name in ("baselines", "documents"):  # named baselines; the lane's history
        table = _table(name)
        counts[name] = _insert(target, table, _rows(source, table, "", ()))
    return Copied(len(runs), counts)
