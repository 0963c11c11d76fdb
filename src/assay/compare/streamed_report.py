"""A report to compare against, with its rows read when they are walked, not held.

``--compare`` needs every row of the reference report once, to pool each sample's scores
(:class:`assay.compare.pairing.SampleTable`). A million-row report is gigabytes as models; here the
report file is scanned once (:mod:`assay.data.json_items`) keeping each row's byte span, and a
stored run's rows come from the run store, so only one row is a model at a time. A report file
the scan does not take (or a small one) is read whole, as before, with the same errors.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from assay.data.json_items import ItemScan, SpanReader
from assay.errors import InputError, NotIndexable, StoreError
from assay.report.model import Report, Row

SCAN_MIN_BYTES = 8 * 1024 * 1024  # smaller report files are simply read whole


@dataclass(frozen=True)
class StreamedReport:
    """A report without its rows (``report.rows`` is empty when they are streamed), and the
    rows, each call a new pass in report order."""

    report: Report
    rows: Callable[[], Iterable[Row | bytes]]  # a run store's rows come as their JSON

    @classmethod
    def whole(cls, report: Report) -> StreamedReport:
        return cls(report, lambda: report.rows)


def stream_report_file(path: Path, load_whole: Callable[[Path], Report]) -> StreamedReport:
    """A report JSON with its rows left on disk when it is large; else ``load_whole(path)``,
    which also reports any problem with the file."""
    try:
        large = path.stat().st_size >= SCAN_MIN_BYTES
    except OSError:
        large = False
    scanned = _scanned(path) if large else None
    if scanned is None:
        return StreamedReport.whole(load_whole(path))
    header, spans = scanned
    try:
        report = Report.model_validate({**header, "rows": []})
    except ValidationError:
        return StreamedReport.whole(load_whole(path))
    return StreamedReport(report, lambda: _rows_at(path, spans))


def _scanned(path: Path) -> tuple[dict[str, Any], array[int]] | None:
    """The report's other members and each row's byte span; None: read it whole."""
    scan = ItemScan(path, "rows")
    spans = array("q")
    try:
        for item in scan.items():
            spans.extend((item.start, item.end))
    except NotIndexable:
        return None
    if scan.kind != "array" or scan.header.get("schema_version") not in (
        "assay.report.v1",
        "assay.report.v2",
    ):
        return None
    return scan.header, spans


def refuse_repeated(row: Row, seen: set[tuple[str, int]], file: str) -> None:
    """Refuse a second row of one (sample, repetition) in a report file: compare and the gate
    would pool both as if they were two repetitions. ``seen`` collects the keys read so far."""
    key = (row.id, row.repetition)
    if key in seen:
        raise InputError(
            f"a second row for repetition {row.repetition} (a report has one row per sample and "
            "repetition)",
            file=file,
            sample=row.id,
        )
    seen.add(key)


def _rows_at(path: Path, spans: array[int]) -> Iterator[Row]:
    """The rows of a scanned report file, validated one at a time."""
    reader = SpanReader(path)
    seen: set[tuple[str, int]] = set()
    for index in range(0, len(spans), 2):
        try:
            row = _row(reader.text(spans[index], spans[index + 1]))
        except (ValueError, RecursionError, OSError) as exc:  # ValidationError is a ValueError
            problem = "the file changed while it was read"
            if isinstance(exc, ValidationError):
                problem = f"not a valid assay report: {exc.errors()[0]['msg']}"
            raise InputError(problem, file=str(path), field=f"rows.{index // 2}") from None
        refuse_repeated(row, seen, str(path))
        yield row


def _row(text: str) -> Row:
    """One row, validated from its JSON in one step (about a third less CPU than parsing first).
    A row that step refuses is read as a whole report is read, so it is refused (or, for JSON
    only the stdlib takes, such as a lone surrogate escape, accepted) with the same words."""
    try:
        return Row.model_validate_json(text)
    except ValidationError:
        return Row.model_validate(json.loads(text))


def stream_stored_report(store_path: Path, run_id: str) -> StreamedReport:
    """A stored run's report, its rows read from the run store on each pass."""
    from assay.engine.rebuild import report_from_store, stored_rows
    from assay.store.runs import RunStore

    if not store_path.is_file():
        raise StoreError(f"no run store at {store_path}")
    store = RunStore(store_path)
    try:
        report = report_from_store(store, run_id, keep_rows=False)
        names = [str(name) for name in store.run_config(run_id).get("metrics", [])]
    finally:
        store.close()

    def rows() -> Iterator[bytes]:
        reader = RunStore(store_path)
        try:
            rows = stored_rows(reader, run_id, names, redact=report.redacted)
            yield from cast("Iterable[bytes]", rows(encoded=True))
        finally:
            reader.close()

    return StreamedReport(report, rows)
