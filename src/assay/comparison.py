"""Paired comparison of two reports (``assay.comparison.v1``): what changed, and is it noise?

Rows of the two reports are joined per sample (on ``row_hash``, the hash of input and
expected output; on the sample id when hashes are missing or ambiguous). For each metric,
overall and per cohort, the paired per-sample differences give:

* the change of the mean score, with a paired-bootstrap interval and a bootstrap p-value;
* the change of the pass-rate, with a paired-bootstrap interval and the exact McNemar test
  when every sample ran once (pass/fail is binary); with repetitions each sample has a pass
  fraction and the paired bootstrap tests it too (a pass/fail metric's mean *is* its
  pass-rate, so it is then tested once);
* the minimum detectable difference (MDD): the smallest change that the test would catch
  80% of the time at ``alpha``, given the spread of the paired differences seen here.

All p-values of one comparison form one family and are Holm-adjusted, so that checking
many metrics and cohorts does not inflate false alarms. A *regression* is a statistic that
dropped with an adjusted p-value below ``alpha``; anything else is within noise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from assay.report.model import Interval, Report, Row

COMPARISON_SCHEMA: Final = "assay.comparison.v1"
DEFAULT_RESAMPLES = 2000
POWER = 0.80
SUT_ERROR_KEY = "system-under-test"
UNTAGGED_LABEL = "(untagged)"
_BOOTSTRAP_CELLS = 2_000_000  # resample-matrix cells per chunk, bounds memory on big datasets

Verdict = Literal["regressed", "improved", "no-change", "incomparable"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Side(_Model):
    """Which run one side of the comparison is."""

    run_id: str
    dataset: str
    finished_at: str
    samples: int
    executions: int
    repetitions: int
    macro_f1: float | None
    pass_rate: float | None


class StatDelta(_Model):
    """One statistic on both sides over the paired samples, its change and its test."""

    reference: float | None
    current: float | None
    delta: float | None = Field(description="current - reference")
    interval: Interval | None = Field(description="paired-bootstrap interval of delta")
    test: Literal["paired-bootstrap", "mcnemar-exact"] | None
    p_value: float | None
    p_adjusted: float | None = Field(description="Holm-adjusted over every test of the comparison")
    mdd: float | None = Field(
        description="minimum detectable difference: smallest |delta| caught with 80% power at alpha"
    )


class MetricComparison(_Model):
    """One metric, overall (cohort null) or within one cohort."""

    metric: str
    scope: Literal["overall", "cohort"]
    cohort: str | None = Field(description="the tag; null overall and for the untagged bucket")
    cohort_label: str | None = Field(description="the tag or '(untagged)'; null overall")
    paired: int = Field(description="samples scored on both sides")
    pass_to_fail: int
    fail_to_pass: int
    mean: StatDelta
    pass_rate: StatDelta
    coverage_reference: float | None = None
    coverage_current: float | None = None
    verdict: Verdict


class Regression(_Model):
    """A statistic that dropped beyond noise."""

    metric: str
    scope: Literal["overall", "cohort"]
    cohort_label: str | None
    statistic: Literal["mean", "pass_rate"]
    reference: float
    current: float
    delta: float
    p_value: float
    p_adjusted: float
    mdd: float | None
    message: str


class SampleRef(_Model):
    key: str
    sample_id: str


class Flip(_Model):
    """A sample whose pass/fail outcome on one metric changed."""

    key: str
    sample_id: str
    metric: str
    direction: Literal["pass-to-fail", "fail-to-pass"]
    before: float
    after: float


class NewFailure(_Model):
    """A sample that passed everything in the reference and now fails or errors."""

    key: str
    sample_id: str
    failed_metrics: list[str]
    errored: list[str] = Field(description="metrics (or 'system-under-test') that raised")


class Counts(_Model):
    compared: int
    added: int
    removed: int
    pass_to_fail: int
    fail_to_pass: int
    new_failures: int
    regressions: int


class Comparison(_Model):
    """Paired comparison of a current report against a reference (baseline) report."""

    schema_version: Literal["assay.comparison.v1"] = COMPARISON_SCHEMA
    dataset: str
    current: Side
    reference: Side
    join_key: Literal["row_hash", "id"]
    alpha: float
    seed: int
    resamples: int
    correction: Literal["holm"] = "holm"
    comparable: bool
    incomparable_reason: str | None = None
    counts: Counts
    macro_f1_delta: float | None
    pass_rate_delta: float | None
    metrics: list[MetricComparison]
    cohorts: list[MetricComparison]
    regressions: list[Regression]
    flips: list[Flip]
    new_failures: list[NewFailure]
    added: list[SampleRef]
    removed: list[SampleRef]
    warnings: list[str] = Field(default_factory=list)
    reference_aggregates: dict[str, dict[str, float | None]] = Field(
        default_factory=dict,
        description="the reference run's mean, p50, p95 and pass_rate per metric (for max_drop)",
    )
    current_aggregates: dict[str, dict[str, float | None]] = Field(default_factory=dict)

    def pass_to_fail_rows(self) -> list[str]:
        """Every (sample, metric) that passed in the reference and now fails or errors."""
        found = [f"{f.sample_id}/{f.metric}" for f in self.flips if f.direction == "pass-to-fail"]
        for item in self.new_failures:
            found.extend(f"{item.sample_id}/{where} (errored)" for where in item.errored)
        return list(dict.fromkeys(found))

    @property
    def regression_count(self) -> int:
        """Distinct (metric, scope) pairs with at least one statistic regressed."""
        return _distinct(self.regressions)

    def summary_dict(self) -> dict[str, object]:
        """A compact JSON-safe digest, for embedding in a report's ``comparison`` key."""
        return {
            "schema_version": self.schema_version,
            "reference_run_id": self.reference.run_id,
            "join_key": self.join_key,
            "comparable": self.comparable,
            "alpha": self.alpha,
            "macro_f1_delta": self.macro_f1_delta,
            "pass_rate_delta": self.pass_rate_delta,
            "counts": self.counts.model_dump(),
            "regressions": [item.model_dump(mode="json") for item in self.regressions],
        }


