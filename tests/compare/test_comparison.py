"""Paired comparison: statistics checked against statsmodels/scipy, joins, flips, schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.descriptivestats import sign_test as sm_sign_test
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower

from assay.cli.schema_files import generate
from assay.compare import comparison as comparison_module
from assay.compare.comparison import compare_reports
from assay.compare.gate import check_gate
from assay.compare.gate_rules import GateRules
from assay.compare.paired_tests import (
    holm,
    minimum_detectable_difference,
    paired_bootstrap,
    sign_test,
    sign_test_floor,
)
from assay.errors import UsageError
from compare.factory import from_matrix, make_report


def binary_pair(seed: int, n: int = 120, p_ref: float = 0.7, p_cur: float = 0.6):
    rng = np.random.default_rng(seed)
    ref = (rng.random(n) < p_ref).astype(float)
    cur = (rng.random(n) < p_cur).astype(float)
    return ref, cur


@pytest.mark.parametrize("seed", range(5))
def test_pass_rate_test_is_exact_mcnemar(seed):
    ref, cur = binary_pair(seed)
    comparison = compare_reports(from_matrix({"m": cur[:, None]}), from_matrix({"m": ref[:, None]}))
    [row] = comparison.metrics
    table = [
        [np.sum((ref == 1) & (cur == 1)), np.sum((ref == 1) & (cur == 0))],
        [np.sum((ref == 0) & (cur == 1)), np.sum((ref == 0) & (cur == 0))],
    ]
    expected = mcnemar(table, exact=True).pvalue
    assert row.pass_rate.test == "mcnemar-exact"
    assert row.pass_rate.p_value == pytest.approx(expected, rel=1e-9)
    assert row.pass_to_fail == table[0][1] and row.fail_to_pass == table[1][0]
    assert row.pass_rate.delta == pytest.approx(cur.mean() - ref.mean())


def test_pass_rate_with_repetitions_uses_pass_fractions():
    rng = np.random.default_rng(3)
    ref = (rng.random((150, 3)) < 0.8).astype(float)
    cur = (rng.random((150, 3)) < 0.7).astype(float)
    comparison = compare_reports(from_matrix({"m": cur}), from_matrix({"m": ref}))
    [row] = comparison.metrics
    assert row.pass_rate.test == "paired-bootstrap"
    assert row.pass_rate.delta == pytest.approx(cur.mean() - ref.mean())
    # the bootstrap-t p-value is close to the paired t-test on per-sample pass fractions
    expected = stats.ttest_rel(cur.mean(axis=1), ref.mean(axis=1)).pvalue
    assert row.pass_rate.p_value == pytest.approx(expected, abs=0.01)
    # scores are 0/1, so the mean is the pass-rate and is not tested twice
    assert row.mean.p_value is None and row.mean.delta == pytest.approx(row.pass_rate.delta)


def test_sign_test_matches_statsmodels():
    d = np.array([-1, -0.5, 0, 0.2, -0.3, -0.1, 0, -2, 0.4, -0.7])
    assert sign_test(d) == pytest.approx(sm_sign_test(d, 0)[1], rel=1e-9)


def test_sign_test_edge_cases():
    assert sign_test(np.array([])) is None
    assert sign_test(np.zeros(5)) == 1.0
    assert sign_test(np.array([-1.0] * 6)) == pytest.approx(2 * 0.5**6)
    # smallest one-way count the exact test calls significant, checked against scipy
    for alpha in (0.05, 0.01, 0.2):
        k = sign_test_floor(alpha)
        assert stats.binomtest(k, k).pvalue < alpha <= stats.binomtest(k - 1, k - 1).pvalue


@pytest.mark.parametrize("n", [*range(1, 40), 99, 100, 1001, 4096, 65537, 10**5, 10**6])
def test_sign_test_matches_scipy_binomtest(n):
    """The exact two-sided p-value for every kind of split: all one way, near even, far out."""
    rng = np.random.default_rng(n)
    splits = {0, 1, n // 2, (n - 1) // 2, *rng.integers(0, n + 1, size=6).tolist()}
    splits |= {max(0, int(n / 2 - c * np.sqrt(n) / 2)) for c in (1, 2, 4, 8, 16, 37)}
    for k in splits:
        d = np.array([-1.0] * k + [1.0] * (n - k) + [0.0] * 3)
        expected = stats.binomtest(k, n).pvalue
        if expected > 1e-300:
            assert sign_test(d) == pytest.approx(expected, rel=1e-11, abs=0), k


def test_minimum_detectable_difference_uses_normal_quantiles():
    from assay.compare.paired_tests import _z_sum

    for alpha in (0.001, 0.01, 0.05, 0.2):
        expected = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(0.8)
        assert _z_sum(alpha) == pytest.approx(expected, rel=1e-14)


def test_holm_matches_statsmodels():
    rng = np.random.default_rng(0)
    for _ in range(20):
        p = rng.random(rng.integers(1, 15)) ** 3
        expected = multipletests(p, method="holm")[1]
        assert holm(list(p)) == pytest.approx(list(expected), rel=1e-12)


def scipy_interval(cur, ref, *, seed):
    """scipy's paired percentile bootstrap interval of the mean difference (9,999 resamples)."""
    return stats.bootstrap(
        (cur, ref),
        lambda a, b, axis: np.mean(a - b, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=9999,
        confidence_level=0.95,
        method="percentile",
        random_state=np.random.default_rng(seed),
    ).confidence_interval


@pytest.mark.parametrize("seed", range(3))
def test_bootstrap_interval_agrees_with_scipy(seed):
    rng = np.random.default_rng(seed)
    ref = rng.beta(5, 2, 200)
    cur = np.clip(ref - 0.03 + rng.normal(0, 0.1, 200), 0, 1)
    d = cur - ref
    ours, _ = paired_bootstrap(d, rng=np.random.default_rng(seed), resamples=9999, confidence=0.95)
    theirs = scipy_interval(cur, ref, seed=seed + 100)
    assert ours is not None
    assert ours.low == pytest.approx(theirs.low, abs=0.003)
    assert ours.high == pytest.approx(theirs.high, abs=0.003)


@pytest.mark.parametrize(
    "levels", [(0.0, 1.0), (0.0, 0.25, 0.5, 0.75, 1.0)]
)  # pass/fail, and a 1-5 judge scale
def test_bootstrap_of_few_distinct_values_agrees_with_scipy(levels):
    # Few distinct paired differences take the multinomial path (counts of each distinct
    # value); scipy draws indices. Same distribution: the intervals agree within Monte Carlo
    # error, and the p-value with the paired t-test.
    rng = np.random.default_rng(11)
    ref = rng.choice(levels, 4000)
    cur = np.where(rng.random(4000) < 0.8, ref, rng.choice(levels, 4000))
    ours, p = paired_bootstrap(
        cur - ref, rng=np.random.default_rng(3), resamples=9999, confidence=0.95
    )
    theirs = scipy_interval(cur, ref, seed=4)
    assert ours is not None and p is not None
    assert ours.low == pytest.approx(theirs.low, abs=0.002)
    assert ours.high == pytest.approx(theirs.high, abs=0.002)
    assert p == pytest.approx(stats.ttest_rel(cur, ref).pvalue, abs=0.02)


@pytest.mark.parametrize("changed", [0.05, 0.3])
def test_bootstrap_where_few_samples_changed_agrees_with_scipy(changed, monkeypatch):
    """Mostly unchanged samples with continuous differences take the sparse path (only draws
    landing on a changed sample count); scipy draws every index. Same distribution: the
    intervals agree within Monte Carlo error, the p-value with the paired t-test."""
    from assay.compare import paired_tests

    taken = []
    sparse = paired_tests._sparse_means
    monkeypatch.setattr(
        paired_tests, "_sparse_means", lambda *a, **k: taken.append(1) or sparse(*a, **k)
    )
    rng = np.random.default_rng(21)
    ref = rng.beta(5, 2, 3000)
    moved = rng.random(3000) < changed
    cur = np.where(moved, np.clip(ref - 0.02 + rng.normal(0, 0.15, 3000), 0, 1), ref)
    ours, p = paired_bootstrap(
        cur - ref, rng=np.random.default_rng(5), resamples=9999, confidence=0.95
    )
    theirs = scipy_interval(cur, ref, seed=6)
    assert taken and ours is not None and p is not None
    assert ours.low == pytest.approx(theirs.low, abs=0.0015)
    assert ours.high == pytest.approx(theirs.high, abs=0.0015)
    assert p == pytest.approx(stats.ttest_rel(cur, ref).pvalue, abs=0.02)


@pytest.mark.parametrize("shift", [0.0, 0.01, 0.02, 0.03])
def test_bootstrap_p_value_agrees_with_paired_t_test(shift):
    rng = np.random.default_rng(7)
    ref = rng.beta(5, 2, 200)
    cur = np.clip(ref - shift + rng.normal(0, 0.1, 200), 0, 1)
    _, p = paired_bootstrap(
        cur - ref, rng=np.random.default_rng(1), resamples=4000, confidence=0.95
    )
    expected = stats.ttest_rel(cur, ref).pvalue
    assert p == pytest.approx(expected, abs=0.02)


def test_minimum_detectable_difference_matches_statsmodels_power():
    rng = np.random.default_rng(2)
    d = rng.normal(0, 0.2, 150)
    effect = NormalIndPower().solve_power(
        effect_size=None, nobs1=150, alpha=0.05, power=0.8, ratio=0
    )
    assert minimum_detectable_difference(d, 0.05) == pytest.approx(effect * d.std(ddof=1), rel=1e-3)
    assert minimum_detectable_difference(np.zeros(10), 0.05) is None  # no spread: undefined
    assert minimum_detectable_difference(np.array([0.1]), 0.05) is None


def test_a_detected_drop_exceeds_its_mdd_and_noise_stays_inside():
    rng = np.random.default_rng(11)
    quality = rng.beta(5, 2, 200)
    ref = np.clip(quality + rng.normal(0, 0.05, 200), 0, 1)[:, None]
    cur = np.clip(quality - 0.1 + rng.normal(0, 0.05, 200), 0, 1)[:, None]
    [row] = compare_reports(from_matrix({"judge": cur}), from_matrix({"judge": ref})).metrics
    assert row.verdict == "regressed"
    assert row.mean.mdd is not None and abs(row.mean.delta) > row.mean.mdd
    assert row.mean.interval is not None and row.mean.interval.high < 0


def test_join_on_row_hash_survives_renamed_ids():
    ref = make_report(
        {"a": {"scores": {"m": [1.0]}}, "b": {"scores": {"m": [0.0]}}},
        hashes={"a": "h1", "b": "h2"},
    )
    cur = make_report(
        {"A": {"scores": {"m": [0.0]}}, "b": {"scores": {"m": [0.0]}}},
        hashes={"A": "h1", "b": "h2"},
    )
    result = compare_reports(cur, ref)
    assert result.join_key == "row_hash"
    assert result.counts.compared == 2 and not result.added and not result.removed
    [flip] = result.flips
    assert (flip.sample_id, flip.direction, flip.before, flip.after) == (
        "A",
        "pass-to-fail",
        1.0,
        0.0,
    )
    [new] = result.new_failures
    assert new.sample_id == "A" and new.failed_metrics == ["m"]


def test_join_falls_back_to_id_when_hashes_are_ambiguous():
    hashes = {"a": "same", "b": "same", "c": "h3"}
    ref = make_report({k: {"scores": {"m": [1.0]}} for k in "abc"}, hashes=hashes)
    cur = make_report({k: {"scores": {"m": [1.0]}} for k in "abd"}, hashes={**hashes, "d": "h4"})
    result = compare_reports(cur, ref)
    assert result.join_key == "id"
    assert [r.sample_id for r in result.added] == ["d"]
    assert [r.sample_id for r in result.removed] == ["c"]
    assert result.counts.compared == 2


def test_cohort_rows_errors_and_one_sided_metrics():
    ref = make_report(
        {
            "p1": {"tags": ["policy"], "scores": {"m": [1.0], "old": [1.0]}},
            "p2": {"tags": ["policy"], "scores": {"m": [1.0], "old": [1.0]}},
            "g1": {"tags": ["geo", "policy"], "scores": {"m": [0.2], "old": [1.0]}},
            "u1": {"scores": {"m": [0.9], "old": [1.0]}},
        }
    )
    cur = make_report(
        {
            "p1": {"tags": ["policy"], "scores": {"m": [None]}},
            "p2": {"tags": ["policy"], "scores": {"m": [0.8]}},
            "g1": {"tags": ["geo", "policy"], "scores": {"m": [0.7]}},
            "u1": {"scores": {"m": [0.9]}},
        }
    )
    result = compare_reports(cur, ref)
    assert [m.metric for m in result.metrics] == ["m"]
    assert "metric 'old' is only in the reference report" in result.warnings
    scopes = [(c.cohort_label, c.paired) for c in result.cohorts]
    assert scopes == [("geo", 1), ("policy", 2), ("(untagged)", 1)]  # p1 errored: not paired
    assert result.metrics[0].coverage_current == pytest.approx(0.75)
    [new] = result.new_failures
    assert new.sample_id == "p1" and new.errored == ["m"]
    flips = {(f.sample_id, f.direction) for f in result.flips}
    assert flips == {("g1", "fail-to-pass")}


def test_nothing_in_common_is_incomparable_and_does_not_gate():
    ref = make_report({"a": {"scores": {"m": [1.0]}}})
    cur = make_report({"b": {"scores": {"m": [0.0]}}})
    result = compare_reports(cur, ref)
    assert not result.comparable and "no sample" in (result.incomparable_reason or "")
    assert result.metrics[0].verdict == "incomparable" and result.metrics[0].mean.delta is None
    gate_result = check_gate(cur, GateRules(max_failures=0), result)
    assert gate_result.passed and any("not usable" in w for w in gate_result.warnings)


def test_deterministic_for_a_seed_and_alpha_validated():
    ref, cur = binary_pair(1)
    a = compare_reports(from_matrix({"m": cur[:, None]}), from_matrix({"m": ref[:, None]}), seed=5)
    b = compare_reports(from_matrix({"m": cur[:, None]}), from_matrix({"m": ref[:, None]}), seed=5)
    assert a == b
    with pytest.raises(UsageError):
        compare_reports(
            from_matrix({"m": cur[:, None]}), from_matrix({"m": ref[:, None]}), alpha=1.5
        )


def test_schema_shipped_and_documents_validate():
    shipped = Path(comparison_module.__file__).parents[1] / "schemas" / "comparison.v1.json"
    schema = json.loads(shipped.read_text(encoding="utf-8"))
    assert schema == generate("comparison.v1.json"), "regenerate: python -m assay.cli.schema_files"
    rng = np.random.default_rng(0)
    ref = rng.random((50, 2))
    cur = np.clip(ref - 0.2, 0, 1)
    cur[3, 0] = np.nan
    tags = [["a"] if i % 3 else [] for i in range(50)]
    result = compare_reports(
        from_matrix({"x": cur, "y": ref}, tags=tags), from_matrix({"x": ref, "y": ref}, tags=tags)
    )
    document = json.loads(result.model_dump_json())
    jsonschema.validate(document, schema)
    assert document["schema_version"] == "assay.comparison.v1"
    assert result.summary().counts.regressions == result.regression_count >= 1


def test_too_few_samples_say_so_instead_of_claiming_no_change():
    ref = make_report({f"s{i}": {"scores": {"m": [1.0]}} for i in range(4)})
    cur = make_report({f"s{i}": {"scores": {"m": [0.0 if i < 3 else 1.0]}} for i in range(4)})
    result = compare_reports(cur, ref)
    [row] = result.metrics
    # 3 of 4 flipped pass -> fail, yet McNemar's exact p is 0.25: nothing is detectable here
    assert row.pass_rate.p_value == pytest.approx(0.25) and row.verdict == "too-few-pairs"
    assert row.label() == "too few pairs to tell"
    assert row.why().startswith("pass-rate interval [-1.000, -0.250] excludes zero")
    assert row.pass_rate.mdd is None and row.mean.mdd is None
    [few] = [w for w in result.warnings if "cannot tell these changes from noise" in w]
    assert "6 one-way flips" in few and "add samples or repetitions): m (4)" in few
