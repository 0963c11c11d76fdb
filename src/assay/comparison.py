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

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from assay.errors import UsageError
from assay.paired_tests import (
    holm,
    minimum_detectable_difference,
    paired_bootstrap_rows,
    sign_test,
    sign_test_floor,
)
from assay.pairing import Pairs, SampleView, choose_join_key, flips, new_failures, sample_views
from assay.report.comparison_model import (
    Comparison,
    Flip,
    MetricComparison,
    NewFailure,
    SampleRef,
    Side,
    StatDelta,
    Verdict,
    distinct_regressions,
)
from assay.report.model import UNTAGGED_LABEL, Counts, Regression, Report

DEFAULT_RESAMPLES = 2000


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
    joined: Pairs,
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
    pairs: Pairs,
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
                statistic=name,
                reference=stat.reference,
                current=stat.current,
                delta=stat.delta,
                p_value=stat.p_value,
                p_adjusted=stat.p_adjusted,
                mdd=stat.mdd,
                message=(
                    f"{item.metric}{where}: {label} fell "
                    f"{stat.reference:.4f} -> {stat.current:.4f} "
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
        raise UsageError(f"alpha must be between 0 and 1 (exclusive); got {alpha}")
    join_key = choose_join_key(current.rows, reference.rows)
    cur_views = sample_views(current, join_key)
    ref_views = sample_views(reference, join_key)
    joined = [(cur_views[key], ref_views[key]) for key in cur_views if key in ref_views]
    metrics, warnings = _metric_names(current, reference)
    if current.dataset.name != reference.dataset.name:
        warnings.append(
            f"datasets differ: current '{current.dataset.name}', "
            f"reference '{reference.dataset.name}'"
        )
    cells = _cells(current, reference, metrics, joined)
    overall, by_cohort = _tested(cells, alpha=alpha, seed=seed, resamples=resamples)
    regressions = [found for item in overall + by_cohort for found in _regressions(item, alpha)]
    warnings += _too_few_pairs(overall, alpha) + _undetectable_drops(overall, alpha)
    reason = _incomparable(joined, metrics)
    if reason:
        warnings.append(reason)
    flipped, failing = flips(joined, metrics), new_failures(joined, metrics)
    return Comparison(
        dataset=current.dataset.name,
        current=_side(current),
        reference=_side(reference),
        join_key=join_key,
        alpha=alpha,
        seed=seed,
        resamples=resamples,
        comparable=reason is None,
        incomparable_reason=reason,
        counts=_counts(joined, cur_views, ref_views, flipped, failing, regressions),
        macro_f1_delta=_difference(current.summary.macro_f1, reference.summary.macro_f1),
        pass_rate_delta=_difference(current.summary.pass_rate, reference.summary.pass_rate),
        metrics=overall,
        cohorts=by_cohort,
        regressions=regressions,
        flips=flipped,
        new_failures=failing,
        added=[_ref(k, v) for k, v in cur_views.items() if k not in ref_views],
        removed=[_ref(k, v) for k, v in ref_views.items() if k not in cur_views],
        warnings=warnings,
        reference_aggregates=_aggregates(reference),
        current_aggregates=_aggregates(current),
    )


def _ref(key: str, view: SampleView) -> SampleRef:
    return SampleRef(key=key, sample_id=view.sample_id)


def _cells(current: Report, reference: Report, metrics: list[str], joined: Pairs) -> list[_Cell]:
    """One cell per metric overall (with both coverages), then one per (cohort, metric)."""
    cells: list[_Cell] = []
    for metric in metrics:
        cell = _cell(metric, None, None, joined)
        cell.coverage_reference = reference.metric(metric).coverage
        cell.coverage_current = current.metric(metric).coverage
        cells.append(cell)
    for tag, label, indices in _scopes(joined):
        pairs = [joined[index] for index in indices]
        cells.extend(_cell(metric, tag, label, pairs) for metric in metrics)
    return cells


def _tested(
    cells: list[_Cell], *, alpha: float, seed: int, resamples: int
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


def _holm_adjusted(cells: list[_Cell]) -> dict[tuple[int, str], float]:
    """Holm-adjusted p-values of every test in the comparison, by (cell index, statistic)."""
    raw_p = [
        (index, which, stats["p_value"])
        for index, cell in enumerate(cells)
        for which, stats in (("mean", cell.mean_raw), ("pass", cell.pass_raw))
        if stats["p_value"] is not None
    ]
    adjusted = holm([float(p) for _, _, p in raw_p])  # type: ignore[arg-type]
    return {(index, which): value for (index, which, _), value in zip(raw_p, adjusted, strict=True)}


def _metric_comparison(
    cell: _Cell, mean_p: float | None, pass_p: float | None, alpha: float
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


def _too_few_pairs(overall: Sequence[MetricComparison], alpha: float) -> list[str]:
    """One warning naming the metrics whose exact pass-rate test cannot reach significance
    with this many pairs (each with its pair count)."""
    named = [
        f"{item.metric} ({item.paired})"
        for item in overall
        if item.paired and item.pass_rate.mdd is None and item.pass_rate.test == "mcnemar-exact"
    ]
    if not named:
        return []
    return [
        f"paired samples are too few to detect any pass-rate change at alpha {alpha:g} (the "
        f"exact test needs at least {sign_test_floor(alpha)} one-way flips) for "
        f"{len(named)} metric(s): {', '.join(named)}; add samples or repetitions"
    ]


def _incomparable(joined: Pairs, metrics: list[str]) -> str | None:
    if not joined:
        return "no sample of the current report matches a sample of the reference report"
    if not metrics:
        return "the two reports have no metric in common"
    return None


def _counts(
    joined: Pairs,
    cur_views: dict[str, SampleView],
    ref_views: dict[str, SampleView],
    flipped: list[Flip],
    failing: list[NewFailure],
    regressions: list[Regression],
) -> Counts:
    return Counts(
        compared=len(joined),
        added=sum(1 for key in cur_views if key not in ref_views),
        removed=sum(1 for key in ref_views if key not in cur_views),
        pass_to_fail=sum(1 for flip in flipped if flip.direction == "pass-to-fail"),
        fail_to_pass=sum(1 for flip in flipped if flip.direction == "fail-to-pass"),
        new_failures=len(failing),
        regressions=distinct_regressions(regressions),
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
