"""What the viewer reads: runs, their reports, gate verdicts and per-sample details.

The store is opened read-only. Reports are rebuilt from the store (the same aggregation as
``assay report``) and kept per run until the run changes. Inputs and expected values come from
the dataset file the run recorded; answers from the store, or from the saved-outputs file.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.data.dataset import Dataset, Sample
from assay.data.loading import load_dataset, load_outputs
from assay.data.outputs import Output, coerce_output
from assay.engine.rebuild import report_from_store
from assay.errors import AssayError
from assay.report.failing import REDACTED, redacted_report
from assay.report.model import Report, Row
from assay.store.location import StoreName
from assay.store.runs import RunStore
from assay.store.schema import RunRecord

MAX_RUNS = 200
CACHED_REPORTS = 32


@dataclass(frozen=True)
class RunView:
    """One stored run as the pages show it."""

    record: RunRecord
    report: Report
    gate: dict[str, Any] | None


class ViewData:
    """Read-only access to one run store, safe to share between request threads.

    With ``redact`` (``assay view --redact``) no page shows a text: reports pass through
    :func:`~assay.report.failing.redacted_report`, and no input, expected value or answer is
    read from the dataset, the store or a saved-outputs file.
    """

    def __init__(self, store_path: StoreName, *, redact: bool = False) -> None:
        self.redact = redact
        self.store = RunStore(store_path, read_only=True)
        # where relative dataset paths are looked up: the project of a SQLite store, else here
        place = store_path if isinstance(store_path, Path) else Path.cwd() / ".assay" / "x"
        self.root = place.resolve().parent.parent
        self._lock = threading.RLock()
        self._reports: OrderedDict[tuple[str, str, int], Report] = OrderedDict()
        self._files: dict[tuple[str, float], Any] = {}

    def close(self) -> None:
        self.store.db.close()

    def run_index(self) -> list[tuple[str, str, dict[str, Any]]]:
        """Every run's id, dataset and configuration, newest first (the API filters these)."""
        with self._lock:
            return self.store.run_index()

    def record(self, run_id: str) -> RunRecord:
        """A run's record (StoreError when there is no such run)."""
        with self._lock:
            return self.store.get_run(run_id)

    def reader(self) -> RunStore:
        """A read-only connection of its own, for one streamed answer (closed by its reader)."""
        return RunStore(self.store.path, read_only=True)

    def redacted(self, report: Report) -> Report:
        return redacted_report(report) if self.redact else report

    def datasets(self) -> dict[str, list[RunRecord]]:
        """Dataset name -> its runs, oldest first."""
        with self._lock:
            grouped: dict[str, list[RunRecord]] = {}
            for record in reversed(self.store.list_runs(limit=MAX_RUNS)):
                grouped.setdefault(record.dataset_name, []).append(record)
            return dict(sorted(grouped.items()))

    def run(self, run_id: str) -> RunView:
        """A run's record, report and gate verdict (StoreError when there is no such run)."""
        with self._lock:
            record = self.store.get_run(run_id)
            key = (run_id, record.updated_at, record.executions)
            report = self._reports.get(key)
            if report is None:
                report = report_from_store(self.store, run_id)
                report = redacted_report(report) if self.redact else report
                self._reports[key] = report
                while len(self._reports) > CACHED_REPORTS:
                    self._reports.popitem(last=False)
            return RunView(record, report, self.store.gate(run_id))

    def _cached(self, path: Path, loader: Callable[[Path], Any]) -> Any:
        stamp = path.stat().st_mtime
        key = (str(path), stamp)
        if key not in self._files:
            self._files[key] = loader(path)
        return self._files[key]

    def dataset(self, record: RunRecord) -> tuple[Dataset | None, str | None]:
        """The run's dataset file, or why it cannot be read now."""
        if self.redact:
            return None, f"texts are not shown ({REDACTED}: assay view --redact)"
        if not record.dataset_path:
            return None, "the run recorded no dataset file"
        given = Path(record.dataset_path)
        recorded = record.config.get("dataset_file")
        candidates = [Path(recorded)] if isinstance(recorded, str) else []
        for path in (*candidates, given, self.root / given):
            if path.is_file():
                try:
                    return self._cached(path, load_dataset), None
                except AssayError as exc:
                    return None, f"dataset file unreadable: {exc}"
        return None, f"dataset file {record.dataset_path} not found"

    def saved_outputs(self, record: RunRecord) -> dict[str, Output]:
        path = record.config.get("outputs_path")
        if not isinstance(path, str) or not Path(path).is_file():
            return {}
        try:
            outputs: dict[str, Output] = self._cached(Path(path), load_outputs)
        except AssayError:
            return {}
        return outputs

    def first_outputs(self, record: RunRecord) -> dict[str, Output]:
        """Sample id -> its (first) answer: the stored ones, else the saved-outputs file's (for
        the failing rows' answers and reasons, and the sample table's text search)."""
        if self.redact:
            return {}
        with self._lock:
            stored: dict[str, Output] = {}
            for sample_id, _, output in self.store.outputs(record.run_id):
                if sample_id not in stored:
                    stored[sample_id] = _as_output(output)
        return stored or self.saved_outputs(record)

    def answers(self, record: RunRecord, sample_id: str) -> dict[int, dict[str, Any]]:
        """A sample's answers by repetition: stored ones, else the saved-outputs file's."""
        if self.redact:
            return {}
        with self._lock:
            stored = {rep: out for _, rep, out in self.store.outputs(record.run_id, sample_id)}
        if stored:
            return stored
        saved = self.saved_outputs(record).get(sample_id)
        repetitions = int(record.config.get("repetitions", 1))
        return {} if saved is None else dict.fromkeys(range(repetitions), saved.to_json())


def _as_output(stored: dict[str, Any]) -> Output:
    """A stored answer as an Output; one that no longer reads as one keeps its text only."""
    try:
        return coerce_output(stored)
    except AssayError:
        return Output(str(stored.get("output", "")))


def sample_of(dataset: Dataset | None, sample_id: str) -> Sample | None:
    if dataset is None:
        return None
    try:
        return dataset.sample(sample_id)
    except KeyError:
        return None


def sample_detail(data: ViewData, run_id: str, sample_id: str) -> dict[str, Any]:
    """Everything the expanded row shows: input, expected, answers, scores, details, errors."""
    view = data.run(run_id)
    rows: list[Row] = [row for row in view.report.rows if row.id == sample_id]
    if not rows:
        raise KeyError(sample_id)
    dataset, note = data.dataset(view.record)
    sample = sample_of(dataset, sample_id)
    if dataset is not None and sample is None:
        note = "the dataset file no longer has this sample"
    answers = data.answers(view.record, sample_id)
    return {
        "id": sample_id,
        "tags": rows[0].tags,
        "input": sample.input if sample else None,
        "expected": sample.expected_output if sample else None,
        "note": note,
        "repetitions": [
            {
                "repetition": row.repetition,
                "answer": answers.get(row.repetition),
                "passed": row.passed,
                "scores": {k: v.model_dump() for k, v in row.scores.items()},
                "errors": row.errors,
            }
            for row in rows
        ],
    }
