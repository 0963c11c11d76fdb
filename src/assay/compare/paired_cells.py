"""Paired cells of a comparison: one (scope, metric) each, tested and Holm-adjusted.

A cell holds, for every sample both reports scored on a metric, the mean score and the pass
fraction on each side, overall or within one tag cohort. Testing a cell (one seeded random
stream each) gives the deltas, paired-bootstrap intervals, raw p-values (McNemar's exact test
for single-run pass/fail) and minimum detectable differences; all p-values of a comparison are
then Holm-adjusted as one family. :mod:`assay.compare.comparison` assembles the document from these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from assay.compare.paired_tests import (
    holm,
    minimum_detectable_difference,
    paired_bootstrap_rows,
    sign_test,
    sign_test_floor,
)
from assay.compare.pairing import Joined
from assay.report.comparison_model import MetricComparison, StatDelta, Verdict
from assay.report.model import UNTAGGED_LABEL, Report


@dataclass
class Cell:
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


def _scopes(joined: Joined) -> list[tuple[str | None, str, np.ndarray]]:
    """Cohort scopes (tag, label, indices into the joined pairs): tags byte-sorted, untagged
    last. A pair's tags are the current sample's, else the reference's."""
    members: dict[str, list[int]] = {}
    untagged: list[int] = []
    current, reference = joined.current.tags, joined.reference.tags
    for pair, (cur, ref) in enumerate(zip(joined.cur.tolist(), joined.ref.tolist())):
        tags = current[cur] or reference[ref]
        if not tags:
            untagged.append(pair)
        for tag in tags:
            members.setdefault(tag, []).append(pair)
    scopes: list[tuple[str | None, str, np.ndarray]] = [
        (tag, tag, np.asarray(members[tag], dtype=np.int64))
        for tag in sorted(members, key=lambda t: t.encode("utf-8"))
    ]
    if untagged:
        scopes.append((None, UNTAGGED_LABEL, np.asarray(untagged, dtype=np.int64)))
    return scopes


@dataclass(frozen=True)
class _Columns:
    """One metric's per-pair columns of a join: means, pass fractions and score counts."""

    score_cur: np.ndarray
    score_ref: np.ndarray
    pass_cur: np.ndarray
    pass_ref: np.ndarray
    count_cur: np.ndarray
    count_ref: np.ndarray

    @classmethod
    def of(cls, joined: Joined, metric: str) -> _Columns:
        cur, ref, c, r = joined.current, joined.reference, joined.cur, joined.ref
        return cls(
            score_cur=cur.score_means(metric)[c],
            score_ref=ref.score_means(metric)[r],
            pass_cur=cur.pass_fractions(metric)[c],
            pass_ref=ref.pass_fractions(metric)[r],
            count_cur=cur.counts(metric)[c],
            count_ref=ref.counts(metric)[r],
        )


def _cell(
    metric: str, cohort: str | None, cohort_label: str | None, columns: _Columns, pairs: np.ndarray
) -> Cell:
    """The pairs (indices into the join) where both sides scored ``metric``."""
    scored = pairs[(columns.count_cur[pairs] > 0) & (columns.count_ref[pairs] > 0)]
    binary = bool(np.all(columns.count_cur[scored] == 1) and np.all(columns.count_ref[scored] == 1))
    return Cell(
        metric=metric,
        cohort=cohort,
        cohort_label=cohort_label,
        score_ref=columns.score_ref[scored],
        score_cur=columns.score_cur[scored],
        pass_ref=columns.pass_ref[scored],
        pass_cur=columns.pass_cur[scored],
        binary=binary,
    )


def _within_range(mdd: float | None) -> float | None:
    """An MDD above 1 means no possible change of a [0, 1] statistic is detectable: None."""
    return None if mdd is None or mdd > 1.0 else mdd


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None


def _pass_mdd(d_pass: np.ndarray, *, binary: bool, alpha: float) -> float | None:
    """The pass-rate's MDD; the exact test also needs at least `floor` one-way flips, whatever
    the spread says."""
    mdd = minimum_detectable_difference(d_pass, alpha)
    if not binary:
        return _within_range(mdd)
    n = d_pass.size
    floor = sign_test_floor(alpha)
    return _within_range(max(mdd or 0.0, floor / n)) if n and floor <= n else None


