"""Bootstrap intervals of one statistic: percentile and BCa (Efron 1987), from the replicates
and the jackknife values. Replicates that are NaN (the statistic was undefined in that
resample) are left out, and ``n_defined`` says how many remained."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from assay.calibration.bootstrap_result import Interval


def interval(
    estimate: float | None,
    replicates: np.ndarray,
    jackknife: np.ndarray | None,
    confidence: float,
) -> Interval:
    """Percentile and BCa intervals of one statistic (NaN replicates are left out)."""
    boot = replicates[~np.isnan(replicates)]
    if len(boot) == 0:
        return Interval(
            estimate=estimate, percentile=None, bca=None, standard_error=None, n_defined=0
        )
    alpha = (1.0 - confidence) / 2.0
    low, high = np.percentile(boot, [100 * alpha, 100 * (1 - alpha)])
    se = float(np.std(boot, ddof=1)) if len(boot) > 1 else None
    bca: tuple[float, float] | None = None
    if estimate is not None and np.ptp(boot) == 0:
        bca = (float(boot[0]), float(boot[0]))
    elif estimate is not None and jackknife is not None and not np.any(np.isnan(jackknife)):
        bca = _bca(boot, estimate, jackknife, alpha)
    return Interval(
        estimate=estimate,
        percentile=(float(low), float(high)),
        bca=bca,
        standard_error=se,
        n_defined=len(boot),
    )


def _bca(
    boot: np.ndarray, estimate: float, jackknife: np.ndarray, alpha: float
) -> tuple[float, float] | None:
    """The BCa interval: bias correction from the replicates, acceleration from the
    jackknife; None when either is undefined."""
    from scipy.special import ndtr, ndtri

    z0 = ndtri(
        (np.count_nonzero(boot < estimate) + np.count_nonzero(boot <= estimate)) / (2 * len(boot))
    )
    spread = np.mean(jackknife) - jackknife
    denominator = np.sum(spread**2) ** 1.5
    if not (np.isfinite(z0) and denominator > 0):
        return None
    accel = np.sum(spread**3) / (6.0 * denominator)
    ends = []
    for z_alpha in (ndtri(alpha), -ndtri(alpha)):
        shifted = z0 + z_alpha
        ends.append(ndtr(z0 + shifted / (1 - accel * shifted)))
    if not np.all(np.isfinite(ends)):
        return None
    b_low, b_high = np.percentile(boot, [100 * ends[0], 100 * ends[1]])
    return float(b_low), float(b_high)


def finite_or_none(value: float) -> float | None:
    """``value`` as a float, or None when it is NaN or infinite."""
    return float(value) if np.isfinite(value) else None


def nanmean_rows(columns: Sequence[np.ndarray]) -> np.ndarray:
    """Row-wise mean of the defined (non-NaN) values of ``columns``; NaN where none is."""
    stacked = np.stack(columns, axis=-1)
    defined = ~np.isnan(stacked)
    count = defined.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, np.nansum(stacked, axis=-1) / count, np.nan)