# --------------------------------------------------------------------------- per-sample view


@dataclass
class _SampleView:
    """A sample's results on one side, pooled over its repetitions."""

    key: str
    sample_id: str
    tags: list[str]
    scores: dict[str, list[float]] = field(default_factory=dict)
    passes: dict[str, list[bool]] = field(default_factory=dict)
    errors: set[str] = field(default_factory=set)

    def score_mean(self, metric: str) -> float | None:
        values = self.scores.get(metric)
        return sum(values) / len(values) if values else None

    def pass_fraction(self, metric: str) -> float | None:
        values = self.passes.get(metric)
        return sum(values) / len(values) if values else None

    def passes_metric(self, metric: str) -> bool | None:
        """Most repetitions passed (with one repetition: the score was >= 0.5)."""
        fraction = self.pass_fraction(metric)
        return None if fraction is None else fraction > 0.5

    def passed_all(self, metrics: Iterable[str]) -> bool:
        if self.errors:
            return False
        return all(self.passes_metric(name) is not False for name in metrics)


def _choose_join_key(*sides: Sequence[Row]) -> Literal["row_hash", "id"]:
    """``row_hash`` unless some row lacks one or one hash stands for two sample ids."""
    for rows in sides:
        owner: dict[str, str] = {}
        for row in rows:
            if not row.row_hash or owner.setdefault(row.row_hash, row.id) != row.id:
                return "id"
    return "row_hash"


def _views(report: Report, join_key: str) -> dict[str, _SampleView]:
    views: dict[str, _SampleView] = {}
    for row in report.rows:
        key = row.row_hash if join_key == "row_hash" else row.id
        view = views.get(key)
        if view is None:
            view = views[key] = _SampleView(key=key, sample_id=row.id, tags=list(row.tags))
        for metric, score in row.scores.items():
            view.scores.setdefault(metric, []).append(score.score)
            view.passes.setdefault(metric, []).append(score.passed)
        view.errors.update(row.errors)
    return views


