"""Build ``Report`` objects straight from synthetic per-row scores, without the runner.

``make_report({"s1": {"tags": ["policy"], "scores": {"exact-match": [1.0]}}})`` gives a
one-sample report; a score of ``None`` records a metric failure for that repetition, and
``"sut_error": [rep, ...]`` marks repetitions where the system under test failed.
Aggregates are computed here with numpy so tests control every number in the report.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from assay.report.model import (
    Bucket,
    Cohort,
    CohortMetric,
    DatasetInfo,
    Failure,
    MetricAggregate,
    Report,
    Row,
    RowScore,
    RunInfo,
    Summary,
    SystemUnderTestInfo,
    Usage,
)

SUT = "system-under-test"


def _hash(sample_id: str) -> str:
    return hashlib.sha256(f"content-of-{sample_id}".encode("utf-8", "surrogatepass")).hexdigest()


def _histogram(values: list[float]) -> list[Bucket]:
    counts = [0] * 10
    for value in values:
        counts[min(9, int(round(value, 10) * 10))] += 1
    return [Bucket(lower=i / 10, upper=(i + 1) / 10, count=c) for i, c in enumerate(counts)]


def _stats(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "p50": None, "p95": None, "min": None, "max": None, "pass_rate": None}
    array = np.asarray(values)
    return {
        "mean": float(array.mean()),
        "p50": float(np.percentile(array, 50)),
        "p95": float(np.percentile(array, 95)),
        "min": float(array.min()),
        "max": float(array.max()),
        "pass_rate": float(np.mean(array >= 0.5)),
    }


def make_report(
    samples: Mapping[str, Mapping[str, Any]],
    *,
    dataset: str = "demo",
    run_id: str = "run-1",
    metrics: list[str] | None = None,
    hashes: Mapping[str, str] | None = None,
) -> Report:
    """Report for ``{sample_id: {"tags": [...], "scores": {metric: [score|None per rep]}}}``."""
    names = list(metrics or dict.fromkeys(m for s in samples.values() for m in s.get("scores", {})))
    rows: list[Row] = []
    failures: list[Failure] = []
    repetitions = max(
        (len(v) for s in samples.values() for v in s.get("scores", {}).values()), default=1
    )
    for sample_id, spec in samples.items():
        tags = list(spec.get("tags", []))
        sut_errors = set(spec.get("sut_error", []))
        for rep in range(repetitions):
            scores: dict[str, RowScore] = {}
            errors: dict[str, str] = {}
            if rep in sut_errors:
                errors[SUT] = "system under test raised"
                failures.append(
                    Failure(
                        sample_id=sample_id,
                        repetition=rep,
                        stage="system-under-test",
                        metric=None,
                        message="boom",
                    )
                )
            else:
                for metric in names:
                    values = spec.get("scores", {}).get(metric)
                    if values is None or rep >= len(values):
                        continue
                    value = values[rep]
                    if value is None:
                        errors[metric] = "metric failed"
                        failures.append(
                            Failure(
                                sample_id=sample_id,
                                repetition=rep,
                                stage="metric",
                                metric=metric,
                                message="metric failed",
                            )
                        )
                    else:
                        scores[metric] = RowScore(score=value, passed=value >= 0.5)
            rows.append(
                Row(
                    id=sample_id,
                    row_hash=(hashes or {}).get(sample_id, _hash(sample_id)),
                    repetition=rep,
                    tags=tags,
                    passed=not errors and all(s.passed for s in scores.values()),
                    scores=scores,
                    errors=errors,
                )
            )

    aggregates: list[MetricAggregate] = []
    for metric in names:
        values = [r.scores[metric].score for r in rows if metric in r.scores]
        errored = sum(1 for r in rows if metric in r.errors)
        skipped = sum(1 for r in rows if SUT in r.errors)
        attempted = len(rows)
        aggregates.append(
            MetricAggregate(
                name=metric,
                attempted=attempted,
                scored=len(values),
                failed=sum(1 for v in values if v < 0.5),
                errored=errored,
                skipped=skipped,
                coverage=len(values) / attempted if attempted else None,
                histogram=_histogram(values),
                **_stats(values),
            )
        )

    cohort_tags = sorted({t for r in rows for t in r.tags}, key=lambda t: t.encode())
    cohorts: list[Cohort] = []
    for tag in [*cohort_tags, None]:
        members = [r for r in rows if (tag in r.tags if tag is not None else not r.tags)]
        if tag is None and not members:
            continue
        cohort_metrics = []
        for metric in names:
            values = [r.scores[metric].score for r in members if metric in r.scores]
            stats = _stats(values)
            cohort_metrics.append(
                CohortMetric(
                    name=metric,
                    scored=len(values),
                    failed=sum(1 for v in values if v < 0.5),
                    errored=sum(1 for r in members if metric in r.errors),
                    mean=stats["mean"],
                    p50=stats["p50"],
                    p95=stats["p95"],
                    pass_rate=stats["pass_rate"],
                )
            )
        cohorts.append(
            Cohort(
                name=tag,
                label=tag if tag is not None else "(untagged)",
                is_untagged=tag is None,
                samples=len(members),
                metrics=cohort_metrics,
            )
        )

    rates = [a.pass_rate for a in aggregates if a.pass_rate is not None]
    return Report(
        dataset=DatasetInfo(name=dataset, schema_version="assay.dataset.v1", samples=len(samples)),
        run=RunInfo(
            run_id=run_id,
            assay_version="0.1.0",
            started_at="2026-01-01T00:00:00Z",
            finished_at="2026-01-01T00:01:00Z",
            duration_seconds=60.0,
            system_under_test=SystemUnderTestInfo(kind="saved-outputs"),
            repetitions=repetitions,
        ),
        summary=Summary(
            total_samples=len(samples),
            total_executions=len(rows),
            failed_rows=sum(1 for r in rows if not r.errors and not r.passed),
            errored_rows=sum(1 for r in rows if r.errors),
            sut_errors=sum(1 for f in failures if f.stage == "system-under-test"),
            metric_errors=sum(1 for f in failures if f.stage == "metric"),
            pass_rate=float(np.mean([r.passed for r in rows])) if rows else None,
            macro_f1=float(np.mean(rates)) if rates else None,
            macro_f1_excluded=[a.name for a in aggregates if a.pass_rate is None],
        ),
        metrics=aggregates,
        cohorts=cohorts,
        usage=Usage(),
        failures=failures,
        rows=rows,
    )


def from_matrix(
    scores: Mapping[str, np.ndarray],
    *,
    tags: list[list[str]] | None = None,
    run_id: str = "run",
    dataset: str = "sim",
) -> Report:
    """Report from ``{metric: array of shape (samples, repetitions)}`` (NaN = metric failure)."""
    first = next(iter(scores.values()))
    n = first.shape[0]
    samples: dict[str, dict[str, Any]] = {}
    for i in range(n):
        samples[f"s{i:04d}"] = {
            "tags": tags[i] if tags else [],
            "scores": {
                metric: [None if np.isnan(v) else float(v) for v in np.atleast_1d(matrix[i])]
                for metric, matrix in scores.items()
            },
        }
    return make_report(samples, run_id=run_id, dataset=dataset)
