"""The viewer's JSON API under ``/api/``: runs, one run's report and rows, comparisons, trends.

Every answer is read from the store on request, as the pages are. ``/api/openapi.json``
describes each route (:mod:`assay.view.openapi`). A run's report and its ``rows.csv`` are
streamed from a connection of their own, so a large run is never held in memory and a long
download does not hold up other requests.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from typing import Any, Final

from assay.compare.comparison import compare_reports
from assay.data.results import passes, threshold_for
from assay.engine.rebuild import report_from_store, rows_from_store, stored_rows
from assay.errors import NotFound, UsageError
from assay.report.failing import REDACTED, redacted_row
from assay.report.json_stream import iter_json
from assay.report.model import MetricAggregate, Row
from assay.store.schema import RunRecord
from assay.view.data import ViewData
from assay.view.openapi import OPENAPI

API_SCHEMA: Final = "assay.api.v1"
MAX_PAGE: Final = 500
CSV_COLUMNS: Final = (
    "sample_id", "repetition", "tags", "metric", "status", "score", "threshold", "reason",
)  # fmt: skip
SUT_STAGE: Final = "system-under-test"

# (content type, body): a body is text, or bytes streamed piece by piece
Answer = tuple[str, str | Iterable[bytes]]


def api_route(data: ViewData, path: str, query: dict[str, list[str]]) -> Answer:
    """The answer to one GET under ``/api/``; NotFound or UsageError for a bad request."""
    if path == "/api/openapi.json":
        return "application/json", json.dumps(OPENAPI, indent=2)
    if path == "/api/runs":
        return "application/json", _dump(runs_page(data, query))
    if path == "/api/compare":
        return "application/json", compare(data, _one(query, "a"), _one(query, "b"))
    if path == "/api/trend":
        return "application/json", _dump(trend(data, _one(query, "metric"), query))
    parts = path.split("/")  # '', 'api', 'runs', <id>[, 'rows.csv']
    if len(parts) in (4, 5) and parts[2] == "runs" and parts[3]:
        from urllib.parse import unquote

        run_id = unquote(parts[3])
        if len(parts) == 4:
            return "application/json", run_report(data, run_id)
        if parts[4] == "rows.csv":
            return "text/csv", rows_csv(data, run_id)
    raise NotFound(f"no API route at {path}")


def _dump(document: dict[str, Any]) -> str:
    return json.dumps({"schema_version": API_SCHEMA, **document}, ensure_ascii=False)


def _one(query: dict[str, list[str]], name: str, default: str | None = None) -> str:
    values = query.get(name)
    if values and values[0]:
        return values[0]
    if default is not None:
        return default
    raise UsageError(f"missing query parameter '{name}'")


def _count(query: dict[str, list[str]], name: str, default: int, top: int) -> int:
    text = _one(query, name, str(default))
    if not text.isdigit() or not 0 <= int(text) <= top:
        raise UsageError(f"query parameter '{name}' must be a whole number from 0 to {top}")
    return int(text)


def run_summary(record: RunRecord) -> dict[str, Any]:
    """A run as the API lists it."""
    config = record.config
    return {
        "run_id": record.run_id,
        "dataset": record.dataset_name,
        "status": record.status,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "branch": config.get("branch"),
        "tags": config.get("sample_tags", []),
        "metrics": config.get("metrics", []),
        "executions": record.executions,
        "errored": record.errored,
    }


def runs_page(data: ViewData, query: dict[str, list[str]]) -> dict[str, Any]:
    """Runs newest first, filtered by dataset, branch and sample tag, a page at a time."""
    limit = _count(query, "limit", 50, MAX_PAGE)
    offset = _count(query, "offset", 0, 2**31)
    dataset, branch, tag = (query.get(k, [None])[0] for k in ("dataset", "branch", "tag"))
    matched = [
        run_id
        for run_id, name, config in data.run_index()
        if (dataset is None or name == dataset)
        and (branch is None or config.get("branch") == branch)
        and (tag is None or tag in config.get("sample_tags", []))
    ]
    page = [run_summary(data.record(run_id)) for run_id in matched[offset : offset + limit]]
    following = offset + limit if offset + limit < len(matched) else None
    return {
        "total": len(matched),
        "offset": offset,
        "limit": limit,
        "next_offset": following,
        "runs": page,
    }


def run_report(data: ViewData, run_id: str) -> Iterator[bytes]:
    """A stored run's report JSON, as ``assay report RUN -f json`` writes it, streamed."""
    data.record(run_id)  # no such run: a StoreError now, before the answer starts
    return _report_stream(data, run_id)


