"""The statistics a report shows for one metric: percentiles, histogram buckets, the mean with
its Student-t interval, the pass-rate with its Wilson interval. Undefined statistics are
``None``, never 0."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from assay.report.model import Bucket, Interval

if TYPE_CHECKING:  # numpy loads where first used: a run's first requests do not wait for it
    import numpy as np

HISTOGRAM_BUCKETS = 10
_ROUND = 10**10
_T_TABLE = Path(__file__).with_name("t975.bin")
"""Student's t 0.975 quantiles for df = 1 .. :data:`_T_TABLE_SIZE`, scipy's numbers bit for
bit (written by ``scripts/t_table.py``): a 95 % mean interval reads its quantile here instead
of importing ``scipy.special``, which costs about 0.35 s of CPU in every run."""
_T_TABLE_SIZE = 2**15
_T_TABLE_LEVEL = 0.975


def percentile(sorted_values: np.ndarray, q: float) -> float | None:
    """Linear-interpolation percentile (numpy 'linear', Excel PERCENTILE.INC); None if empty.

    The values are sorted already, so the order statistics are read off them
    (:func:`linear_percentile`: ``np.percentile``'s result bit for bit, without its partition
    and the ``numpy.ma`` import it makes)."""
    if sorted_values.size == 0:
        return None
    return linear_percentile(sorted_values.size, q, lambda k: float(sorted_values[k]))


def histogram(values: np.ndarray, buckets: int = HISTOGRAM_BUCKETS) -> list[Bucket]:
    """Equal-width buckets over [0, 1]; scores rounded to 10 decimals first, 1.0 in the last bucket.

    Bucketing uses integer arithmetic on the rounded score, so 0.3 lands in [0.3, 0.4) and
    0.7 - 0.4 does too, with no float artefacts at the edges.
    """
    return buckets_of(histogram_counts(values, buckets))


def histogram_counts(values: np.ndarray, buckets: int = HISTOGRAM_BUCKETS) -> np.ndarray:
    """How many of ``values`` fall in each of :func:`histogram`'s buckets (an int64 array);
    counts of parts of a column add up to the counts of the whole."""
    import numpy as np

    counts = np.zeros(buckets, dtype=np.int64)
    if values.size:
        scaled = np.rint(values * _ROUND).astype(np.int64)
        # Lower edges in units of 1e-10, exactly as the buckets print them, so a score equal to
        # a printed edge lands in the bucket that starts there (1/3 with 3 buckets -> bucket 1).
        lowers = np.array(
            [round(round(i / buckets, 10) * _ROUND) for i in range(buckets)], dtype=np.int64
        )
        index = np.clip(np.searchsorted(lowers, scaled, side="right") - 1, 0, buckets - 1)
        counts = np.bincount(index, minlength=buckets)
    return counts


def buckets_of(counts: np.ndarray) -> list[Bucket]:
    """:func:`histogram`'s buckets from their counts."""
    buckets = len(counts)
    return [
        Bucket(
            lower=round(i / buckets, 10), upper=round((i + 1) / buckets, 10), count=int(counts[i])
        )
        for i in range(buckets)
    ]


def linear_percentile(count: int, q: float, order_statistic: Callable[[int], float]) -> float:
    """numpy's 'linear' percentile ``q`` of ``count`` values, from the one or two order
    statistics it interpolates between (``order_statistic(k)``: the k-th smallest, from 0).

    The same arithmetic as ``np.percentile(values, q, method="linear")`` (numpy 2: the virtual
    index ``(count - 1) * q / 100``, then its lerp, which works back from the upper value when
    the fraction is 0.5 or more), so the result is that call's, bit for bit, without the values
    in memory.
    """
    virtual = (count - 1) * (q / 100)
    if virtual >= count - 1:
        return order_statistic(count - 1)
    below = math.floor(virtual)
    fraction = virtual - below
    low, high = order_statistic(below), order_statistic(below + 1)
    step = high - low
    return high - step * (1 - fraction) if fraction >= 0.5 else low + step * fraction


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for a binomial proportion."""
    from statistics import NormalDist

    if n <= 0:
        return Interval(low=0.0, high=1.0, confidence=confidence)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = (z / denom) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return Interval(
        low=max(0.0, centre - half), high=min(1.0, centre + half), confidence=confidence
    )


def t_quantile(df: int, level: float) -> float:
    """Student's t quantile at ``level`` with ``df`` degrees of freedom.

    The 0.975 quantile (a 95 % interval) of df up to 2^15 is read from scipy's table
    (:data:`_T_TABLE`, ``stdtrit`` bit for bit). Beyond the table it is the expansion of
    :func:`_large_df_quantile`, within 1e-14 of ``stdtrit`` (a few ulps): importing scipy for
    it cost ~0.35 s of CPU, 0.6 us a score of a 100,000-sample run. Other levels at smaller
    df ask scipy itself.
    """
    if df > _T_TABLE_SIZE:
        return _large_df_quantile(df, level)
    if level == _T_TABLE_LEVEL and df >= 1:
        try:
            with _T_TABLE.open("rb") as table:
                table.seek(8 * (df - 1))
                value: float = struct.unpack("<d", table.read(8))[0]
            return value
        except (OSError, struct.error):  # an install without the table: scipy answers
            pass
    from scipy.special import stdtrit  # ~0.35 s of start-up: only where the table has no entry

    return float(stdtrit(df, level))


def _large_df_quantile(df: int, level: float) -> float:
    """The t quantile as the normal quantile ``z`` plus the first four terms of its expansion
    in 1/df (Abramowitz and Stegun 26.7.5). For df above 2^15 the first term left out is below
    1e-19 of the value, so the error is the rounding of these terms and of ``z``."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(level)
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    return z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df


def mean_interval(values: np.ndarray, confidence: float = 0.95) -> Interval | None:
    """Student-t interval of a mean, clipped to [0, 1]; None below two values."""
    n = values.size
    if n < 2:
        return None
    return t_interval(n, float(values.mean()), float(values.std(ddof=1)), confidence)


def t_interval(n: int, mean: float, spread: float, confidence: float = 0.95) -> Interval:
    """:func:`mean_interval` from the count, mean and sample standard deviation (n >= 2)."""
    half = t_quantile(n - 1, 0.5 + confidence / 2) * spread / math.sqrt(n)
    return Interval(low=max(0.0, mean - half), high=min(1.0, mean + half), confidence=confidence)
