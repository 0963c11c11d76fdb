"""Report aggregation checked against independent computations (numpy, statistics, decimal,
statsmodels) and hand-worked expectations, never against the builder's own output."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from assay.data.results import SUT_STAGE, ExecutionResult, ScoreResult
from assay.report.aggregate import ReportBuilder
from assay.report.model import DatasetInfo, Report, RunInfo, SystemUnderTestInfo
from assay.report.statistics import histogram, percentile, wilson_interval

from .reports import check_report

HASH = "0" * 64


def ok(value: float, **details: Any) -> ScoreResult:
    return ScoreResult(value, details)


def err(message: str, usage: tuple[Mapping[str, Any], ...] = ()) -> ScoreResult:
    return ScoreResult(None, error=message, usage=usage)


def execution(
    sample_id: str,
    scores: dict[str, ScoreResult],
    *,
    repetition: int = 0,
    sut_error: str | None = None,
) -> ExecutionResult:
    return ExecutionResult(sample_id, repetition, scores, sut_error=sut_error)


def build(
    items: Sequence[tuple[ExecutionResult, list[str]]],
    metrics: Sequence[str],
    *,
    scopes: Mapping[str, frozenset[str]] | None = None,
    repetitions: int = 1,
) -> Report:
    builder = ReportBuilder(metrics, scopes)
    for result, tags in items:
        builder.add(result, tags, HASH)
    report = builder.build(
        dataset=DatasetInfo(
            name="d", schema_version="assay.dataset.v1", samples=builder.sample_count
        ),
        run=RunInfo(
            run_id="r",
            assay_version="0",
            started_at="2026-01-01T00:00:00+00:00",
            finished_at="2026-01-01T00:00:01+00:00",
            duration_seconds=1.0,
            system_under_test=SystemUnderTestInfo(kind="none"),
            repetitions=repetitions,
        ),
    )
    check_report(report)
    return report


def single_metric_report(values: Sequence[float], name: str = "m") -> Report:
    return build([(execution(f"s{i}", {name: ok(v)}), []) for i, v in enumerate(values)], [name])


# --------------------------------------------------------------------------- percentiles


def test_percentile_matches_numpy_linear_and_statistics_inclusive() -> None:
    rng = np.random.default_rng(20261121)
    for size in [1, 2, 3, 4, 5, 7, 10, 19, 20, 21, 50, 101]:
        values = rng.random(size)
        if size > 3:
            values[: size // 3] = np.round(values[: size // 3], 1)  # ties and round numbers
        report = single_metric_report(values.tolist())
        m = report.metric("m")
        assert m.p50 == pytest.approx(float(np.percentile(values, 50, method="linear")), abs=1e-12)
        assert m.p95 == pytest.approx(float(np.percentile(values, 95, method="linear")), abs=1e-12)
        if size >= 2:
            # statistics' inclusive quantiles are Excel PERCENTILE.INC, written independently of
            # numpy
            cuts = statistics.quantiles(values.tolist(), n=100, method="inclusive")
            assert m.p50 == pytest.approx(cuts[49], abs=1e-12)
            assert m.p95 == pytest.approx(cuts[94], abs=1e-12)
        else:
            assert m.p50 == m.p95 == values[0]
        assert m.mean == pytest.approx(statistics.fmean(values.tolist()), abs=1e-12)
        assert m.min == values.min() and m.max == values.max()
        assert m.scored == m.attempted == size and m.coverage == 1.0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0, allow_nan=False), min_size=1, max_size=60))
def test_aggregates_property(values: list[float]) -> None:
    m = single_metric_report(values).metric("m")
    assert m.mean == pytest.approx(statistics.fmean(values), abs=1e-12)
    assert m.p50 == pytest.approx(float(np.percentile(values, 50, method="linear")), abs=1e-12)
    assert m.p95 == pytest.approx(float(np.percentile(values, 95, method="linear")), abs=1e-12)
    assert m.pass_rate == sum(v >= 0.5 for v in values) / len(values)
    assert (m.min, m.max) == (min(values), max(values))
    counts = [b.count for b in m.histogram]
    assert len(counts) == 10 and sum(counts) == len(values)
    assert counts[9] >= sum(v == 1.0 for v in values)


def test_percentile_hand_worked() -> None:
    # rank = p/100 * (n - 1): p95 over [0, 0.25, 0.5, 1.0] is rank 2.85 -> 0.5 + 0.85 * 0.5
    values = np.array([0.0, 0.25, 0.5, 1.0])
    assert percentile(values, 95) == pytest.approx(0.925)
    assert percentile(values, 50) == pytest.approx(0.375)
    assert percentile(values, 0) == 0.0 and percentile(values, 100) == 1.0
    assert percentile(np.empty(0), 50) is None


# --------------------------------------------------------------------------- histogram


def bucket_by_decimal(value: float, buckets: int = 10) -> int:
    """Independent bucketing: round to 10 decimals in exact decimal arithmetic, then floor."""
    rounded = Decimal(value).quantize(Decimal("1e-10"), rounding=ROUND_HALF_EVEN)
    return min(int(rounded * buckets), buckets - 1)


ARTEFACTS = {
    0.0: 0,
    0.05: 0,
    0.1: 1,
    0.1 * 3: 3,  # 0.30000000000000004
    0.3: 3,
    0.7 - 0.4: 3,  # 0.29999999999999993: a naive floor(v * 10) puts it in bucket 2
    0.29999999999999: 3,  # rounds to 0.3 at 10 decimals
    0.2999999: 2,
    0.3 - 0.1: 2,  # 0.19999999999999998
    0.5: 5,
    1 / 3: 3,
    2 / 3: 6,
    0.1 + 0.2 + 0.3: 6,  # 0.6000000000000001
    0.8 - 0.1: 7,
    0.95: 9,
    0.99999999999: 9,  # rounds to 1.0
    1.0: 9,  # closed on the right
}


def test_histogram_float_artefacts_hand_worked() -> None:
    values = list(ARTEFACTS)
    expected = [0] * 10
    for bucket in ARTEFACTS.values():
        expected[bucket] += 1
    assert expected == [2, 1, 2, 5, 0, 1, 2, 1, 0, 3]
    report = single_metric_report(values)
    buckets = report.metric("m").histogram
    assert [b.count for b in buckets] == expected
    assert [b.lower for b in buckets] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert [b.upper for b in buckets] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    for value, bucket in ARTEFACTS.items():
        assert bucket_by_decimal(value) == bucket, value


def test_histogram_matches_decimal_bucketing_on_random_scores() -> None:
    rng = np.random.default_rng(7)
    values = np.concatenate(
        [
            rng.random(2000),
            np.arange(0, 101) / 100,  # every edge, computed by division
            np.arange(0, 101) * 0.01,  # and by multiplication (different artefacts)
            1 - np.arange(0, 11) * 0.1,
        ]
    )
    values = np.clip(values, 0.0, 1.0)
    expected = np.bincount([bucket_by_decimal(float(v)) for v in values], minlength=10)
    assert [b.count for b in histogram(values)] == expected.tolist()


def test_histogram_other_bucket_counts() -> None:
    assert [b.count for b in histogram(np.array([0.5]), 2)] == [0, 1]
    assert [b.count for b in histogram(np.array([1 / 3]), 3)] == [0, 1, 0]
    assert [b.count for b in histogram(np.array([1.0, 0.0]), 3)] == [1, 0, 1]
    three = histogram(np.empty(0), 3)
    assert [(b.lower, b.upper, b.count) for b in three] == [
        (0.0, 0.3333333333, 0),
        (0.3333333333, 0.6666666667, 0),
        (0.6666666667, 1.0, 0),
    ]


# --------------------------------------------------------------------------- pass-rate, macro-F1


def test_pass_rate_threshold_is_inclusive() -> None:
    values = [0.5, 0.49999, 1.0, 0.0, 0.75]
    report = single_metric_report(values)
    assert report.metric("m").pass_rate == pytest.approx(3 / 5)
    assert report.summary.pass_rate == pytest.approx(3 / 5)


def test_macro_f1_and_a_metric_that_failed_everywhere() -> None:
    a = [1.0, 0.0, 0.6, 0.2]
    b = [0.5, 0.5, 0.9, 0.1]
    items = [
        (
            execution(f"s{i}", {"a": ok(a[i]), "b": ok(b[i]), "broken": err(f"cannot score s{i}")}),
            [],
        )
        for i in range(4)
    ]
    report = build(items, ["a", "b", "broken"])
    rate_a = sum(v >= 0.5 for v in a) / len(a)
    rate_b = sum(v >= 0.5 for v in b) / len(b)
    assert report.summary.macro_f1 == pytest.approx((rate_a + rate_b) / 2)
    assert report.summary.macro_f1_excluded == ["broken"]
    assert [m.name for m in report.metrics] == ["a", "b", "broken"]
    broken = report.metric("broken")
    assert (broken.attempted, broken.scored, broken.errored, broken.skipped) == (4, 0, 4, 0)
    assert broken.coverage == 0.0
    assert broken.mean is broken.p50 is broken.p95 is broken.pass_rate is None
    assert [b.count for b in broken.histogram] == [0] * 10
    assert report.summary.metric_errors == 4 and report.summary.errored_rows == 4
    assert report.summary.pass_rate == 0.0  # every execution has a failure
    assert any("broken" in w for w in report.warnings)
    assert [(f.sample_id, f.metric, f.stage, f.message) for f in report.failures] == [
        (f"s{i}", "broken", "metric", f"cannot score s{i}") for i in range(4)
    ]


def test_macro_f1_is_none_when_nothing_scored() -> None:
    report = build([(execution("s0", {"m": err("no")}), [])], ["m"])
    assert report.summary.macro_f1 is None
    assert report.summary.macro_f1_excluded == ["m"]


def test_failures_are_never_zero_scores() -> None:
    items = [(execution("s0", {"m": ok(1.0)}), []), (execution("s1", {"m": err("bad")}), [])]
    m = build(items, ["m"]).metric("m")
    assert (m.scored, m.errored, m.mean, m.pass_rate, m.coverage) == (1, 1, 1.0, 1.0, 0.5)


# --------------------------------------------------------------------------- rows and failures


def test_rows_carry_scores_errors_and_pass_state() -> None:
    items = [
        (execution("s0", {"m": ok(0.9, hits=2), "n": ok(0.5)}), ["t"]),
        (execution("s1", {"m": ok(0.2), "n": err("n broke on s1")}), []),
    ]
    report = build(items, ["m", "n"])
    first, second = report.rows
    assert (first.id, first.passed, first.tags) == ("s0", True, ["t"])
    assert first.scores["m"].score == 0.9 and first.scores["m"].details == {"hits": 2}
    assert first.scores["n"].passed is True and first.errors == {}
    assert second.passed is False
    assert set(second.scores) == {"m"} and second.scores["m"].passed is False
    assert second.errors == {"n": "n broke on s1"}
    assert [(f.sample_id, f.metric, f.message) for f in report.failures] == [
        ("s1", "n", "n broke on s1")
    ]


def test_sut_failure_counts_as_skipped_for_applicable_metrics() -> None:
    scopes = {"scoped": frozenset({"x"})}
    items = [
        (execution("s0", {"all": ok(1.0), "scoped": ok(1.0)}), ["x"]),
        (execution("s1", {}, sut_error="SUT raised ValueError"), ["x"]),
        (execution("s2", {}, sut_error="SUT timed out"), ["y"]),
        (execution("s3", {"all": ok(0.0)}), ["y"]),
    ]
    report = build(items, ["all", "scoped"], scopes=scopes)
    every, scoped = report.metric("all"), report.metric("scoped")
    assert (every.attempted, every.scored, every.errored, every.skipped) == (4, 2, 0, 2)
    assert every.coverage == pytest.approx(0.5)
    # s2 failed in the SUT but 'scoped' never applied to it (tag y): not skipped, not attempted
    assert (scoped.attempted, scoped.scored, scoped.skipped) == (2, 1, 1)
    assert report.summary.sut_errors == 2 and report.summary.metric_errors == 0
    sut_failures = [f for f in report.failures if f.stage == SUT_STAGE]
    assert [(f.sample_id, f.metric, f.message) for f in sut_failures] == [
        ("s1", None, "SUT raised ValueError"),
        ("s2", None, "SUT timed out"),
    ]
    assert report.rows[1].errors == {SUT_STAGE: "SUT raised ValueError"}
    assert report.rows[1].passed is False


def test_tag_scoped_metric_ignores_other_samples() -> None:
    scopes = {"exact": frozenset({"facts"})}
    items = [
        (execution("a", {"exact": ok(1.0), "any": ok(1.0)}), ["facts"]),
        (execution("b", {"any": ok(0.0)}), ["chat"]),
        (execution("c", {"exact": ok(0.0), "any": ok(1.0)}), ["facts", "chat"]),
        (execution("d", {"any": ok(1.0)}), []),
    ]
    report = build(items, ["exact", "any"], scopes=scopes)
    exact = report.metric("exact")
    assert (exact.attempted, exact.scored, exact.pass_rate) == (2, 2, 0.5)
    chat = next(c for c in report.cohorts if c.name == "chat")
    chat_exact = next(m for m in chat.metrics if m.name == "exact")
    assert (chat_exact.scored, chat_exact.mean) == (1, 0.0)


# --------------------------------------------------------------------------- cohorts


def test_cohorts_multi_tag_untagged_and_literal_untagged_tag() -> None:
    plan = {
        "s1": (["a", "b"], 1.0),
        "s2": (["b"], 0.0),
        "s3": ([], 0.4),
        "s4": (["(untagged)"], 0.8),
        "s5": (["Zeta"], 0.6),
        "s6": (["é"], 0.2),
        "s7": ([], 0.9),
    }
    items = [(execution(sid, {"m": ok(v)}), tags) for sid, (tags, v) in plan.items()]
    report = build(items, ["m"])
    # byte-wise order of tags ('(' < 'Z' < 'a' < 'b' < 'é'), the untagged bucket last
    assert [c.name for c in report.cohorts] == ["(untagged)", "Zeta", "a", "b", "é", None]
    by_name = {c.name: c for c in report.cohorts}
    literal, untagged = by_name["(untagged)"], by_name[None]
    assert literal.is_untagged is False and untagged.is_untagged is True
    assert literal.samples == 1 and untagged.samples == 2
    assert untagged.label == "(untagged)"
    for cohort in report.cohorts:
        members = [
            v
            for tags, v in plan.values()
            if (cohort.name in tags if cohort.name is not None else not tags)
        ]
        (metric,) = cohort.metrics
        assert cohort.samples == len(members)
        assert metric.scored == len(members)
        assert metric.mean == pytest.approx(statistics.fmean(members))
        assert metric.pass_rate == pytest.approx(sum(v >= 0.5 for v in members) / len(members))
        assert metric.p50 == pytest.approx(float(np.percentile(members, 50)))
    assert by_name["b"].samples == 2  # s1 counts in both a and b
    assert sum(c.samples for c in report.cohorts) == 8  # 7 samples, one of them in two cohorts


def test_cohort_failures_are_counted() -> None:
    items = [(execution("s0", {"m": err("x")}), ["t"]), (execution("s1", {"m": ok(1.0)}), ["t"])]
    (cohort,) = build(items, ["m"]).cohorts
    assert (cohort.metrics[0].scored, cohort.metrics[0].errored) == (1, 1)


# --------------------------------------------------------------------------- Wilson interval


@pytest.mark.parametrize("confidence", [0.95, 0.99, 0.9])
def test_wilson_interval_matches_statsmodels(confidence: float) -> None:
    for n in [1, 2, 3, 5, 10, 17, 50, 200]:
        for successes in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            if not 0 <= successes <= n:
                continue
            low, high = proportion_confint(successes, n, alpha=1 - confidence, method="wilson")
            interval = wilson_interval(successes, n, confidence)
            assert interval.low == pytest.approx(max(0.0, low), abs=1e-12)
            assert interval.high == pytest.approx(min(1.0, high), abs=1e-12)
            assert interval.confidence == confidence


def test_wilson_interval_with_no_observations() -> None:
    interval = wilson_interval(0, 0)
    assert (interval.low, interval.high) == (0.0, 1.0)


def test_repetitions_block_against_independent_statistics() -> None:
    # three repetitions per sample; 'flaky' passes 2 of 3
    scores = {"steady": [1.0, 1.0, 1.0], "flaky": [1.0, 0.2, 0.9], "down": [0.1, 0.0, 0.3]}
    items = [
        (execution(sid, {"m": ok(values[r]), "n": ok(1.0)}, repetition=r), [])
        for sid, values in scores.items()
        for r in range(3)
    ]
    report = build(items, ["m", "n"], repetitions=3)
    assert report.repetitions is not None
    assert report.repetitions.count == 3
    assert report.repetitions.unstable_samples == ["flaky"]
    for aggregate in report.repetitions.samples:
        values = scores[aggregate.id]
        passed = sum(v >= 0.5 for v in values)
        assert (aggregate.repetitions, aggregate.passed, aggregate.errored) == (3, passed, 0)
        low, high = proportion_confint(passed, 3, alpha=0.05, method="wilson")
        assert aggregate.pass_rate_ci.low == pytest.approx(max(0.0, low), abs=1e-12)
        assert aggregate.pass_rate_ci.high == pytest.approx(min(1.0, high), abs=1e-12)
        per_execution = [(v + 1.0) / 2 for v in values]  # mean of that execution's metric scores
        assert aggregate.score_mean == pytest.approx(statistics.fmean(per_execution))
        assert aggregate.score_stddev == pytest.approx(statistics.pstdev(per_execution))


def test_no_repetitions_block_for_single_runs() -> None:
    assert single_metric_report([0.5]).repetitions is None


# --------------------------------------------------------------------------- usage


def test_usage_sums_priced_unpriced_and_cached_calls() -> None:
    priced = {
        "model": "gpt-a",
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "total_tokens": 120,
        "latency_ms": 10.0,
        "cost_usd": 0.002,
        "cached": False,
    }
    priced2 = {
        **priced,
        "prompt_tokens": 50,
        "completion_tokens": 5,
        "total_tokens": 55,
        "latency_ms": 30.0,
        "cost_usd": 0.001,
    }
    unpriced = {
        "model": "local-b",
        "prompt_tokens": 7,
        "completion_tokens": 3,
        "total_tokens": 10,
        "latency_ms": 5.0,
        "cost_usd": None,
        "cached": False,
    }
    cached = {**priced, "cached": True}
    no_total = {
        "model": "local-b",
        "prompt_tokens": "4",
        "completion_tokens": 6,
        "latency_ms": 1.0,
        "cost_usd": None,
    }
    items = [
        (
            execution(
                "s0",
                {
                    "judge": ScoreResult(1.0, {}, None, (priced, cached)),
                    "embed": ScoreResult(0.5, {}, None, (unpriced,)),
                },
            ),
            [],
        ),
        (
            execution(
                "s1",
                {
                    "judge": err("judge said nothing", usage=(priced2,)),
                    "embed": ScoreResult(0.5, {}, None, (no_total,)),
                },
            ),
            [],
        ),
    ]
    report = build(items, ["judge", "embed"])
    usage = report.usage
    assert usage.calls == 5 and usage.cached_calls == 1
    # cached calls cost nothing now: their tokens are not counted again
    assert usage.prompt_tokens == 100 + 50 + 7 + 4
    assert usage.completion_tokens == 20 + 5 + 3 + 6
    assert usage.total_tokens == 120 + 55 + 10 + 10
    assert usage.cost_usd == pytest.approx(0.003)
    assert usage.complete is False and usage.unpriced_models == ["local-b"]
    assert usage.latency_ms_total == pytest.approx(46.0)
    assert usage.latency_ms_mean == pytest.approx(46.0 / 4)
    assert usage.latency_ms_max == 30.0
    models = {m.model: m for m in usage.models}
    assert models["local-b"].cost_usd is None and models["local-b"].priced is False
    assert models["gpt-a"].cost_usd == pytest.approx(0.003) and models["gpt-a"].calls == 3
    # the failed judge call's spend is kept, per metric
    assert usage.per_metric["judge"].cost_usd == pytest.approx(0.003)
    assert usage.per_metric["embed"].cost_usd is None
    assert usage.per_metric["embed"].complete is False


def test_usage_with_only_unpriced_models_has_no_cost() -> None:
    record = {
        "model": "local",
        "prompt_tokens": 3,
        "completion_tokens": 1,
        "total_tokens": 4,
        "latency_ms": 2.0,
        "cost_usd": None,
        "cached": False,
    }
    report = build([(execution("s0", {"m": ScoreResult(1.0, {}, None, (record,))}), [])], ["m"])
    assert report.usage.cost_usd is None
    assert report.usage.total_tokens == 4


def test_a_run_served_wholly_from_the_cache_costs_zero() -> None:
    # A cache hit's cost is known (0.0, as the provider records it): not "unpriced".
    record = {"model": "gpt-4o-mini", "total_tokens": 0, "cost_usd": 0.0, "cached": True}
    report = build([(execution("s0", {"m": ScoreResult(1.0, {}, None, (record,))}), [])], ["m"])
    usage = report.usage
    assert (usage.calls, usage.cached_calls, usage.cost_usd, usage.complete) == (1, 1, 0.0, True)
    assert usage.models[0].cost_usd == 0.0 and usage.per_metric["m"].cost_usd == 0.0


def test_usage_is_empty_for_offline_metrics() -> None:
    usage = single_metric_report([1.0]).usage
    assert (usage.calls, usage.cost_usd, usage.complete, usage.models) == (0, None, True, [])


def test_metric_and_cohort_intervals_match_scipy_and_statsmodels() -> None:
    """Mean intervals equal scipy's t interval; pass-rate intervals equal statsmodels' Wilson."""
    import numpy as np
    import scipy.stats
    from statsmodels.stats.proportion import proportion_confint

    from assay.data.results import ExecutionResult, ScoreResult
    from assay.report.aggregate import ReportBuilder
    from assay.report.model import DatasetInfo, RunInfo, SystemUnderTestInfo

    values = [0.1, 0.55, 0.9, 0.3, 1.0, 0.75, 0.0, 0.5]
    builder = ReportBuilder(["m"])
    for i, v in enumerate(values):
        builder.add(
            ExecutionResult(f"s{i}", 0, {"m": ScoreResult(v)}),
            ["even" if i % 2 == 0 else "odd"],
            f"h{i}",
        )
    report = builder.build(
        dataset=DatasetInfo(name="d", schema_version="assay.dataset.v1", samples=len(values)),
        run=RunInfo(
            run_id="r",
            assay_version="0",
            started_at="t",
            finished_at="t",
            duration_seconds=0.0,
            system_under_test=SystemUnderTestInfo(kind="none"),
            repetitions=1,
        ),
    )

    def expected_mean_ci(xs: list[float]) -> tuple[float, float]:
        low, high = scipy.stats.t.interval(
            0.95, len(xs) - 1, loc=np.mean(xs), scale=scipy.stats.sem(xs)
        )
        return max(0.0, low), min(1.0, high)

    aggregate = report.metric("m")
    assert aggregate.mean_ci is not None and aggregate.pass_rate_ci is not None
    assert (aggregate.mean_ci.low, aggregate.mean_ci.high) == pytest.approx(
        expected_mean_ci(values), abs=1e-12
    )
    passes = sum(v >= 0.5 for v in values)
    low, high = proportion_confint(passes, len(values), alpha=0.05, method="wilson")
    assert (aggregate.pass_rate_ci.low, aggregate.pass_rate_ci.high) == pytest.approx(
        (low, high), abs=1e-9
    )

    even = next(c for c in report.cohorts if c.name == "even").metrics[0]
    xs = values[0::2]
    assert even.mean_ci is not None
    assert (even.mean_ci.low, even.mean_ci.high) == pytest.approx(expected_mean_ci(xs), abs=1e-12)
