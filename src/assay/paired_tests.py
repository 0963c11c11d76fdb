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
    exact sign test decides. Resamples are drawn as :func:`_resampled_means` says.
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
            p_value = float(2.0 * student_t.sf(abs(float(differences.mean())) / spread, n - 1))
        results.append((interval, p_value))
    return results


def _resampled_means(rows: np.ndarray, *, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Each row's mean in every bootstrap resample of the columns (the samples), ``(k, resamples)``.

    A resample draws ``n`` columns with replacement. When few distinct columns repeat (pass/fail
    flips, scores on a scale, golden answers that recur), how often each distinct column is
    drawn is Multinomial(n, count / n), which is sampled directly: the same distribution of
    resampled means as drawing indices, at a cost that grows with the distinct columns, not with
    ``n``. Otherwise the indices are drawn, a chunk of resamples at a time.
    """
    k, n = rows.shape
    distinct, counts = np.unique(rows, axis=1, return_counts=True)
    means = np.empty((k, resamples))
    if counts.size * _DISTINCT_PER_SAMPLE <= n:
        chunk = max(1, _BOOTSTRAP_CELLS // counts.size)
        for start in range(0, resamples, chunk):
            stop = min(resamples, start + chunk)
            drawn = rng.multinomial(n, counts / n, size=stop - start)
            means[:, start:stop] = (distinct @ drawn.T) / n
        return means
    chunk = max(1, _BOOTSTRAP_CELLS // (n * k))
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[:, start:stop] = rows[:, idx].mean(axis=2)
    return means


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