# --------------------------------------------------------------------------- statistics


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (monotone, capped at 1), in input order."""
    count = len(p_values)
    order = sorted(range(count), key=lambda index: p_values[index])
    adjusted = [0.0] * count
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (count - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def sign_test(differences: np.ndarray) -> float | None:
    """Two-sided exact sign test on paired differences (zeros dropped); exact McNemar for 0/1."""
    from scipy.stats import binomtest

    negative = int(np.sum(differences < 0))
    positive = int(np.sum(differences > 0))
    if negative + positive == 0:
        return 1.0 if differences.size else None
    return float(binomtest(negative, negative + positive, 0.5).pvalue)


def sign_test_floor(alpha: float) -> int:
    """Fewest discordant pairs, all one way, that the exact two-sided sign test calls significant.

    With k pairs all in one direction the p-value is min(1, 2 * 0.5**k).
    """
    k = 1
    while 2.0 * 0.5**k >= alpha:
        k += 1
    return k


def paired_bootstrap(
    differences: np.ndarray, *, rng: np.random.Generator, resamples: int, confidence: float
) -> tuple[Interval | None, float | None]:
    """Percentile interval of the mean paired difference, and a two-sided p-value for it.

    The p-value is the bootstrap standard-error test: t = mean / sd(resampled means), read
    against Student's t with n - 1 degrees of freedom. Unlike counting resamples it has no
    1/(resamples+1) floor, so it survives the multiple-testing correction when many metrics
    and cohorts are tested. When every difference is the same the spread is zero and the
    exact sign test decides.
    """
    return paired_bootstrap_rows(
        np.atleast_2d(differences), rng=rng, resamples=resamples, confidence=confidence
    )[0]


def paired_bootstrap_rows(
    rows: np.ndarray, *, rng: np.random.Generator, resamples: int, confidence: float
) -> list[tuple[Interval | None, float | None]]:
    """:func:`paired_bootstrap` for several statistics of the same samples (one resampling)."""
    from scipy.stats import t as student_t

    k, n = rows.shape
    if n == 0:
        return [(None, None)] * k
    chunk = max(1, _BOOTSTRAP_CELLS // (n * k))
    means = np.empty((k, resamples))
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[:, start:stop] = rows[:, idx].mean(axis=2)
    tail = (1.0 - confidence) / 2.0
    bounds = np.quantile(means, [tail, 1.0 - tail], axis=1)
    results: list[tuple[Interval | None, float | None]] = []
    for row in range(k):
        differences = rows[row]
        interval = Interval(
            low=float(bounds[0, row]), high=float(bounds[1, row]), confidence=confidence
        )
        spread = float(means[row].std(ddof=1))
        if n < 2:
            p_value = None
        elif spread == 0.0 or np.all(differences == differences[0]):
            p_value = sign_test(differences)
        else:
            p_value = float(2.0 * student_t.sf(abs(float(differences.mean())) / spread, n - 1))
        results.append((interval, p_value))
    return results


@lru_cache(maxsize=32)
def _z_sum(alpha: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / 2) + norm.ppf(POWER))


def minimum_detectable_difference(differences: np.ndarray, alpha: float) -> float | None:
    """(z_{1-alpha/2} + z_{power}) * sd(d) / sqrt(n); None when the spread is unknown or zero."""
    n = differences.size
    if n < 2:
        return None
    spread = float(np.std(differences, ddof=1))
    if spread == 0.0:
        return None
    return _z_sum(alpha) * spread / math.sqrt(n)


# --------------------------------------------------------------------------- comparison


@dataclass
class _Cell:
    """Paired data for one (scope, metric) before the multiple-testing correction."""

    metric: str
    cohort: str | None
    cohort_label: str | None
    score_ref: np.ndarray
    score_cur: np.ndarray
    pass_ref: np.ndarray
    pass_cur: np.ndarray
    binary: bool
    coverage_reference: float | None = None
    coverage_current: float | None = None
    mean_raw: dict[str, object] = field(default_factory=dict)
    pass_raw: dict[str, object] = field(default_factory=dict)


def _side(report: Report) -> Side:
    return Side(
        run_id=report.run.run_id,
        dataset=report.dataset.name,
        finished_at=report.run.finished_at,
        samples=report.summary.total_samples,
        executions=report.summary.total_executions,
        repetitions=report.run.repetitions,
        macro_f1=report.summary.macro_f1,
        pass_rate=report.summary.pass_rate,
    )


def _difference(current: float | None, reference: float | None) -> float | None:
    return None if current is None or reference is None else current - reference


def _metric_names(current: Report, reference: Report) -> tuple[list[str], list[str]]:
    """Metrics on both sides (current order), and warnings for metrics on one side only."""
    ref_names = [item.name for item in reference.metrics]
    cur_names = [item.name for item in current.metrics]
    warnings = [
        f"metric '{name}' is only in the reference report"
        for name in ref_names
        if name not in cur_names
    ]
    warnings += [
        f"metric '{name}' is only in the current report"
        for name in cur_names
        if name not in ref_names
    ]
    return [name for name in cur_names if name in ref_names], warnings


def _scopes(
    joined: list[tuple[_SampleView, _SampleView]],
) -> list[tuple[str | None, str, list[int]]]:
    """Cohort scopes (tag, label, indices into joined): tags byte-sorted, untagged last."""
    members: dict[str, list[int]] = {}
    untagged: list[int] = []
    for index, (cur, ref) in enumerate(joined):
        tags = cur.tags or ref.tags
        if not tags:
            untagged.append(index)
        for tag in tags:
            members.setdefault(tag, []).append(index)
    scopes: list[tuple[str | None, str, list[int]]] = [
        (tag, tag, members[tag]) for tag in sorted(members, key=lambda t: t.encode("utf-8"))
    ]
    if untagged:
        scopes.append((None, UNTAGGED_LABEL, untagged))
    return scopes


def _cell(
    metric: str,
    cohort: str | None,
    cohort_label: str | None,
    pairs: list[tuple[_SampleView, _SampleView]],
) -> _Cell:
    score_ref, score_cur, pass_ref, pass_cur = [], [], [], []
    binary = True
    for cur, ref in pairs:
        s_cur, s_ref = cur.score_mean(metric), ref.score_mean(metric)
        if s_cur is None or s_ref is None:
            continue
        p_cur, p_ref = cur.pass_fraction(metric), ref.pass_fraction(metric)
        assert p_cur is not None and p_ref is not None
        binary = binary and len(cur.passes[metric]) == 1 and len(ref.passes[metric]) == 1
        score_ref.append(s_ref)
        score_cur.append(s_cur)
        pass_ref.append(p_ref)
        pass_cur.append(p_cur)
    return _Cell(
        metric=metric,
        cohort=cohort,
        cohort_label=cohort_label,
        score_ref=np.asarray(score_ref, dtype=float),
        score_cur=np.asarray(score_cur, dtype=float),
        pass_ref=np.asarray(pass_ref, dtype=float),
        pass_cur=np.asarray(pass_cur, dtype=float),
        binary=binary,
    )


def _within_range(mdd: float | None) -> float | None:
    """An MDD above 1 means no possible change of a [0, 1] statistic is detectable: None."""
    return None if mdd is None or mdd > 1.0 else mdd


def _test_cell(cell: _Cell, *, alpha: float, rng: np.random.Generator, resamples: int) -> None:
    confidence = 1.0 - alpha
    n = cell.score_ref.size
    d_score = cell.score_cur - cell.score_ref
    d_pass = cell.pass_cur - cell.pass_ref
    (mean_interval, mean_p), (pass_interval, pass_boot_p) = paired_bootstrap_rows(
        np.vstack([d_score, d_pass]), rng=rng, resamples=resamples, confidence=confidence
    )
    # one execution per sample: pass/fail is binary and McNemar's exact test applies; with
    # repetitions each sample has a pass fraction and the bootstrap test uses its size
    pass_p = sign_test(d_pass) if cell.binary else pass_boot_p
    pass_mdd = minimum_detectable_difference(d_pass, alpha)
    floor = sign_test_floor(alpha)
    # the exact test needs at least `floor` one-way flips, whatever the spread says
    if cell.binary:
        pass_mdd = _within_range(max(pass_mdd or 0.0, floor / n)) if n and floor <= n else None
    else:
        pass_mdd = _within_range(pass_mdd)
    # pass/fail scores (exact-match...): the mean *is* the pass-rate, tested once, exactly
    same_as_pass = (
        bool(n)
        and np.array_equal(cell.score_ref, cell.pass_ref)
        and np.array_equal(cell.score_cur, cell.pass_cur)
    )
    cell.mean_raw = {
        "reference": float(cell.score_ref.mean()) if n else None,
        "current": float(cell.score_cur.mean()) if n else None,
        "delta": float(d_score.mean()) if n else None,
        "interval": mean_interval,
        "test": "paired-bootstrap" if n and not same_as_pass else None,
        "p_value": None if same_as_pass else mean_p,
        "mdd": pass_mdd
        if same_as_pass
        else _within_range(minimum_detectable_difference(d_score, alpha)),
    }
    cell.pass_raw = {
        "reference": float(cell.pass_ref.mean()) if n else None,
        "current": float(cell.pass_cur.mean()) if n else None,
        "delta": float(d_pass.mean()) if n else None,
        "interval": pass_interval,
        "test": ("mcnemar-exact" if cell.binary else "paired-bootstrap") if n else None,
        "p_value": pass_p,
        "mdd": pass_mdd,
    }


def _verdict(mean: StatDelta, pass_rate: StatDelta, paired: int, alpha: float) -> Verdict:
    if paired == 0:
        return "incomparable"
    significant = [
        stat
        for stat in (mean, pass_rate)
        if stat.p_adjusted is not None and stat.delta is not None and stat.p_adjusted < alpha
    ]
    if any(stat.delta < 0 for stat in significant if stat.delta is not None):
        return "regressed"
    if any(stat.delta > 0 for stat in significant if stat.delta is not None):
        return "improved"
    return "no-change"


def _regressions(item: MetricComparison, alpha: float) -> list[Regression]:
    found: list[Regression] = []
    for name, stat in (("mean", item.mean), ("pass_rate", item.pass_rate)):
        if (
            stat.p_adjusted is None
            or stat.p_value is None
            or stat.delta is None
            or stat.reference is None
            or stat.current is None
            or stat.p_adjusted >= alpha
            or stat.delta >= 0
        ):
            continue
        where = "" if item.cohort_label is None else f" in cohort '{item.cohort_label}'"
        label = "mean score" if name == "mean" else "pass-rate"
        found.append(
            Regression(
                metric=item.metric,
                scope=item.scope,
                cohort_label=item.cohort_label,
                statistic=name,  # type: ignore[arg-type]
                reference=stat.reference,
                current=stat.current,
                delta=stat.delta,
                p_value=stat.p_value,
                p_adjusted=stat.p_adjusted,
                mdd=stat.mdd,
                message=(
                    f"{item.metric}{where}: {label} fell {stat.reference:.4f} -> {stat.current:.4f} "
                    f"({stat.delta:+.4f}, adjusted p={stat.p_adjusted:.3g} < {alpha:g})"
                ),
            )
        )
    return found


def compare_reports(
    current: Report,
    reference: Report,
    *,
    alpha: float = 0.05,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
) -> Comparison:
    """Compare ``current`` against ``reference`` sample by sample; deterministic for a seed."""
    if not 0.0 < alpha < 1.0:
        from assay.errors import UsageError

        raise UsageError(f"alpha must be between 0 and 1 (exclusive); got {alpha}")
    join_key = _choose_join_key(current.rows, reference.rows)
    cur_views = _views(current, join_key)
    ref_views = _views(reference, join_key)
    joined = [(cur_views[key], ref_views[key]) for key in cur_views if key in ref_views]
    added = [
        SampleRef(key=k, sample_id=v.sample_id) for k, v in cur_views.items() if k not in ref_views
    ]
    removed = [
        SampleRef(key=k, sample_id=v.sample_id) for k, v in ref_views.items() if k not in cur_views
    ]
    metrics, warnings = _metric_names(current, reference)
    if current.dataset.name != reference.dataset.name:
        warnings.append(
            f"datasets differ: current '{current.dataset.name}', reference '{reference.dataset.name}'"
        )

    cells: list[_Cell] = []
    for metric in metrics:
        cell = _cell(metric, None, None, joined)
        cell.coverage_reference = reference.metric(metric).coverage
        cell.coverage_current = current.metric(metric).coverage
        cells.append(cell)
    for tag, label, indices in _scopes(joined):
        pairs = [joined[index] for index in indices]
        cells.extend(_cell(metric, tag, label, pairs) for metric in metrics)

    root = np.random.SeedSequence(seed)
    for cell, child in zip(cells, root.spawn(len(cells)), strict=True):
        _test_cell(cell, alpha=alpha, rng=np.random.default_rng(child), resamples=resamples)

    raw_p = [
        (index, which, stats["p_value"])
        for index, cell in enumerate(cells)
        for which, stats in (("mean", cell.mean_raw), ("pass", cell.pass_raw))
        if stats["p_value"] is not None
    ]
    adjusted = holm([float(p) for _, _, p in raw_p])  # type: ignore[arg-type]
    adjusted_of = {
        (index, which): value for (index, which, _), value in zip(raw_p, adjusted, strict=True)
    }

    overall: list[MetricComparison] = []
    by_cohort: list[MetricComparison] = []
    regressions: list[Regression] = []
    for index, cell in enumerate(cells):
        mean = StatDelta(**cell.mean_raw, p_adjusted=adjusted_of.get((index, "mean")))  # type: ignore[arg-type]
        pass_rate = StatDelta(**cell.pass_raw, p_adjusted=adjusted_of.get((index, "pass")))  # type: ignore[arg-type]
        paired = int(cell.score_ref.size)
        item = MetricComparison(
            metric=cell.metric,
            scope="overall" if cell.cohort_label is None else "cohort",
            cohort=cell.cohort,
            cohort_label=cell.cohort_label,
            paired=paired,
            pass_to_fail=int(np.sum((cell.pass_ref > 0.5) & (cell.pass_cur <= 0.5))),
            fail_to_pass=int(np.sum((cell.pass_ref <= 0.5) & (cell.pass_cur > 0.5))),
            mean=mean,
            pass_rate=pass_rate,
            coverage_reference=cell.coverage_reference,
            coverage_current=cell.coverage_current,
            verdict=_verdict(mean, pass_rate, paired, alpha),
        )
        (overall if item.scope == "overall" else by_cohort).append(item)
        regressions.extend(_regressions(item, alpha))

    for item in overall:
        if item.paired and item.pass_rate.mdd is None and item.pass_rate.test == "mcnemar-exact":
            warnings.append(
                f"metric '{item.metric}': {item.paired} paired samples are too few to detect any "
                f"pass-rate change at alpha {alpha:g} (the exact test needs at least "
                f"{sign_test_floor(alpha)} one-way flips); add samples or repetitions"
            )
    warnings.extend(_undetectable_drops(overall, alpha))
    flips = _flips(joined, metrics)
    new_failures = _new_failures(joined, metrics)
    comparable = bool(joined) and bool(metrics)
    reason = None
    if not joined:
        reason = "no sample of the current report matches a sample of the reference report"
    elif not metrics:
        reason = "the two reports have no metric in common"
    if reason:
        warnings.append(reason)
    return Comparison(
        dataset=current.dataset.name,
        current=_side(current),
        reference=_side(reference),
        join_key=join_key,
        alpha=alpha,
        seed=seed,
        resamples=resamples,
        comparable=comparable,
        incomparable_reason=reason,
        counts=Counts(
            compared=len(joined),
            added=len(added),
            removed=len(removed),
            pass_to_fail=sum(1 for flip in flips if flip.direction == "pass-to-fail"),
            fail_to_pass=sum(1 for flip in flips if flip.direction == "fail-to-pass"),
            new_failures=len(new_failures),
            regressions=_distinct(regressions),
        ),
        macro_f1_delta=_difference(current.summary.macro_f1, reference.summary.macro_f1),
        pass_rate_delta=_difference(current.summary.pass_rate, reference.summary.pass_rate),
        metrics=overall,
        cohorts=by_cohort,
        regressions=regressions,
        flips=flips,
        new_failures=new_failures,
        added=added,
        removed=removed,
        warnings=warnings,
        reference_aggregates=_aggregates(reference),
        current_aggregates=_aggregates(current),
    )


def _aggregates(report: Report) -> dict[str, dict[str, float | None]]:
    return {
        m.name: {"mean": m.mean, "p50": m.p50, "p95": m.p95, "pass_rate": m.pass_rate}
        for m in report.metrics
    }


def _undetectable_drops(overall: Sequence[MetricComparison], alpha: float) -> list[str]:
    """A drop the paired test did not flag, and could not have: say so, with the MDD."""
    found = []
    for item in overall:
        for name, stat in (("mean", item.mean), ("pass-rate", item.pass_rate)):
            if (
                stat.delta is None
                or stat.delta >= 0
                or (stat.p_adjusted is not None and (stat.p_adjusted < alpha))
            ):
                continue
            if stat.mdd is not None and abs(stat.delta) >= stat.mdd:
                continue
            mdd = "unknown" if stat.mdd is None else f"{stat.mdd:.4f}"
            found.append(
                f"metric '{item.metric}': {name} dropped by {abs(stat.delta):.4f} but "
                f"{item.paired} paired samples cannot detect a change of this size at alpha "
                f"{alpha:g} (minimum detectable difference {mdd}); the flip rule still counts "
                "every row that went from pass to fail"
            )
    return found


def _known(value: float | None) -> float:
    """A score that a pass/fail outcome implies exists (scores and passes are recorded together)."""
    if value is None:  # pragma: no cover - guarded by passes_metric()
        raise ValueError("pass outcome without a score")
    return value


def _distinct(regressions: Iterable[Regression]) -> int:
    return len({(item.metric, item.scope, item.cohort_label) for item in regressions})


def _flips(joined: list[tuple[_SampleView, _SampleView]], metrics: list[str]) -> list[Flip]:
    flips: list[Flip] = []
    for cur, ref in joined:
        for metric in metrics:
            before, after = ref.passes_metric(metric), cur.passes_metric(metric)
            if before is None or after is None or before == after:
                continue
            flips.append(
                Flip(
                    key=cur.key,
                    sample_id=cur.sample_id,
                    metric=metric,
                    direction="pass-to-fail" if before else "fail-to-pass",
                    before=_known(ref.score_mean(metric)),
                    after=_known(cur.score_mean(metric)),
                )
            )
    return flips


def _new_failures(
    joined: list[tuple[_SampleView, _SampleView]], metrics: list[str]
) -> list[NewFailure]:
    found: list[NewFailure] = []
    for cur, ref in joined:
        if not ref.passed_all(metrics) or cur.passed_all(metrics):
            continue
        found.append(
            NewFailure(
                key=cur.key,
                sample_id=cur.sample_id,
                failed_metrics=[m for m in metrics if cur.passes_metric(m) is False],
                errored=sorted(cur.errors),
            )
        )
    return found
