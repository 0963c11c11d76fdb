"""People's labels on a run's rows, made in the viewer's label queue.

One SQLite file beside the run store (``labels.sqlite``), so that the run store itself stays
read-only for the viewer. A label is one person's pass/fail verdict on one (run, sample,
repetition, metric), with an optional note, the annotator's name and the time; labelling the
same row again replaces that person's earlier label.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.errors import StoreError

__all__ = ["LABELS_FILE", "LABELS_SCHEMA", "HumanLabel", "LabelStore"]

LABELS_SCHEMA: Final = "assay.labels.v1"
LABELS_FILE: Final = "labels.sqlite"

_TABLE = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS labels (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    metric TEXT NOT NULL,
    annotator TEXT NOT NULL,
    label TEXT NOT NULL,
    note TEXT NOT NULL,
    labelled_at TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id, repetition, metric, annotator)
);
"""


class HumanLabel(BaseModel):
    """One person's verdict on one row of a run (``assay.labels.v1``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal["assay.labels.v1"] = LABELS_SCHEMA
    run_id: str = Field(min_length=1, max_length=200)
    sample_id: str = Field(min_length=1, max_length=1000)
    repetition: int = Field(ge=0, le=1_000_000)
    metric: str = Field(min_length=1, max_length=200)
    annotator: str = Field(min_length=1, max_length=100)
    label: Literal["pass", "fail"]
    note: str = Field(default="", max_length=2000)
    labelled_at: str = Field(min_length=1, max_length=40)


class LabelStore:
    """The labels file; safe to share between the viewer's request threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self.db.executescript(_TABLE)
            self.db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (LABELS_SCHEMA,)
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"{self.path}: cannot open the labels file ({exc})") from None
        self._lock = threading.Lock()

    def close(self) -> None:
        self.db.close()

    def add(self, label: HumanLabel) -> None:
        """Keep ``label``, replacing the same person's earlier label of the same row."""
        values = label.model_dump(exclude={"schema_version"})
        with self._lock:
            self.db.execute(
                "INSERT OR REPLACE INTO labels VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                tuple(values.values()),
            )

    def labels(self, run_id: str, metric: str | None = None) -> list[HumanLabel]:
        """A run's labels (one metric's, when given), in the order they were made."""
        query = "SELECT * FROM labels WHERE run_id = ?"
        args: tuple[str, ...] = (run_id,)
        if metric is not None:
            query += " AND metric = ?"
            args += (metric,)
        with self._lock:
            rows = self.db.execute(query + " ORDER BY labelled_at, rowid", args).fetchall()
        names = list(HumanLabel.model_fields)[1:]
        return [HumanLabel(**dict(zip(names, row))) for row in rows]
