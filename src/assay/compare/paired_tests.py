"""Paired statistics for comparing two runs on the same samples: Holm's step-down adjustment,
the exact sign (McNemar) test, the paired bootstrap and the minimum detectable difference."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from assay.report.model import Interval

POWER = 0.80
_BOOTSTRAP_CELLS = 2_000_000  # resample-matrix cells per chunk, bounds memory on big datasets
# Draw counts of distinct columns when there are at most n / this many: a multinomial draw per
# distinct column costs about as much as drawing and gathering this many indices.
_DISTINCT_PER_SAMPLE = 8
# Draw only on the columns that are not all zero when they are at most n / this many.
_ZERO_SHARE = 2


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
    """Two-sided exact sign test on paired differences (zeros dropped); exact McNemar for 0/1.

    With k of the n nonzero differences on the rarer side, the p-value is
    min(1, 2 P(X <= k)) for X ~ Binomial(n, 1/2): the outcomes no likelier than k's, on both
    sides, as ``scipy.stats.binomtest(k, n).pvalue`` computes it.
    """
    negative = int(np.sum(differences < 0))
    positive = int(np.sum(differences > 0))
    if negative + positive == 0:
        return 1.0 if differences.size else None
    # scipy.stats costs ~0.5 s of start-up: paid only when a sign test runs (special's bdtr,
    # lighter, loses 1e-10 near an even split where binomtest is exact)
    from scipy.stats import binomtest

    return float(binomtest(min(negative, positive), negative + positive).pvalue)


def _t_upper_tail(df: int, t: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (scipy's ``stdtr``)."""
    from scipy.special import stdtr  # scipy.special: ~0.3 s of start-up, paid only by a test

    return float(stdtr(df, -t))


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
    exact sign test decides. Resamples are drawn as :func:`_resampled_means` says.
    """
    return paired_bootstrap_rows(
        np.atleast_2d(differences), rng=rng, resamples=resamples, confidence=confidence
    )[0]


def paired_bootstrap_rows(
    rows: np.ndarray, *, rng: np.random.Generator, resamples: int, confidence: float
) -> list[tuple[Interval | None, float | None]]:
    """:func:`paired_bootstrap` for several statistics of the same samples (one resampling)."""
    k, n = rows.shape
    if n == 0:
        return [(None, None)] * k
    means = _resampled_means(rows, rng=rng, resamples=resamples)
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
            p_value = 2.0 * _t_upper_tail(n - 1, abs(float(differences.mean())) / spread)
        results.append((interval, p_value))
    return results


def _resampled_means(rows: np.ndarray, *, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Each row's mean in every bootstrap resample of the columns (the samples), ``(k, resamples)``.

    A resample draws ``n`` columns with replacement. When few distinct columns repeat (pass/fail
    flips, scores on a scale, golden answers that recur), how often each distinct column is
    drawn is Multinomial(n, count / n), which is sampled directly (:func:`_distinct_means`).
    When most columns are all zero (a run where few samples changed), only the draws that land
    on the others count (:func:`_sparse_means`). Otherwise the indices are drawn, a chunk of
    resamples at a time. Each is the same distribution of resampled means as drawing indices.
    """
    k, n = rows.shape
    changed = np.flatnonzero(rows.any(axis=0))
    # Costs in index draws a resample: n for indices, m for the sparse draw, 8 per distinct.
    if changed.size * _ZERO_SHARE <= n:
        moved = rows[:, changed]
        distinct, counts = np.unique(moved, axis=1, return_counts=True)  # m columns, not n
        if (counts.size + 1) * _DISTINCT_PER_SAMPLE <= changed.size:
            distinct = np.concatenate([np.zeros((k, 1)), distinct], axis=1)
            counts = np.concatenate([[n - changed.size], counts])
            return _distinct_means(distinct, counts, n, rng=rng, resamples=resamples)
        return _sparse_means(moved, n, rng=rng, resamples=resamples)
    distinct, counts = np.unique(rows, axis=1, return_counts=True)
    if counts.size * _DISTINCT_PER_SAMPLE <= n:
        return _distinct_means(distinct, counts, n, rng=rng, resamples=resamples)
    means = np.empty((k, resamples))
    chunk = max(1, _BOOTSTRAP_CELLS // (n * k))
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[:, start:stop] = rows[:, idx].mean(axis=2)
    return means


def _distinct_means(
    distinct: np.ndarray, counts: np.ndarray, n: int, *, rng: np.random.Generator, resamples: int
) -> np.ndarray:
    """Resampled means from how often each distinct column is drawn: Multinomial(n, count / n)."""
    means = np.empty((distinct.shape[0], resamples))
    chunk = max(1, _BOOTSTRAP_CELLS // counts.size)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        drawn = rng.multinomial(n, counts / n, size=stop - start)
        means[:, start:stop] = (distinct @ drawn.T) / n
    return means


def _sparse_means(
    changed: np.ndarray, n: int, *, rng: np.random.Generator, resamples: int
) -> np.ndarray:
    """Resampled means when only ``changed``'s columns (of ``n``) are not all zero: of a
    resample's ``n`` draws, Binomial(n, m / n) land on those m columns, each uniformly, and the
    rest add nothing. Costs what drawing ~m indices a resample costs, not n."""
    k, m = changed.shape
    means = np.zeros((k, resamples))
    if m == 0:
        return means
    hits = rng.binomial(n, m / n, size=resamples)
    per_chunk = max(1, _BOOTSTRAP_CELLS // (k * m))  # resamples of ~m draws each
    for start in range(0, resamples, per_chunk):
        counts = hits[start : start + per_chunk]
        drawn = changed[:, rng.integers(0, m, size=int(counts.sum()))]
        running = np.concatenate([np.zeros((k, 1)), np.cumsum(drawn, axis=1)], axis=1)
        ends = np.cumsum(counts)
        means[:, start : start + counts.size] = (running[:, ends] - running[:, ends - counts]) / n
    return means


@lru_cache(maxsize=32)
def _z_sum(alpha: float) -> float:
    from statistics import NormalDist

    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(POWER)


def minimum_detectable_difference(differences: np.ndarray, alpha: float) -> float | None:
    """(z_{1-alpha/2} + z_{power}) * sd(d) / sqrt(n); None when the spread is unknown or zero."""
    n = differences.size
    if n < 2:
        return None
    spread = float(np.std(differences, ddof=1))
    if spread == 0.0:
        return None
    return _z_sum(alpha) * spread / math.sqrt(n)
