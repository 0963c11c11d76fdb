"""Reading an ``assay.report.v1`` document as v2: the counts renamed to one vocabulary.

In v1 a metric's ``failed`` (and a cohort metric's) counted the rows it could not score, and the
summary's ``total_failures``/``sut_failures``/``metric_failures`` counted errors. v2 says
*errored* for those and keeps *failed* for rows scored below their threshold. Baselines and
reports written before the change stay readable: the upgrade moves each count to its v2 name
and derives the below-threshold counts (``below_threshold``, or the pass rate times the scored
rows where a cohort has no such field).
"""

from __future__ import annotations

from typing import Any

V1 = "assay.report.v1"
V2 = "assay.report.v2"


def _below(entry: dict[str, Any]) -> int:
    """Scored rows below the threshold of a v1 aggregate."""
    below = entry.get("below_threshold")
    if isinstance(below, int):
        return below
    scored, rate = entry.get("scored"), entry.get("pass_rate")
    if isinstance(scored, int) and isinstance(rate, (int, float)):
        return scored - round(rate * scored)
    return 0


def _metric(entry: object, *, keep_below: bool = False) -> Any:
    """One v1 metric aggregate with v2 counts."""
    if not isinstance(entry, dict):
        return entry
    out = dict(entry)
    errored = out.get("errored")
    out["errored"] = errored if isinstance(errored, int) else out.get("failed", 0)
    out["failed"] = _below(entry)
    if not keep_below:
        out.pop("below_threshold", None)
    return out


def _summary(summary: object) -> Any:
    """The v1 summary with v2 counts."""
    if not isinstance(summary, dict):
        return summary
    out = dict(summary)
    sut = out.pop("sut_failures", 0)
    metric = out.pop("metric_failures", 0)
    total = out.pop("total_failures", 0)
    out["sut_errors"] = sut
    out["metric_errors"] = metric
    if out.get("errored_rows") is None:
        out["errored_rows"] = total
    if out.get("failed_rows") is None:
        out["failed_rows"] = 0
    return out


def upgrade_report(data: object) -> Any:
    """A v1 report document as v2; anything else unchanged (validation judges it)."""
    if not isinstance(data, dict) or data.get("schema_version") != V1:
        return data
    out = dict(data)
    out["schema_version"] = V2
    out["summary"] = _summary(data.get("summary"))
    metrics = data.get("metrics")
    if isinstance(metrics, list):
        out["metrics"] = [_metric(m) for m in metrics]
    cohorts = data.get("cohorts")
    if isinstance(cohorts, list):
        out["cohorts"] = [_cohort(c) for c in cohorts]
    return out


def _cohort(cohort: object) -> Any:
    if not isinstance(cohort, dict) or not isinstance(cohort.get("metrics"), list):
        return cohort
    return {**cohort, "metrics": [_metric(m) for m in cohort["metrics"]]}
