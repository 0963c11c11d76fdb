"""The vectorised bootstrap against scipy.stats.bootstrap.

Both draw resample indices as ``rng.integers(0, n, (B, n))`` from ``default_rng(seed)``, so
with the same seed the resamples are identical and the percentile and BCa intervals must
match scipy's to floating-point precision.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from assay.calibration import LabelSet, compute_agreement

from .builders import binary, ordinal


def _labels(human: np.ndarray, judge: np.ndarray, criterion=None) -> LabelSet:
    crit = criterion or binary("q")
    n = human.shape[-1]
    return LabelSet(
        criteria=(crit,),
        item_ids=tuple(map(str, range(n))),
        judges=("j",),
        human=human.reshape(1, n).astype(np.int16),
        votes=judge.reshape(1, 1, n).astype(np.int16),
    )


def _scipy(data, statistic, seed, method, n_resamples, paired=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sps.bootstrap(
            data,
            statistic,
            n_resamples=n_resamples,
            method=method,
            rng=np.random.default_rng(seed),
            paired=paired,
            vectorized=not paired,
            confidence_level=0.95,
        ).confidence_interval


def test_accuracy_intervals_equal_scipy_percentile_and_bca():
    rng = np.random.default_rng(11)
    n = 60
    human = rng.integers(0, 2, n)
    judge = np.where(rng.random(n) < 0.75, human, 1 - human)
    result = compute_agreement(_labels(human, judge), bootstrap=500, seed=42)
    correct = (human == judge).astype(float)
    for method, attr in (("percentile", "percentile"), ("BCa", "bca")):
        ci = _scipy((correct,), np.mean, 42, method, 500)
        got = getattr(result.bootstrap.accuracy_micro, attr)
        assert got == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))
        got_c = getattr(result.bootstrap.criteria[0].accuracy, attr)
        assert got_c == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))
    assert result.bootstrap.accuracy_micro.estimate == pytest.approx(correct.mean())
    assert result.bootstrap.accuracy_micro.n_defined == 500


def test_kappa_intervals_equal_scipy_paired_bootstrap():
    rng = np.random.default_rng(5)
    n = 40
    human = rng.integers(0, 2, n)
    judge = np.where(rng.random(n) < 0.8, human, 1 - human)
    result = compute_agreement(_labels(human, judge), bootstrap=200, seed=9)

    def kappa(t, p):
        return cohen_kappa_score(t, p, labels=[0, 1])

    for method, attr in (("percentile", "percentile"), ("BCa", "bca")):
        ci = _scipy((human, judge), kappa, 9, method, 200, paired=True)
        got = getattr(result.bootstrap.criteria[0].kappa, attr)
        assert got == (pytest.approx(ci.low, abs=1e-9), pytest.approx(ci.high, abs=1e-9))
    # the macro mean over one criterion is that criterion's kappa
    assert (
        result.bootstrap.mean_kappa_macro.percentile
        == result.bootstrap.criteria[0].kappa.percentile
    )
    assert result.bootstrap.mean_kappa_macro.estimate == pytest.approx(kappa(human, judge))


def test_quadratic_kappa_interval_equals_scipy_with_full_labels():
    rng = np.random.default_rng(8)
    n = 30
    crit = ordinal("o", labels="12345", na=False)
    human = rng.integers(0, 4, n)  # option "5" never used by people
    judge = np.clip(human + rng.integers(-1, 2, n), 0, 4)
    result = compute_agreement(_labels(human, judge, crit), bootstrap=150, seed=3)

    def qwk(t, p):
        return cohen_kappa_score(t, p, labels=[0, 1, 2, 3, 4], weights="quadratic")

    ci = _scipy((human, judge), qwk, 3, "percentile", 150, paired=True)
    got = result.bootstrap.criteria[0].weighted_kappa.percentile
    assert got == (pytest.approx(ci.low, abs=1e-9), pytest.approx(ci.high, abs=1e-9))


def test_rmse_interval_equals_scipy():
    rng = np.random.default_rng(2)
    n = 50
    crits = (binary("a"), binary("b"), binary("c", 2.0))
    human = rng.integers(0, 2, (3, n)).astype(np.int16)
    judge = np.where(rng.random((3, n)) < 0.7, human, 1 - human).astype(np.int16)
    labels = LabelSet(
        criteria=crits,
        item_ids=tuple(map(str, range(n))),
        judges=("j",),
        human=human,
        votes=judge[None],
    )
    result = compute_agreement(labels, bootstrap=300, seed=1)
    w = np.array([1.0, 1.0, 2.0])
    h = (w[:, None] * (human == 0)).sum(axis=0) / w.sum()
    j = (w[:, None] * (judge == 0)).sum(axis=0) / w.sum()

    def rmse(hh, jj, axis=-1):
        return np.sqrt(np.mean((jj - hh) ** 2, axis=axis))

    for method, attr in (("percentile", "percentile"), ("BCa", "bca")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ci = sps.bootstrap(
                (h, j),
                rmse,
                n_resamples=300,
                method=method,
                paired=True,
                rng=np.random.default_rng(1),
            ).confidence_interval
        got = getattr(result.bootstrap.rmse, attr)
        assert got == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))


def test_bootstrap_is_reproducible_and_seed_dependent():
    rng = np.random.default_rng(0)
    human = rng.integers(0, 2, 80)
    judge = np.where(rng.random(80) < 0.7, human, 1 - human)
    a = compute_agreement(_labels(human, judge), bootstrap=100, seed=7).bootstrap
    b = compute_agreement(_labels(human, judge), bootstrap=100, seed=7).bootstrap
    c = compute_agreement(_labels(human, judge), bootstrap=100, seed=8).bootstrap
    assert a == b
    assert a.accuracy_micro.percentile != c.accuracy_micro.percentile


def test_degenerate_data_gives_none_intervals_not_zero():
    human = np.zeros(10, dtype=int)
    result = compute_agreement(_labels(human, human), bootstrap=50, seed=1)
    kappa = result.bootstrap.criteria[0].kappa
    assert kappa.estimate is None and kappa.percentile is None and kappa.bca is None
    assert kappa.n_defined == 0
    assert result.bootstrap.mean_kappa_macro.percentile is None
    acc = result.bootstrap.accuracy_micro
    assert acc.percentile == (1.0, 1.0) and acc.bca == (1.0, 1.0)


def test_undefined_resamples_are_left_out_and_counted():
    # one UNMET among many MET: many resamples miss it and kappa is undefined there
    human = np.array([0] * 11 + [1])
    judge = np.array([0] * 11 + [1])
    iv = compute_agreement(_labels(human, judge), bootstrap=200, seed=4).bootstrap.criteria[0].kappa
    assert 0 < iv.n_defined < 200
    assert iv.percentile == (1.0, 1.0)


def test_large_input_is_chunked_without_changing_the_stream():
    """Chunked draws (rows of the same (B, n) stream) give the same intervals as one draw."""
    from assay.calibration import bootstrap as boot_module

    rng = np.random.default_rng(1)
    human = rng.integers(0, 2, 200)
    judge = np.where(rng.random(200) < 0.7, human, 1 - human)
    whole = compute_agreement(_labels(human, judge), bootstrap=64, seed=5).bootstrap
    old = boot_module._CHUNK_CELLS
    try:
        boot_module._CHUNK_CELLS = 200 * 7  # 7 resamples per chunk
        chunked = compute_agreement(_labels(human, judge), bootstrap=64, seed=5).bootstrap
    finally:
        boot_module._CHUNK_CELLS = old
    assert chunked == whole


def test_many_option_nominal_criterion_matches_scipy():
    """40 options: 1,600 confusion cells; the sparse path must still equal scipy's intervals."""
    from assay.calibration import Criterion

    rng = np.random.default_rng(12)
    n = 120
    crit = Criterion(name="topic", type="nominal", options=[{"label": f"t{i}"} for i in range(40)])
    human = rng.integers(0, 40, n)
    judge = np.where(rng.random(n) < 0.6, human, rng.integers(0, 40, n))
    result = compute_agreement(_labels(human, judge, crit), bootstrap=120, seed=21)

    def kappa(t, p):
        return cohen_kappa_score(t, p, labels=list(range(40)))

    for method, attr in (("percentile", "percentile"), ("BCa", "bca")):
        ci = _scipy((human, judge), kappa, 21, method, 120, paired=True)
        got = getattr(result.bootstrap.criteria[0].kappa, attr)
        assert got == (pytest.approx(ci.low, abs=1e-9), pytest.approx(ci.high, abs=1e-9))


