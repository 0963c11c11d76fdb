"""Statistics of paired continuous scores, with the None rules of
:mod:`assay.calibration.stats`: RMSE and MAE, correlations with p-values and intervals, the
paired systematic bias (t-test, d_z, Bland-Altman limits) and intraclass correlations.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from assay.calibration.bands import correlation_band, effect_size_band
from assay.calibration.result import Bias, Correlation

ZERO_SPREAD = 1e-12  # a spread at or below this is no spread (float noise)


def finite(value: float) -> float | None:
    """``value`` as a float, or None when it is NaN or infinite."""
    value = float(value)
    return value if math.isfinite(value) else None


def rmse(true: np.ndarray, pred: np.ndarray) -> float | None:
    """Root mean squared error (scikit-learn); None without pairs."""
    from sklearn.metrics import mean_squared_error

    if len(true) == 0:
        return None
    return float(math.sqrt(mean_squared_error(true, pred)))


def mae(true: np.ndarray, pred: np.ndarray) -> float | None:
    """Mean absolute error (scikit-learn); None without pairs."""
    from sklearn.metrics import mean_absolute_error

    if len(true) == 0:
        return None
    return float(mean_absolute_error(true, pred))


def correlation(
    x: np.ndarray,
    y: np.ndarray,
    method: Literal["spearman", "kendall", "pearson"],
    confidence: float = 0.95,
) -> Correlation:
    """scipy correlation with p-value and a Fisher-z interval; None below 3 pairs or when
    either side is constant."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = len(x)
    if n < 3:
        return Correlation(
            method=method, coefficient=None, p_value=None, n=n, interpretation="insufficient data"
        )
    if np.ptp(x) <= ZERO_SPREAD or np.ptp(y) <= ZERO_SPREAD:
        return Correlation(
            method=method, coefficient=None, p_value=None, n=n, interpretation="undefined"
        )
    result = _scipy_correlation(x, y, method)
    coefficient = finite(result.statistic)
    p_value = finite(result.pvalue) if coefficient is not None else None
    ci = None
    if coefficient is not None:
        ci = (
            _pearson_interval(result, confidence)
            if method == "pearson"
            else fisher_interval(coefficient, n, method, confidence)
        )
    return Correlation(
        method=method,
        coefficient=coefficient,
        p_value=p_value,
        n=n,
        interpretation=correlation_band(coefficient),
        ci=ci,
        ci_method=None if ci is None else _CI_METHODS[method],
    )


def _scipy_correlation(
    x: np.ndarray, y: np.ndarray, method: Literal["spearman", "kendall", "pearson"]
) -> Any:
    """scipy's result object (statistic, pvalue), its warnings silenced."""
    from scipy import stats

    funcs: dict[str, Callable[[np.ndarray, np.ndarray], Any]] = {
        "spearman": stats.spearmanr,
        "kendall": stats.kendalltau,
        "pearson": stats.pearsonr,
    }
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return funcs[method](x, y)


_CI_METHODS = {
    "pearson": "fisher-z",
    "spearman": "fisher-z, variance 1.06/(n-3)",
    "kendall": "fisher-z, variance 0.437/(n-4)",
}
# Fieller, Hartley & Pearson (1957): var(atanh r) for Spearman's rho and Kendall's tau
_FISHER_VARIANCE = {"spearman": (1.06, 3), "kendall": (0.437, 4)}


