"""``-f padosoft-json``: a report under padosoft/eval-harness's key names, for tools built on them.

assay's own report (``assay.report.v2``) says *failed* only for rows below their threshold and
*errored* for rows that could not be scored. padosoft's report calls the captured errors
``total_failures`` and ``failures``; this compatibility format keeps those names (and their
meaning) so a dashboard reading padosoft's JSON reads assay's unchanged. It carries the keys that
assay has an equal for (identity, counts, per-metric aggregates, histograms, cohorts, macro-F1,
failures); padosoft's usage, cost, precision and per-sample blocks are not written.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from assay.report.model import Bucket, MetricAggregate, Report

PADOSOFT_SCHEMA = "eval-harness.report.v1"


def _unix(stamp: str) -> float | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _aggregate(mean: float | None, p50: float | None, p95: float | None, rate: float | None) -> Any:
    """padosoft's {mean, p50, p95, pass_rate}: 0.0 where nothing was scored (its convention)."""
    return {
        "mean": mean or 0.0,
        "p50": p50 or 0.0,
        "p95": p95 or 0.0,
        "pass_rate": round(rate or 0.0, 6),
    }


def _metric(m: MetricAggregate) -> Any:
    return _aggregate(m.mean, m.p50, m.p95, m.pass_rate)


def _buckets(histogram: list[Bucket]) -> list[dict[str, Any]]:
    return [{"min": b.lower, "max": b.upper, "count": b.count} for b in histogram]


def padosoft_document(report: Report) -> dict[str, Any]:
    """The report as padosoft's ``eval-harness.report.v1`` keys (captured errors: failures)."""
    run = report.run
    return {
        "schema_version": PADOSOFT_SCHEMA,
        "dataset_schema_version": report.dataset.schema_version,
        "dataset": report.dataset.name,
        "started_at": _unix(run.started_at),
        "finished_at": _unix(run.finished_at),
        "duration_seconds": run.duration_seconds,
        "total_samples": report.summary.total_samples,
        "total_executions": report.summary.total_executions,
        "repetitions": run.repetitions,
        "total_failures": len(report.failures),  # padosoft: captured errors, not low scores
        "pass_rate": round(report.summary.pass_rate or 0.0, 6),
        "macro_f1": report.summary.macro_f1 or 0.0,
        "metrics": {m.name: _metric(m) for m in report.metrics},
        "metric_distributions": {m.name: _buckets(m.histogram) for m in report.metrics},
        "cohorts": [
            {
                "name": c.name,
                "label": c.label,
                "is_untagged": c.is_untagged,
                "sample_count": c.samples,
                "metrics": {
                    m.name: _aggregate(m.mean, m.p50, m.p95, m.pass_rate) for m in c.metrics
                },
            }
            for c in report.cohorts
        ],
        "failures": [
            {
                "sample_id": f.sample_id,
                "metric": f.metric or f.stage,
                "error": f.message,
                "repetition": f.repetition,
            }
            for f in report.failures
        ],
    }


def render_padosoft(report: Report) -> str:
    return json.dumps(padosoft_document(report), indent=2, ensure_ascii=False) + "\n"
