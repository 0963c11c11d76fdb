"""The content hash of every sample of a run, and forgetting samples a resume scores again.

A resumed run must score the dataset it began with: the store keeps each sample's content hash
(table ``sample_hashes``) so a resume can name the first sample edited since. With
``--resume-changed`` the stored executions of the changed samples are forgotten (rows deleted,
and a chunk holding one split back into rows without it) so they are scored again, alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from assay.store.backend import transaction
from assay.store.chunks import chunk_entries
from assay.store.runs import RunStore
from assay.store.schema import INSERT_SAMPLE_HASH, decode_json, encode_json, has_table

_ROW = "INSERT OR REPLACE INTO executions VALUES (?, ?, ?, ?, ?, ?, 0, NULL, ?)"


def save_hashes(store: RunStore, run_id: str, hashes: Mapping[str, str]) -> None:
    """Record (or replace) the content hash of each sample id of ``run_id``, in one commit."""
    rows = [(run_id, key, value) for key, value in hashes.items()]
    transaction(store.db, lambda: store.db.executemany(INSERT_SAMPLE_HASH, rows))


def stored_hashes(store: RunStore, run_id: str) -> dict[str, str]:
    """The content hashes recorded when ``run_id`` began (none for a run of an older assay)."""
    if not has_table(store.db, "sample_hashes"):
        return {}
    query = "SELECT sample_id, content_hash FROM sample_hashes WHERE run_id = ?"
    return {str(key): str(value) for key, value in store.db.execute(query, (run_id,))}


def forget(store: RunStore, run_id: str, sample_ids: Iterable[str]) -> None:
    """Delete every stored execution of ``sample_ids`` in ``run_id`` (and their hashes)."""
    gone = set(sample_ids)
    if not gone:
        return
    store.flush()
    db = store.db

    def work() -> None:
        for sample_id in gone:
            db.execute(
                "DELETE FROM executions WHERE run_id = ? AND sample_id = ?", (run_id, sample_id)
            )
            db.execute(
                "DELETE FROM sample_hashes WHERE run_id = ? AND sample_id = ?", (run_id, sample_id)
            )
        _split_chunks(store, run_id, gone)

    transaction(db, work)


def _split_chunks(store: RunStore, run_id: str, gone: set[str]) -> None:
    """Each chunk holding one of ``gone``: deleted, its other executions kept as rows."""
    db = store.db
    chunks = db.execute(
        "SELECT position, repetition, keys, rows FROM chunks WHERE run_id = ?", (run_id,)
    ).fetchall()
    for position, repetition, keys, rows in chunks:
        if not gone.intersection(decode_json(keys)["ids"]):
            continue
        kept = [
            (run_id, entry[0], entry[1], place, entry[2], entry[3], entry[4])
            for place, _, entry in chunk_entries([(keys, rows)], encode_json)
            if entry[0] not in gone
        ]
        db.execute(
            "DELETE FROM chunks WHERE run_id = ? AND position = ? AND repetition = ?",
            (run_id, position, repetition),
        )
        db.executemany(_ROW, kept)