def _pearson_interval(result: Any, confidence: float) -> tuple[float, float] | None:
    """scipy's Fisher-z interval of a PearsonRResult; None when it is not finite."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            bounds = result.confidence_interval(confidence_level=confidence)
        except ValueError:
            return None
    low, high = float(bounds.low), float(bounds.high)
    return (low, high) if math.isfinite(low) and math.isfinite(high) else None


def fisher_interval(
    r: float, n: int, method: Literal["spearman", "kendall"], confidence: float = 0.95
) -> tuple[float, float] | None:
    """Fisher-z interval of a rank correlation; None when n is too small or |r| = 1."""
    from scipy.stats import norm

    factor, offset = _FISHER_VARIANCE[method]
    if n <= offset or abs(r) >= 1.0:
        return None
    half = float(norm.ppf(0.5 + confidence / 2)) * math.sqrt(factor / (n - offset))
    z = math.atanh(r)
    return (math.tanh(z - half), math.tanh(z + half))


def systematic_bias(pred: np.ndarray, true: np.ndarray, *, confidence: float = 0.95) -> Bias:
    """Paired bias of ``pred - true``: t-test, t-interval, Cohen's d_z, Bland-Altman limits.

    Differences that do not vary (SD below 1e-12, which also catches float noise such as
    0.8 - 0.7 vs 0.9 - 0.8) leave the test undefined (None), never a NaN or a fake p-value.
    """
    diff = np.asarray(pred, dtype=np.float64) - np.asarray(true, dtype=np.float64)
    n = len(diff)
    if n == 0:
        return _untested(0, None, None, None, confidence=confidence)
    mean = float(np.mean(diff))
    direction = "positive" if mean > 0.001 else "negative" if mean < -0.001 else "none"
    if n == 1:
        return _untested(1, mean, None, direction, confidence=confidence)
    std = float(np.std(diff, ddof=1))
    limits = (mean - 1.96 * std, mean + 1.96 * std)
    if std <= ZERO_SPREAD * max(1.0, abs(mean)):
        return _untested(n, mean, std, direction, confidence=confidence, limits=limits)
    return _tested_bias(
        pred, true, n, mean, std, limits=limits, direction=direction, confidence=confidence
    )


def _untested(
    n: int,
    mean: float | None,
    std: float | None,
    direction: str | None,
    *,
    confidence: float,
    limits: tuple[float, float] | None = None,
) -> Bias:
    """A Bias whose paired t-test is undefined (no pairs, one pair, or no spread)."""
    return Bias(
        n=n,
        mean_bias=mean,
        std_bias=std,
        confidence_level=confidence,
        direction=direction,
        is_significant=None,
        t_statistic=None,
        p_value=None,
        ci_low=None,
        ci_high=None,
        effect_size=None,
        effect_interpretation="undefined",
        limits_of_agreement=limits,
    )


def _tested_bias(
    pred: np.ndarray,
    true: np.ndarray,
    n: int,
    mean: float,
    std: float,
    *,
    limits: tuple[float, float],
    direction: str,
    confidence: float,
) -> Bias:
    """The paired t-test, its t-interval and Cohen's d_z (differences that vary, n >= 2)."""
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        test = stats.ttest_rel(pred, true)
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * std / math.sqrt(n)
    effect = mean / std
    p_value = finite(test.pvalue)
    return Bias(
        n=n,
        mean_bias=mean,
        std_bias=std,
        t_statistic=finite(test.statistic),
        p_value=p_value,
        ci_low=mean - half,
        ci_high=mean + half,
        confidence_level=confidence,
        effect_size=effect,
        effect_interpretation=effect_size_band(effect),
        limits_of_agreement=limits,
        direction=direction,
        is_significant=None if p_value is None else p_value < 0.05,
    )


def icc(ratings: np.ndarray) -> dict[str, float | None]:
    """Shrout & Fleiss (1979) intraclass correlations of a targets x raters matrix.

    ``icc1`` one-way random (ICC(1,1)), ``icc2`` two-way random, absolute agreement
    (ICC(2,1) = ICC(A,1)), ``icc3`` two-way mixed, consistency (ICC(3,1) = ICC(C,1)); single
    rater, from the two-way ANOVA mean squares. None with fewer than 2 targets or 2 raters, or
    a zero denominator (no variance at all).
    """
    x = np.asarray(ratings, dtype=np.float64)
    out: dict[str, float | None] = {"icc1": None, "icc2": None, "icc3": None}
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        return out
    n, k = x.shape
    grand = x.mean()
    ss_rows = k * float(np.sum((x.mean(axis=1) - grand) ** 2))
    ss_cols = n * float(np.sum((x.mean(axis=0) - grand) ** 2))
    ss_total = float(np.sum((x - grand) ** 2))
    ss_error = ss_total - ss_rows - ss_cols
    ms_rows = ss_rows / (n - 1)
    ms_cols = ss_cols / (k - 1)
    ms_error = ss_error / ((n - 1) * (k - 1))
    ms_within = (ss_total - ss_rows) / (n * (k - 1))
    denominators = {
        "icc1": (ms_rows - ms_within, ms_rows + (k - 1) * ms_within),
        "icc2": (ms_rows - ms_error, ms_rows + (k - 1) * ms_error + k * (ms_cols - ms_error) / n),
        "icc3": (ms_rows - ms_error, ms_rows + (k - 1) * ms_error),
    }
    for name, (numerator, denominator) in denominators.items():
        if abs(denominator) > ZERO_SPREAD:
            out[name] = numerator / denominator
    return out