def test_per_judge_intervals_share_the_resamples_and_match_scipy():
    rng = np.random.default_rng(31)
    n = 50
    human = rng.integers(0, 2, n)
    votes = np.stack([np.where(rng.random(n) < q, human, 1 - human) for q in (0.9, 0.7, 0.6)])
    labels = LabelSet(
        criteria=(binary("q"),),
        item_ids=tuple(map(str, range(n))),
        judges=("a", "b", "c"),
        human=human.reshape(1, n).astype(np.int16),
        votes=votes.reshape(3, 1, n).astype(np.int16),
    )
    result = compute_agreement(labels, bootstrap=200, seed=13)
    for j, block in enumerate(result.per_judge):
        correct = (votes[j] == human).astype(float)
        for method, attr in (("percentile", "percentile"), ("BCa", "bca")):
            ci = _scipy((correct,), np.mean, 13, method, 200)
            got = getattr(block.bootstrap.accuracy_micro, attr)
            assert got == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))
    assert "percentile: accuracy" in result.summary()


def test_judge_comparisons_equal_scipy_paired_differences():
    rng = np.random.default_rng(41)
    n = 60
    human = rng.integers(0, 2, n)
    votes = np.stack([np.where(rng.random(n) < q, human, 1 - human) for q in (0.95, 0.6)])
    labels = LabelSet(
        criteria=(binary("q"),),
        item_ids=tuple(map(str, range(n))),
        judges=("good", "poor"),
        human=human.reshape(1, n).astype(np.int16),
        votes=votes.reshape(2, 1, n).astype(np.int16),
    )
    result = compute_agreement(labels, bootstrap=300, seed=17)
    by_stat = {c.statistic: c for c in result.judge_comparisons}
    acc = by_stat["accuracy_micro"]
    assert (acc.judge_a, acc.judge_b) == ("good", "poor")
    ca, cb = (votes[0] == human).astype(float), (votes[1] == human).astype(float)

    def diff(a, b, axis=-1):
        return np.mean(a, axis=axis) - np.mean(b, axis=axis)

    for method, attr in (("percentile", "percentile"), ("BCa", "bca")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ci = sps.bootstrap(
                (ca, cb),
                diff,
                n_resamples=300,
                method=method,
                paired=True,
                rng=np.random.default_rng(17),
            ).confidence_interval
        got = getattr(acc.difference, attr)
        assert got == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))
    assert acc.difference.estimate == pytest.approx(ca.mean() - cb.mean())
    assert acc.excludes_zero is True
    kappa = by_stat["mean_kappa_macro"]
    assert kappa.difference.estimate == pytest.approx(
        cohen_kappa_score(human, votes[0], labels=[0, 1])
        - cohen_kappa_score(human, votes[1], labels=[0, 1])
    )
    assert "Judge comparisons (paired bootstrap" in result.summary()
    single = compute_agreement(_labels(human, votes[0]), bootstrap=20, seed=1)
    assert single.judge_comparisons is None
