"""From execution results to a :class:`Report`: aggregates, cohorts, histograms, usage.

:class:`ReportBuilder` consumes results one at a time (from a live run or from the run store),
keeping only compact per-metric score arrays and one small row per execution, so a report over
100,000 samples needs no list of full outputs in memory.
"""

from __future__ import annotations

import math
from array import array
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from assay.metrics.registry import applies
from assay.report.model import (
    UNTAGGED_LABEL,
    Bucket,
    Cohort,
    CohortMetric,
    DatasetInfo,
    Failure,
    Interval,
    MetricAggregate,
    ModelUsage,
    Repetitions,
    Report,
    Row,
    RowScore,
    RunInfo,
    SampleAggregate,
    Summary,
    Usage,
    UsageBlock,
    trusted,
)
from assay.results import (
    DEFAULT_THRESHOLD,
    SUT_STAGE,
    ExecutionResult,
    Thresholds,
    passes,
    threshold_for,
)

HISTOGRAM_BUCKETS = 10
_ROUND = 10**10


# --------------------------------------------------------------------------- statistics


def percentile(sorted_values: np.ndarray, q: float) -> float | None:
    """Linear-interpolation percentile (numpy 'linear', Excel PERCENTILE.INC); None if empty."""
    if sorted_values.size == 0:
        return None
    return float(np.percentile(sorted_values, q, method="linear"))


