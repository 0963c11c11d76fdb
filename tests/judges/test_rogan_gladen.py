"""The Rogan-Gladen corrected pass rate: against the formula written out by hand, and against a
simulation of judges with known sensitivity and specificity."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from assay.calibration.rogan_gladen import PassCounts, rogan_gladen


def test_estimate_is_the_published_formula() -> None:
    # 60 of 100 judged passes; people pass 50 items (judge passes 45), fail 50 (judge fails 40)
    counts = PassCounts(true_pass=45, false_fail=5, false_pass=10, true_fail=40)
    found = rogan_gladen(60, 100, counts)
    se, sp = 45 / 50, 40 / 50
    assert found.estimate == pytest.approx((0.6 + sp - 1) / (se + sp - 1))  # 0.5714...
    assert found.estimate == pytest.approx(0.4 / 0.7)


def test_interval_by_hand() -> None:
    counts = PassCounts(true_pass=45, false_fail=5, false_pass=10, true_fail=40)
    found = rogan_gladen(60, 100, counts, confidence=0.95)
    z = stats.norm.ppf(0.975)
    # Agresti-Coull: z^2/2 successes and failures added to each proportion
    p = (60 + z * z / 2) / (100 + z * z)
    se = (45 + z * z / 2) / (50 + z * z)
    sp = (40 + z * z / 2) / (50 + z * z)
    prev = (p + sp - 1) / (se + sp - 1)
    var = (
        p * (1 - p) / (100 + z * z)
        + prev**2 * se * (1 - se) / (50 + z * z)
        + (1 - prev) ** 2 * sp * (1 - sp) / (50 + z * z)
    ) / (se + sp - 1) ** 2
    assert found.low == pytest.approx(prev - z * math.sqrt(var))
    assert found.high == pytest.approx(prev + z * math.sqrt(var))
    assert found.low < found.estimate < found.high


def test_a_judge_no_better_than_chance_leaves_it_undefined() -> None:
    counts = PassCounts(true_pass=5, false_fail=5, false_pass=5, true_fail=5)  # Se + Sp = 1
    found = rogan_gladen(10, 20, counts)
    assert found.estimate is None and found.low is None and found.high is None
    assert rogan_gladen(0, 0, PassCounts(4, 0, 0, 4)).estimate is None
    assert rogan_gladen(3, 5, PassCounts(0, 0, 2, 2)).estimate is None  # no human pass: no Se


def test_estimate_and_interval_are_clipped() -> None:
    counts = PassCounts(true_pass=9, false_fail=1, false_pass=1, true_fail=9)
    low = rogan_gladen(0, 50, counts)  # fewer passes than the false-pass rate explains
    assert low.estimate == 0.0 and low.low == 0.0
    high = rogan_gladen(50, 50, counts)
    assert high.estimate == 1.0 and high.high == 1.0


def test_simulation_recovers_the_true_rate_and_covers_it() -> None:
    """Judges with Se 0.85, Sp 0.90 on a population passing 30%: calibration sets of 80 human
    passes and 120 human failures, runs of 500; the interval must hold the truth ~95% of the
    time (it carries the calibration's error, which a run-only interval would miss)."""
    rng = np.random.default_rng(38)
    truth, se, sp, n_run, n_pos, n_neg, reps = 0.30, 0.85, 0.90, 500, 80, 120, 2000
    observed = truth * se + (1 - truth) * (1 - sp)
    passed = rng.binomial(n_run, observed, reps)
    tp = rng.binomial(n_pos, se, reps)
    tn = rng.binomial(n_neg, sp, reps)
    estimates, covered, naive_covered = [], 0, 0
    for k in range(reps):
        counts = PassCounts(int(tp[k]), n_pos - int(tp[k]), n_neg - int(tn[k]), int(tn[k]))
        found = rogan_gladen(int(passed[k]), n_run, counts)
        assert found.estimate is not None and found.low is not None and found.high is not None
        estimates.append(found.estimate)
        covered += found.low <= truth <= found.high
        # the same centre with the run's variance only
        j = counts.sensitivity + counts.specificity - 1  # type: ignore[operator]
        p = passed[k] / n_run
        half = 1.96 * math.sqrt(p * (1 - p) / n_run) / j
        naive_covered += abs(found.estimate - truth) <= half
    assert abs(float(np.mean(estimates)) - truth) < 0.01
    assert 0.93 <= covered / reps <= 0.985
    assert naive_covered / reps < covered / reps - 0.05  # calibration uncertainty matters