def _report_stream(data: ViewData, run_id: str) -> Iterator[bytes]:
    store = data.reader()
    try:
        report = report_from_store(store, run_id, keep_rows=False)
        report = data.redacted(report)
        names = [str(n) for n in store.run_config(run_id).get("metrics", [])]
        rows = stored_rows(store, run_id, names, redact=data.redact)
        yield from iter_json(report, rows(encoded=True))
    finally:
        store.close()


def csv_lines(row: Row, thresholds: dict[str, float], redact: bool) -> list[list[Any]]:
    """One execution's lines: a line per metric (passed, failed or errored) and one for an
    error of the system under test."""
    tags = ";".join(row.tags)
    lines: list[list[Any]] = []
    for metric, message in row.errors.items():
        threshold = None if metric == SUT_STAGE else threshold_for(thresholds, metric)
        reason = REDACTED if redact else message
        lines.append([row.id, row.repetition, tags, metric, "errored", None, threshold, reason])
    for metric, scored in row.scores.items():
        threshold = threshold_for(thresholds, metric)
        ok = passes(scored.score, threshold)
        reason = "" if ok else f"scored {scored.score:.4f}, below the threshold {threshold}"
        status = "passed" if ok else "failed"
        lines.append(
            [row.id, row.repetition, tags, metric, status, scored.score, threshold, reason]
        )
    return lines


def rows_csv(data: ViewData, run_id: str) -> Iterator[bytes]:
    """A run's rows as CSV, a line per (execution, metric), streamed from the store."""
    data.record(run_id)  # no such run: a StoreError now, before the answer starts
    return _csv_stream(data, run_id)


def _csv_stream(data: ViewData, run_id: str) -> Iterator[bytes]:
    store = data.reader()
    try:
        config = store.run_config(run_id)
        thresholds = {str(k): float(v) for k, v in config.get("thresholds", {}).items()}
        names = [str(n) for n in config.get("metrics", [])]
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\r\n")
        writer.writerow(CSV_COLUMNS)
        for count, row in enumerate(rows_from_store(store, run_id, names)):
            shown = redacted_row(row) if data.redact else row
            writer.writerows(csv_lines(shown, thresholds, data.redact))
            if count % 256 == 255 or buffer.tell() > 65536:
                yield _drain(buffer)
        yield _drain(buffer)
    finally:
        store.close()


def _drain(buffer: io.StringIO) -> bytes:
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text.encode("utf-8")


def compare(data: ViewData, reference_id: str, current_id: str) -> str:
    """Run ``b`` compared with run ``a`` (its reference): ``assay compare``'s JSON."""
    reference, current = data.run(reference_id), data.run(current_id)
    comparison = compare_reports(current.report, reference.report)
    return comparison.model_dump_json()


def trend(data: ViewData, metric: str, query: dict[str, list[str]]) -> dict[str, Any]:
    """A metric's mean and pass rate over the newest ``limit`` runs that scored it (of a
    dataset or branch when asked), oldest first."""
    limit = _count(query, "limit", 30, MAX_PAGE)
    dataset, branch = (query.get(k, [None])[0] for k in ("dataset", "branch"))
    points: list[dict[str, Any]] = []
    for run_id, name, config in data.run_index():
        if len(points) >= limit:
            break
        if metric not in config.get("metrics", []) or dataset not in (None, name):
            continue
        if branch is not None and config.get("branch") != branch:
            continue
        found = next((m for m in data.run(run_id).report.metrics if m.name == metric), None)
        if found is not None:
            points.append(_point(data.record(run_id), found))
    return {"metric": metric, "points": points[::-1]}


def _point(record: RunRecord, found: MetricAggregate) -> dict[str, Any]:
    return {
        "run_id": record.run_id,
        "dataset": record.dataset_name,
        "created_at": record.created_at,
        "branch": record.config.get("branch"),
        "mean": found.mean,
        "pass_rate": found.pass_rate,
        "scored": found.scored,
        "failed": found.failed,
        "errored": found.errored,
    }
