"""Whole documents kept in the run store by name: the adversarial lane's history on a team's
PostgreSQL store, where a file in one machine's ``.assay/`` would not be shared.

An update reads, changes and writes a document in one transaction under a lock on its name
(PostgreSQL's advisory lock), so two CI jobs recording at once both land.
"""

from __future__ import annotations

from collections.abc import Callable

from assay.store.backend import Connection, PgConnection, has_table, transaction
from assay.store.location import StoreName


class StoredDocuments:
    """The ``documents`` table of a run store (``db``: its open connection)."""

    db: Connection
    path: StoreName

    def document(self, name: str) -> bytes | None:
        """The document called ``name``; None when there is none."""
        if not has_table(self.db, "documents"):
            return None
        row = self.db.execute("SELECT body FROM documents WHERE name = ?", (name,)).fetchone()
        return None if row is None else bytes(row[0])

    def update_document(
        self, name: str, change: Callable[[bytes | None], bytes], *, stamp: str
    ) -> None:
        """Replace document ``name`` by ``change(its body or None)``, atomically."""

        def work() -> None:
            if isinstance(self.db, PgConnection):
                self.db.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (name,))
            found = self.db.execute("SELECT body FROM documents WHERE name = ?", (name,))
            row = found.fetchone()
            body = change(None if row is None else bytes(row[0]))
            self.db.execute(
                "INSERT OR REPLACE INTO documents VALUES (?, ?, ?)", (name, stamp, body)
            )

        transaction(self.db, work)
