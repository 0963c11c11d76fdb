"""Each route's page, from the data source to HTML."""

from __future__ import annotations

from assay.comparison import compare_reports
from assay.view.compare_page import compare_page
from assay.view.data import ViewData
from assay.view.index_page import index_page
from assay.view.run_page import run_page


def index(data: ViewData) -> str:
    datasets = {
        name: [data.run(record.run_id) for record in records]
        for name, records in data.datasets().items()
    }
    return index_page(str(data.store.path), datasets)


def run(data: ViewData, run_id: str) -> str:
    view = data.run(run_id)
    dataset, note = data.dataset(view.record)
    return run_page(view, dataset, note, data.answer_texts(view.record))


def compare(data: ViewData, reference_id: str, current_id: str) -> str:
    reference, current = data.run(reference_id), data.run(current_id)
    comparison = compare_reports(current.report, reference.report)
    return compare_page(reference, current, comparison)
