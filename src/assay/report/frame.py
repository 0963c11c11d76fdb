"""``Report.to_dataframe()``: one pandas row per (execution, metric), pandas imported lazily.

A row is one metric on one repetition of one sample, with the status in the two words the
reports use: ``passed`` / ``failed`` (scored at / below the metric's threshold) or ``errored``
(could not be scored; ``score`` is empty and ``reason`` says why). A system-under-test error
is one ``errored`` row whose metric is ``system-under-test``, as in the failing-rows listing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.data.results import SUT_STAGE
from assay.errors import UsageError

if TYPE_CHECKING:
    import pandas

    from assay.report.model import Report, Row

COLUMNS = (
    "sample_id",
    "repetition",
    "tags",
    "metric",
    "status",
    "score",
    "threshold",
    "reason",
)


def frame_rows(report: Report) -> list[dict[str, Any]]:
    """The frame's rows as plain dicts, in report row order then the report's metric order."""
    thresholds = {m.name: m.threshold for m in report.metrics}
    order = {name: i for i, name in enumerate([SUT_STAGE, *thresholds])}
    result: list[dict[str, Any]] = []
    for row in report.rows:
        cells = _cells(row, thresholds)
        cells.sort(key=lambda cell: order.get(cell["metric"], len(order)))
        result.extend(cells)
    return result


def _cells(row: Row, thresholds: dict[str, float]) -> list[dict[str, Any]]:
    base = {"sample_id": row.id, "repetition": row.repetition, "tags": list(row.tags)}
    cells = [
        {
            **base,
            "metric": name,
            "status": "passed" if scored.passed else "failed",
            "score": scored.score,
            "threshold": thresholds.get(name),
            "reason": None,
        }
        for name, scored in row.scores.items()
    ]
    cells.extend(
        {
            **base,
            "metric": name,
            "status": "errored",
            "score": None,
            "threshold": thresholds.get(name),
            "reason": message,
        }
        for name, message in row.errors.items()
    )
    return cells


def to_dataframe(report: Report) -> pandas.DataFrame:
    """Flatten ``report``'s rows; raises UsageError without pandas or without rows."""
    try:
        import pandas as pd
    except ImportError:
        raise UsageError("to_dataframe() needs pandas: pip install 'assay[pandas]'") from None
    if not report.rows and report.summary.total_executions:
        raise UsageError(
            "this report holds no per-execution rows (a streamed report); "
            "rebuild it with 'assay report RUN_ID -f json' or use assay.evaluate()"
        )
    frame = pd.DataFrame(frame_rows(report), columns=list(COLUMNS))
    frame["score"] = frame["score"].astype("float64")
    frame["threshold"] = frame["threshold"].astype("float64")
    return frame