def histogram(values: np.ndarray, buckets: int = HISTOGRAM_BUCKETS) -> list[Bucket]:
    """Equal-width buckets over [0, 1]; scores rounded to 10 decimals first, 1.0 in the last bucket.

    Bucketing uses integer arithmetic on the rounded score, so 0.3 lands in [0.3, 0.4) and
    0.7 - 0.4 does too, with no float artefacts at the edges.
    """
    counts = np.zeros(buckets, dtype=np.int64)
    if values.size:
        scaled = np.rint(values * _ROUND).astype(np.int64)
        # Lower edges in units of 1e-10, exactly as the buckets print them, so a score equal to
        # a printed edge lands in the bucket that starts there (1/3 with 3 buckets -> bucket 1).
        lowers = np.array(
            [round(round(i / buckets, 10) * _ROUND) for i in range(buckets)], dtype=np.int64
        )
        index = np.clip(np.searchsorted(lowers, scaled, side="right") - 1, 0, buckets - 1)
        counts = np.bincount(index, minlength=buckets)
    return [
        Bucket(
            lower=round(i / buckets, 10), upper=round((i + 1) / buckets, 10), count=int(counts[i])
        )
        for i in range(buckets)
    ]


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for a binomial proportion."""
    from statistics import NormalDist

    if n <= 0:
        return Interval(low=0.0, high=1.0, confidence=confidence)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = (z / denom) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return Interval(
        low=max(0.0, centre - half), high=min(1.0, centre + half), confidence=confidence
    )


def mean_interval(values: np.ndarray, confidence: float = 0.95) -> Interval | None:
    """Student-t interval of a mean, clipped to [0, 1]; None below two values."""
    from scipy.special import (
        stdtrit,  # Student t quantile; scipy.special loads ~3x faster than scipy.stats
    )

    n = values.size
    if n < 2:
        return None
    spread = float(values.std(ddof=1))
    half = float(stdtrit(n - 1, 0.5 + confidence / 2)) * spread / math.sqrt(n)
    centre = float(values.mean())
    return Interval(
        low=max(0.0, centre - half), high=min(1.0, centre + half), confidence=confidence
    )


def pass_interval(values: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> Interval | None:
    if values.size == 0:
        return None
    return wilson_interval(int(passes(values, threshold).sum()), int(values.size))


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None


def _pass_rate(values: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> float | None:
    return float(passes(values, threshold).mean()) if values.size else None


# --------------------------------------------------------------------------- usage


class UsageAccumulator:
    """Sums per-call usage records overall, per metric and per model."""

    def __init__(self) -> None:
        self.total = _UsageSum()
        self.per_metric: dict[str, _UsageSum] = defaultdict(_UsageSum)

    def add(self, metric: str, records: Iterable[Mapping[str, Any]]) -> None:
        for record in records:
            self.total.add(record)
            self.per_metric[metric].add(record)

    def build(self) -> Usage:
        base = self.total.build()
        return Usage(
            **base.model_dump(),
            per_metric={m: s.build() for m, s in sorted(self.per_metric.items())},
        )


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return 0


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


class _UsageSum:
    def __init__(self) -> None:
        self.calls = self.cached = self.prompt = self.completion = self.total_tokens = 0
        self.latencies: list[float] = []
        self.cost = 0.0
        self.priced_calls = 0
        self.unpriced: set[str] = set()
        self.models: dict[str, dict[str, Any]] = {}

    def add(self, record: Mapping[str, Any]) -> None:
        model = str(record.get("model") or "(unnamed model)")
        cached = bool(record.get("cached"))
        prompt, completion = (
            _int(record.get("prompt_tokens")),
            _int(record.get("completion_tokens")),
        )
        total = _int(record.get("total_tokens")) or prompt + completion
        cost = _finite(record.get("cost_usd"))
        entry = self.models.setdefault(
            model,
            {
                "calls": 0,
                "cached": 0,
                "prompt": 0,
                "completion": 0,
                "total": 0,
                "cost": 0.0,
                "priced": True,
            },
        )
        self.calls += 1
        entry["calls"] += 1
        if cached:
            # A cache hit costs nothing now; its tokens were paid for by an earlier run.
            self.cached += 1
            entry["cached"] += 1
            return
        self.prompt += prompt
        self.completion += completion
        self.total_tokens += total
        entry["prompt"] += prompt
        entry["completion"] += completion
        entry["total"] += total
        latency = _finite(record.get("latency_ms"))
        if latency is not None:
            self.latencies.append(latency)
        if cost is None:
            self.unpriced.add(model)
            entry["priced"] = False
        else:
            self.cost += cost
            self.priced_calls += 1
            entry["cost"] += cost

    def build(self) -> UsageBlock:
        return UsageBlock(
            calls=self.calls,
            cached_calls=self.cached,
            prompt_tokens=self.prompt,
            completion_tokens=self.completion,
            total_tokens=self.total_tokens,
            latency_ms_total=round(sum(self.latencies), 3),
            latency_ms_mean=round(sum(self.latencies) / len(self.latencies), 3)
            if self.latencies
            else None,
            latency_ms_max=round(max(self.latencies), 3) if self.latencies else None,
            cost_usd=round(self.cost, 8) if self.priced_calls else None,
            complete=not self.unpriced,
            unpriced_models=sorted(self.unpriced),
            models=[
                ModelUsage(
                    model=name,
                    calls=e["calls"],
                    cached_calls=e["cached"],
                    prompt_tokens=e["prompt"],
                    completion_tokens=e["completion"],
                    total_tokens=e["total"],
                    cost_usd=round(e["cost"], 8) if e["priced"] else None,
                    priced=e["priced"],
                )
                for name, e in sorted(self.models.items())
            ],
        )


# --------------------------------------------------------------------------- builder

NO_SCORE = "metric produced no score"


def make_row(
    result: ExecutionResult,
    tags: list[str],
    row_hash: str,
    metric_names: Sequence[str],
    thresholds: Thresholds | None = None,
) -> Row:
    """The report row of one execution: its scores and errors, no input, expected or metadata."""
    errors: dict[str, str] = {}
    if result.sut_error is not None:
        errors[SUT_STAGE] = result.sut_error
    scores: dict[str, RowScore] = {}
    for name in metric_names:
        outcome = result.scores.get(name)
        if outcome is None:
            continue
        value = outcome.value
        if outcome.error is not None or value is None:
            errors[name] = outcome.error or NO_SCORE
            continue
        scores[name] = trusted(
            RowScore,
            {
                "score": value,
                "passed": passes(value, threshold_for(thresholds, name)),
                "details": _as_dict(outcome.details),
            },
        )
    return trusted(
        Row,
        {
            "id": result.sample_id,
            "row_hash": row_hash,
            "repetition": result.repetition,
            "tags": tags,
            "passed": not errors and all(score.passed for score in scores.values()),
            "scores": scores,
            "errors": errors,
        },
    )


def _as_dict(details: Mapping[str, Any]) -> dict[str, Any]:
    # Details are immutable by contract; share the metric's dict instead of copying 400k of them.
    return details if type(details) is dict else dict(details)


class _Scores:
    """Scores of one metric within one slice (overall or a cohort)."""

    __slots__ = ("failed", "skipped", "values")

    def __init__(self) -> None:
        self.values = array("d")
        self.failed = 0
        self.skipped = 0


class ReportBuilder:
    """Accumulates execution results and produces the report."""

    def __init__(
        self,
        metric_names: Sequence[str],
        scopes: Mapping[str, frozenset[str]] | None = None,
        *,
        keep_rows: bool = True,
        thresholds: Thresholds | None = None,
    ) -> None:
        self.metric_names = list(metric_names)
        self.thresholds = dict(thresholds or {})
        self.failed_rows = 0
        self.errored_rows = 0
        # Without rows the report's rows come from the run store at render time (rows_from_store).
        self.keep_rows = keep_rows
        self.scopes = dict(scopes or {})
        self._hashes: dict[str, str] = {}
        self._overall: dict[str, _Scores] = {m: _Scores() for m in self.metric_names}
        self._cohorts: dict[str | None, dict[str, _Scores]] = {}
        self._cohort_sizes: dict[str | None, int] = defaultdict(int)
        self.rows: list[Row] = []
        self.failures: list[Failure] = []
        self.usage = UsageAccumulator()
        self.executions = 0
        self.passed = 0
        self.sut_failures = 0
        self.metric_failures = 0
        # Per sample: [executions, passed, errored, scored executions, sum of means, sum of squares].
        self._per_sample: dict[str, list[float]] = {}
        self.spent_usd = 0.0

    def _slices(self, tags: list[str]) -> list[dict[str, _Scores]]:
        keys: list[str | None] = list(tags) if tags else [None]
        slices = [self._overall]
        for key in keys:
            self._cohort_sizes[key] += 1
            if key not in self._cohorts:
                self._cohorts[key] = {m: _Scores() for m in self.metric_names}
            slices.append(self._cohorts[key])
        return slices

    def add(self, result: ExecutionResult, tags: list[str], row_hash: str) -> None:
        """Fold one execution in; ``tags`` and ``row_hash`` come from its sample."""
        self._hashes[result.sample_id] = row_hash
        slices = self._slices(tags)
        self.executions += 1
        errored = result.sut_error is not None
        if errored:
            self.sut_failures += 1
            self._fail(result, SUT_STAGE, None, result.sut_error)  # type: ignore[arg-type]
            self.usage.add(SUT_STAGE, result.sut_usage)
        total = 0.0
        scored = 0
        all_pass = True
        for name in self.metric_names:
            outcome = result.scores.get(name)
            if outcome is None:
                if result.sut_error is not None and applies(self.scopes, name, tags):
                    for part in slices:
                        part[name].skipped += 1
                continue
            if outcome.usage:
                self.usage.add(name, outcome.usage)
            value = outcome.value
            if outcome.error is not None or value is None:
                errored = True
                self.metric_failures += 1
                self._fail(result, "metric", name, outcome.error or NO_SCORE)
                for part in slices:
                    part[name].failed += 1
                continue
            for part in slices:
                part[name].values.append(value)
            total += value
            scored += 1
            all_pass = all_pass and passes(value, threshold_for(self.thresholds, name))
        passed = not errored and all_pass
        self.passed += passed
        self.errored_rows += errored
        self.failed_rows += not errored and not all_pass
        if self.keep_rows:
            self.rows.append(make_row(result, tags, row_hash, self.metric_names, self.thresholds))
        tally = self._per_sample.get(result.sample_id)
        if tally is None:
            tally = self._per_sample[result.sample_id] = [0, 0, 0, 0, 0.0, 0.0]
        tally[0] += 1
        tally[1] += passed
        tally[2] += errored
        if scored:
            mean = total / scored
            tally[3] += 1
            tally[4] += mean
            tally[5] += mean * mean

    def _fail(self, result: ExecutionResult, stage: str, metric: str | None, message: str) -> None:
        self.failures.append(
            trusted(
                Failure,
                {
                    "sample_id": result.sample_id,
                    "repetition": result.repetition,
                    "stage": stage,
                    "metric": metric,
                    "message": message,
                },
            )
        )

    @property
    def sample_count(self) -> int:
        return len(self._per_sample)

    def sort(self, positions: Mapping[str, int]) -> None:
        """Put rows and failures in dataset order (a concurrent run finishes out of order)."""
        end = len(positions)
        self.rows.sort(key=lambda r: (positions.get(r.id, end), r.repetition))
        self.failures.sort(key=lambda f: (positions.get(f.sample_id, end), f.repetition))
        self._per_sample = dict(
            sorted(self._per_sample.items(), key=lambda item: positions.get(item[0], end))
        )

    # ----------------------------------------------------------------------- build

    def _metric_aggregate(self, name: str, scores: _Scores) -> MetricAggregate:
        values = (
            np.sort(np.frombuffer(scores.values, dtype=np.float64))
            if scores.values
            else np.empty(0)
        )
        attempted = values.size + scores.failed + scores.skipped
        threshold = threshold_for(self.thresholds, name)
        return MetricAggregate(
            name=name,
            attempted=attempted,
            scored=int(values.size),
            failed=scores.failed,
            errored=scores.failed,
            below_threshold=int((~passes(values, threshold)).sum()),
            threshold=threshold,
            skipped=scores.skipped,
            coverage=values.size / attempted if attempted else None,
            mean=_mean(values),
            p50=percentile(values, 50),
            p95=percentile(values, 95),
            min=float(values[0]) if values.size else None,
            max=float(values[-1]) if values.size else None,
            pass_rate=_pass_rate(values, threshold),
            pass_rate_ci=pass_interval(values, threshold),
            mean_ci=mean_interval(values),
            histogram=histogram(values),
        )

    def _cohort(self, key: str | None) -> Cohort:
        metrics = []
        for name in self.metric_names:
            scores = self._cohorts[key][name]
            values = (
                np.sort(np.frombuffer(scores.values, dtype=np.float64))
                if scores.values
                else np.empty(0)
            )
            metrics.append(
                CohortMetric(
                    name=name,
                    scored=int(values.size),
                    failed=scores.failed,
                    mean=_mean(values),
                    p50=percentile(values, 50),
                    p95=percentile(values, 95),
                    pass_rate=_pass_rate(values, threshold_for(self.thresholds, name)),
                    pass_rate_ci=pass_interval(values, threshold_for(self.thresholds, name)),
                    mean_ci=mean_interval(values),
                )
            )
        return Cohort(
            name=key,
            label=key if key is not None else UNTAGGED_LABEL,
            is_untagged=key is None,
            samples=self._cohort_sizes[key],
            metrics=metrics,
        )

    def _repetitions(self, count: int) -> Repetitions | None:
        if count <= 1:
            return None
        aggregates = []
        for sample_id, (n, passed, errored, scored, total, squares) in self._per_sample.items():
            n, passed = int(n), int(passed)
            mean = total / scored if scored else None
            spread = (
                math.sqrt(max(0.0, squares / scored - mean * mean)) if mean is not None else None
            )
            aggregates.append(
                SampleAggregate(
                    id=sample_id,
                    row_hash=self._hashes.get(sample_id, ""),
                    repetitions=n,
                    passed=passed,
                    errored=int(errored),
                    pass_rate=passed / n,
                    pass_rate_ci=wilson_interval(passed, n),
                    unstable=n > 1 and 0 < passed < n,
                    score_mean=mean,
                    score_stddev=spread,
                )
            )
        return Repetitions(
            count=count,
            unstable_samples=[a.id for a in aggregates if a.unstable],
            samples=aggregates,
        )

    def build(self, *, dataset: DatasetInfo, run: RunInfo, warnings: Sequence[str] = ()) -> Report:
        metrics = [self._metric_aggregate(name, self._overall[name]) for name in self.metric_names]
        rates = [m.pass_rate for m in metrics if m.pass_rate is not None]
        excluded = [m.name for m in metrics if m.pass_rate is None]
        tagged = sorted(
            (k for k in self._cohorts if k is not None), key=lambda t: t.encode("utf-8")
        )
        cohorts = [self._cohort(k) for k in tagged]
        if None in self._cohorts:
            cohorts.append(self._cohort(None))
        all_warnings = list(warnings)
        if excluded:
            all_warnings.append(
                "no score at all for "
                + ", ".join(excluded)
                + "; left out of macro-F1 (see failures)"
            )
        summary = Summary(
            total_samples=self.sample_count,
            total_executions=self.executions,
            total_failures=len(self.failures),
            sut_failures=self.sut_failures,
            metric_failures=self.metric_failures,
            failed_rows=self.failed_rows,
            errored_rows=self.errored_rows,
            pass_rate=self.passed / self.executions if self.executions else None,
            macro_f1=sum(rates) / len(rates) if rates else None,
            macro_f1_excluded=excluded,
        )
        return Report.model_construct(
            schema_version="assay.report.v1",
            dataset=dataset,
            run=run,
            summary=summary,
            metrics=metrics,
            cohorts=cohorts,
            usage=self.usage.build(),
            repetitions=self._repetitions(run.repetitions),
            budget=None,
            gate=None,
            comparison=None,
            warnings=all_warnings,
            failures=self.failures,
            rows=self.rows,
        )
