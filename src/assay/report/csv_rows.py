"""CSV of the rows (``--format csv``): one line per execution and metric, for a spreadsheet.

Columns: ``sample_id, repetition, tags, metric, status, score, threshold, reason``. The status
is ``passed`` or ``failed`` (scored below the metric's threshold: the one pass rule) or
``errored`` (could not be scored: no score, the reason is the error). A failure of the system
under test is one ``errored`` line with the metric ``system-under-test``. Tags are joined by
``;``. Rows are written as they are read, so a run of any size streams in flat memory.
A cell that starts with ``=``, ``+``, ``-`` or ``@`` is prefixed with ``'`` so a spreadsheet
shows it as text instead of running it as a formula (CWE-1236).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping

from assay.data.results import passes
from assay.report.model import Report, Row, RowScore

HEADER = ("sample_id", "repetition", "tags", "metric", "status", "score", "threshold", "reason")
SUT_KEY = "system-under-test"
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def iter_csv(report: Report, rows: Iterable[Row] | None = None) -> Iterator[bytes]:
    """The CSV, header first, as UTF-8 chunks (one per row)."""
    thresholds = {m.name: m.threshold for m in report.metrics}
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(HEADER)
    for row in report.rows if rows is None else rows:
        for line in row_lines(row, thresholds):
            writer.writerow([spreadsheet_safe(cell) for cell in line])
        yield buffer.getvalue().encode("utf-8")
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode("utf-8")


def render_csv(report: Report) -> str:
    """The whole CSV as one string (a report that holds its rows)."""
    return b"".join(iter_csv(report)).decode("utf-8")


def row_lines(row: Row, thresholds: Mapping[str, float]) -> Iterator[list[str]]:
    """The CSV lines of one execution: scored metrics, errored metrics, a failed system."""
    head = [row.id, str(row.repetition), ";".join(row.tags)]
    for metric, cell in row.scores.items():
        threshold = thresholds.get(metric, 0.5)
        status = "passed" if passes(cell.score, threshold) else "failed"
        score = repr(cell.score)
        yield [*head, metric, status, score, f"{threshold:g}", _reason(cell, status, threshold)]
    for metric, message in row.errors.items():
        limit = "" if metric == SUT_KEY else f"{thresholds.get(metric, 0.5):g}"
        yield [*head, metric, "errored", "", limit, message]


def _reason(cell: RowScore, status: str, threshold: float) -> str:
    """The metric's own reason when it gives one, else what the pass rule decided."""
    given = cell.details.get("reason")
    if isinstance(given, str) and given.strip():
        return given
    if status == "failed":
        return f"scored {cell.score:.4f}, below the threshold {threshold:g}"
    return ""


def spreadsheet_safe(cell: str) -> str:
    """A cell a spreadsheet will not evaluate as a formula."""
    return "'" + cell if cell.startswith(_FORMULA_START) else cell
