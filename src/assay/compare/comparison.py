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

from collections.abc import Iterable, Sequence

from assay.compare.judge_change import judge_change_warnings, judge_changes
from assay.compare.paired_cells import cells_of, tested
from assay.compare.paired_tests import (
    sign_test_floor,
)
from assay.compare.pairing import Joined, SampleTable, flips, join, new_failures
from assay.errors import UsageError
from assay.report.comparison_model import (
    Comparison,
    Flip,
    MetricComparison,
    NewFailure,
    Side,
    distinct_regressions,
)
from assay.report.model import Counts, Regression, Report, Row

DEFAULT_RESAMPLES = 2000
DATASETS_DIFFER = "datasets differ"
CANNOT_DETECT = "cannot tell these changes from noise"  # opens the one detectability warning
"""How the warning that the two reports ran different datasets begins."""


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
    current_rows: Iterable[Row | bytes] | None = None,
    reference_rows: Iterable[Row | bytes] | None = None,
    allow_judge_change: bool = False,
) -> Comparison:
    """Compare ``current`` against ``reference`` sample by sample; deterministic for a seed.

    A judge metric scored by different judges on the two sides is named in a warning, and its
    flips and regressions do not count against the system unless ``allow_judge_change``.

    ``current_rows`` / ``reference_rows`` stand for a report's ``rows`` when it does not hold
    them (streamed from a run store or a report file): each is read once, and only a few
    numbers per sample are kept. A row may be a model or, from a run store, its JSON.
    """
    if not 0.0 < alpha < 1.0:
        raise UsageError(f"alpha must be between 0 and 1 (exclusive); got {alpha}")
    joined = join(
        SampleTable.of(current.rows if current_rows is None else current_rows),
        SampleTable.of(reference.rows if reference_rows is None else reference_rows),
    )
    metrics, warnings = _metric_names(current, reference)
    warnings += _dataset_differs(current, reference, joined)
    cells = cells_of(current, reference, metrics, joined)
    overall, by_cohort = tested(cells, alpha=alpha, seed=seed, resamples=resamples)
    regressions = [found for item in overall + by_cohort for found in _regressions(item, alpha)]
    warnings += _detectability(overall, alpha)
    reason = _incomparable(joined, metrics)
    warnings += [reason] if reason else []
    flipped, failing = flips(joined, metrics), new_failures(joined, metrics)
    changes = judge_changes(current, reference)
    warnings += judge_change_warnings(changes, allow_judge_change)
    return Comparison(
        dataset=current.dataset.name,
        current=_side(current),
        reference=_side(reference),
        join_key=joined.key,
        alpha=alpha,
        seed=seed,
        resamples=resamples,
        comparable=reason is None,
        incomparable_reason=reason,
        counts=_counts(joined, flipped, failing, regressions),
        macro_f1_delta=_difference(current.summary.macro_f1, reference.summary.macro_f1),
        pass_rate_delta=_difference(current.summary.pass_rate, reference.summary.pass_rate),
        metrics=overall,
        cohorts=by_cohort,
        regressions=regressions,
        flips=flipped,
        new_failures=failing,
        added=[joined.current.ref(index, joined.key) for index in joined.added],
        removed=[joined.reference.ref(index, joined.key) for index in joined.removed],
        warnings=warnings,
        reference_aggregates=_aggregates(reference),
        current_aggregates=_aggregates(current),
        judge_changes=changes,
        judge_change_allowed=allow_judge_change,
    )


def _dataset_differs(current: Report, reference: Report, joined: Joined) -> list[str]:
    """A warning when the two reports ran different datasets: their names differ, or no sample
    of one has the input and expected output (``row_hash``) of a sample of the other."""
    names = f"current '{current.dataset.name}', reference '{reference.dataset.name}'"
    if current.dataset.name != reference.dataset.name:
        return [f"{DATASETS_DIFFER}: {names}"]
    if not (joined.current.hashable and joined.reference.hashable):
        return []  # a side without row hashes: nothing to tell the datasets apart by
    mine, theirs = set(joined.current.hashes), set(joined.reference.hashes)
    if mine and theirs and mine.isdisjoint(theirs):
        return [f"{DATASETS_DIFFER}: {names} share no sample (no input and expected output alike)"]
    return []


def dataset_warnings(comparison: Comparison) -> list[str]:
    """The warning that the two reports ran different datasets, if any (a command that pairs
    two reports prints it on stderr)."""
    return [found for found in comparison.warnings if found.startswith(DATASETS_DIFFER)]


def _detectability(overall: Sequence[MetricComparison], alpha: float) -> list[str]:
    """At most one warning per comparison: the metrics with too few pairs for any pass-rate
    change to be detectable, and the drops below what the pairs can detect."""
    parts = _too_few_pairs(overall, alpha) + _undetectable_drops(overall, alpha)
    if not parts:
        return []
    return [
        f"{CANNOT_DETECT} at alpha {alpha:g}: {'; '.join(parts)}; the flip rule still counts "
        "every row that went from pass to fail"
    ]


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
        f"too few pairs for any pass-rate change (the exact test needs at least "
        f"{sign_test_floor(alpha)} one-way flips; add samples or repetitions): {', '.join(named)}"
    ]


def _incomparable(joined: Joined, metrics: list[str]) -> str | None:
    if not joined:
        return "no sample of the current report matches a sample of the reference report"
    if not metrics:
        return "the two reports have no metric in common"
    return None


def _counts(
    joined: Joined,
    flipped: list[Flip],
    failing: list[NewFailure],
    regressions: list[Regression],
) -> Counts:
    return Counts(
        compared=len(joined),
        added=len(joined.added),
        removed=len(joined.removed),
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
    """Drops the paired tests did not flag, and could not have: one line naming each metric,
    its drop, its pairs and its MDD (one warning per run, not one per statistic)."""
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
            mdd = "n/a" if stat.mdd is None else f"{stat.mdd:.4f}"
            found.append(
                f"{item.metric} {name} -{abs(stat.delta):.4f} ({item.paired} pairs, MDD {mdd})"
            )
    if not found:
        return []
    return ["drops below the minimum detectable difference (MDD): " + ", ".join(found)]