def _test_cell(cell: Cell, *, alpha: float, rng: np.random.Generator, resamples: int) -> None:
    """Fill the cell's untested statistics: deltas, intervals, raw p-values and MDDs."""
    n = cell.score_ref.size
    d_score = cell.score_cur - cell.score_ref
    d_pass = cell.pass_cur - cell.pass_ref
    (mean_interval, mean_p), (pass_interval, pass_boot_p) = paired_bootstrap_rows(
        np.vstack([d_score, d_pass]), rng=rng, resamples=resamples, confidence=1.0 - alpha
    )
    # one execution per sample: pass/fail is binary and McNemar's exact test applies; with
    # repetitions each sample has a pass fraction and the bootstrap test uses its size
    pass_p = sign_test(d_pass) if cell.binary else pass_boot_p
    pass_mdd = _pass_mdd(d_pass, binary=cell.binary, alpha=alpha)
    # pass/fail scores (exact-match...): the mean *is* the pass-rate, tested once, exactly
    same_as_pass = (
        bool(n)
        and np.array_equal(cell.score_ref, cell.pass_ref)
        and np.array_equal(cell.score_cur, cell.pass_cur)
    )
    cell.mean_raw = {
        "reference": _mean(cell.score_ref),
        "current": _mean(cell.score_cur),
        "delta": _mean(d_score),
        "interval": mean_interval,
        "test": "paired-bootstrap" if n and not same_as_pass else None,
        "p_value": None if same_as_pass else mean_p,
        "mdd": pass_mdd
        if same_as_pass
        else _within_range(minimum_detectable_difference(d_score, alpha)),
    }
    cell.pass_raw = {
        "reference": _mean(cell.pass_ref),
        "current": _mean(cell.pass_cur),
        "delta": _mean(d_pass),
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
    return _not_significant(mean, pass_rate)


def _not_significant(mean: StatDelta, pass_rate: StatDelta) -> Verdict:
    """No significant test: *too few pairs* when the data lean one way (an interval that excludes
    zero) or no change is detectable at all (no MDD); otherwise *no detectable change*."""
    stats = (mean, pass_rate)
    leaning = any(
        s.interval is not None and s.delta and (s.interval.high < 0 or s.interval.low > 0)
        for s in stats
    )
    undetectable = all(s.mdd is None for s in stats) and any(s.delta for s in stats)
    return "too-few-pairs" if leaning or undetectable else "no-detectable-change"


def cells_of(current: Report, reference: Report, metrics: list[str], joined: Joined) -> list[Cell]:
    """One cell per metric overall (with both coverages), then one per (cohort, metric)."""
    columns = {metric: _Columns.of(joined, metric) for metric in metrics}
    everyone = np.arange(len(joined), dtype=np.int64)
    cells: list[Cell] = []
    for metric in metrics:
        cell = _cell(metric, None, None, columns[metric], everyone)
        cell.coverage_reference = reference.metric(metric).coverage
        cell.coverage_current = current.metric(metric).coverage
        cells.append(cell)
    for tag, label, pairs in _scopes(joined):
        cells.extend(_cell(metric, tag, label, columns[metric], pairs) for metric in metrics)
    return cells


def tested(
    cells: list[Cell], *, alpha: float, seed: int, resamples: int
) -> tuple[list[MetricComparison], list[MetricComparison]]:
    """Test every cell (one seeded stream each), Holm-adjust the family, and split the results
    into overall and per-cohort comparisons."""
    root = np.random.SeedSequence(seed)
    for cell, child in zip(cells, root.spawn(len(cells)), strict=True):
        _test_cell(cell, alpha=alpha, rng=np.random.default_rng(child), resamples=resamples)
    adjusted_of = _holm_adjusted(cells)
    overall: list[MetricComparison] = []
    by_cohort: list[MetricComparison] = []
    for index, cell in enumerate(cells):
        item = _metric_comparison(
            cell, adjusted_of.get((index, "mean")), adjusted_of.get((index, "pass")), alpha
        )
        (overall if item.scope == "overall" else by_cohort).append(item)
    return overall, by_cohort


def _holm_adjusted(cells: list[Cell]) -> dict[tuple[int, str], float]:
    """Holm-adjusted p-values of every test in the comparison, by (cell index, statistic)."""
    raw_p = [
        (index, which, p_value)
        for index, cell in enumerate(cells)
        for which, stats in (("mean", cell.mean_raw), ("pass", cell.pass_raw))
        if isinstance(p_value := stats["p_value"], (int, float))
    ]
    adjusted = holm([float(p) for _, _, p in raw_p])
    return {(index, which): value for (index, which, _), value in zip(raw_p, adjusted, strict=True)}


def _metric_comparison(
    cell: Cell, mean_p: float | None, pass_p: float | None, alpha: float
) -> MetricComparison:
    mean = StatDelta(**cell.mean_raw, p_adjusted=mean_p)
    pass_rate = StatDelta(**cell.pass_raw, p_adjusted=pass_p)
    paired = int(cell.score_ref.size)
    return MetricComparison(
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
