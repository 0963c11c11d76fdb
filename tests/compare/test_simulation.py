"""The simulated baseline scenario of issue 5 (model in tests/compare/simulation.py).

200 samples: a true 10-point drop in one metric fails the gate; repetition noise with no
true change passes it in at least 95 of 100 seeded trials.
"""

from __future__ import annotations

import pytest

from compare.simulation import N_SAMPLES, trial


def test_noise_alone_passes_the_gate_in_at_least_95_of_100_trials():
    outcomes = [trial(seed, drop=None) for seed in range(100)]
    assert all(c.counts.compared == N_SAMPLES and c.comparable for _, c in outcomes)
    passed = sum(result.passed for result, _ in outcomes)
    assert passed >= 95, f"noise failed the gate in {100 - passed} of 100 trials"
    # the runs really differ: noise moves scores and flips samples in every trial
    assert all(c.counts.pass_to_fail + c.counts.fail_to_pass > 0 for _, c in outcomes)
    assert all(abs(c.metrics[0].mean.delta or 0) > 0 for _, c in outcomes)


@pytest.mark.parametrize("seed", range(10))
def test_true_ten_point_drop_in_judge_fails_the_gate(seed):
    result, comparison = trial(seed, drop="judge")
    assert not result.passed
    [failure] = result.failures
    assert failure.rule == "max_regressions"
    overall = {r.metric for r in comparison.regressions if r.scope == "overall"}
    assert overall == {"judge"}, "only the metric that dropped regresses overall"
    judge = next(m for m in comparison.metrics if m.metric == "judge")
    assert judge.mean.delta == pytest.approx(-0.10, abs=0.03)
    assert judge.mean.interval is not None and judge.mean.interval.high < 0


@pytest.mark.parametrize("seed", range(3))
def test_true_ten_point_drop_in_exact_match_fails_the_gate_with_repetitions(seed):
    result, comparison = trial(seed, drop="exact-match", repetitions=3)
    assert not result.passed
    exact = next(m for m in comparison.metrics if m.metric == "exact-match")
    assert exact.verdict == "regressed"
    assert exact.pass_rate.delta == pytest.approx(-0.10, abs=0.04)
    assert exact.mean.p_value is None  # a pass/fail metric is tested once, on its pass-rate


def test_single_run_pass_fail_drop_sits_at_the_detectable_limit():
    """One run of a noisy pass/fail metric: MDD says a 10-point drop is borderline."""
    _, comparison = trial(0, drop="exact-match", repetitions=1)
    exact = next(m for m in comparison.metrics if m.metric == "exact-match")
    assert exact.pass_rate.test == "mcnemar-exact"
    assert exact.pass_rate.mdd is not None and 0.07 < exact.pass_rate.mdd < 0.14
