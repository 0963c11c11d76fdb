"""Each route's page, from the data source to HTML."""

from __future__ import annotations

from pathlib import Path

from assay.compare.comparison import compare_reports
from assay.data.fileio import is_file
from assay.errors import StoreError
from assay.production.drift import DriftRule, Observation, drift
from assay.production.store import TraceStore
from assay.view.compare_page import compare_page
from assay.view.data import RunView, ViewData
from assay.view.index_page import index_page
from assay.view.production_page import production_page
from assay.view.run_page import run_page


def index(data: ViewData) -> str:
    """Every run, by dataset; a run the store cannot give back (damaged by hand) is named in a
    note, and the others are still listed."""
    datasets: dict[str, list[RunView]] = {}
    damaged: list[str] = []
    for name, records in data.datasets().items():
        for record in records:
            try:
                datasets.setdefault(name, []).append(data.run(record.run_id))
            except StoreError as exc:
                damaged.append(str(exc))
    kept = {name: runs for name, runs in datasets.items() if runs}
    return index_page(str(data.store.path), kept, damaged)


def run(data: ViewData, run_id: str) -> str:
    view = data.run(run_id)
    dataset, note = data.dataset(view.record)
    return run_page(view, dataset, note, data.first_outputs(view.record))


def compare(data: ViewData, reference_id: str, current_id: str) -> str:
    reference, current = data.run(reference_id), data.run(current_id)
    comparison = compare_reports(current.report, reference.report)
    return compare_page(reference, current, comparison)


def production(trace_store: Path) -> str:
    """Each monitored metric's drift over every stored score, by the default rule and the
    pass flags recorded when the traces were scored."""
    if not is_file(trace_store):
        note = "no production traces yet: see assay collect, assay ingest and assay monitor"
        return production_page(str(trace_store), [], note)
    store = TraceStore(trace_store, read_only=True)
    try:
        verdicts = [
            drift(
                metric,
                [Observation(s.trace_id, s.value, s.passed) for s in store.scores(metric)],
                DriftRule(),
            )
            for metric in sorted(store.metrics())
        ]
    finally:
        store.close()
    return production_page(str(trace_store), verdicts)
