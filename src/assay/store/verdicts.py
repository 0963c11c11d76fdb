"""What the run store keeps beside a run's executions: the gate's outcome and the adversarial
compliance summary, each a JSON document replaced when written again."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from assay.data.bounded import loads_json
from assay.store.schema import damaged


class RunVerdicts:
    """The gates and compliance tables of a run store (``db``: its open connection)."""

    db: sqlite3.Connection
    path: Path

    def record_gate(self, run_id: str, result: dict[str, Any]) -> None:
        """Keep the gate's outcome of a run (its JSON), replacing an earlier one."""
        self.db.execute(
            "INSERT OR REPLACE INTO gates VALUES (?, ?, ?)",
            (run_id, int(bool(result.get("passed"))), json.dumps(result)),
        )

    def gate(self, run_id: str) -> dict[str, Any] | None:
        """The gate outcome recorded for a run; None when no gate was recorded."""
        try:
            row = self.db.execute("SELECT result FROM gates WHERE run_id = ?", (run_id,)).fetchone()
        except sqlite3.OperationalError:  # a store written before gates were recorded
            return None
        return None if row is None else self._document(run_id, row[0], "gate outcome (gates)")

    def record_compliance(self, run_id: str, summary: dict[str, Any]) -> None:
        """Keep a run's adversarial compliance summary, so re-rendered reports show it."""
        self.db.execute(
            "INSERT OR REPLACE INTO compliance VALUES (?, ?)", (run_id, json.dumps(summary))
        )

    def compliance(self, run_id: str) -> dict[str, Any] | None:
        """The compliance summary recorded for a run; None when it had no adversarial samples."""
        try:
            row = self.db.execute(
                "SELECT summary FROM compliance WHERE run_id = ?", (run_id,)
            ).fetchone()
        except sqlite3.OperationalError:  # a store opened read-only before the table existed
            return None
        return None if row is None else self._document(run_id, row[0], "compliance (compliance)")

    def record_judges(self, run_id: str, blocks: list[dict[str, Any]]) -> None:
        """Keep a run's judge blocks (agreement, corrected pass rate), for re-rendered reports."""
        self.db.execute(
            "INSERT OR REPLACE INTO judges VALUES (?, ?)",
            (run_id, json.dumps({"blocks": blocks})),
        )

    def judges(self, run_id: str) -> list[dict[str, Any]] | None:
        """The judge blocks recorded for a run; None when it had no judge metric."""
        try:
            row = self.db.execute(
                "SELECT blocks FROM judges WHERE run_id = ?", (run_id,)
            ).fetchone()
        except sqlite3.OperationalError:  # a store written before judge blocks were recorded
            return None
        if row is None:
            return None
        blocks = self._document(run_id, row[0], "judge blocks (judges)").get("blocks")
        return list(blocks) if isinstance(blocks, list) else None

    def _document(self, run_id: str, text: str, what: str) -> dict[str, Any]:
        """A stored JSON object of a run; a StoreError naming ``what`` if it is not one."""
        with damaged(self.path, run_id, f"the stored {what}"):
            return dict(loads_json(text, ValueError))
