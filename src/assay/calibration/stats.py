"""Statistics with the None rules: thin wrappers over scikit-learn, scipy and krippendorff.

Each wrapper returns ``None`` where the statistic is undefined (no pairs, a single class on
both sides, constant input, fewer than 3 points for a correlation, zero-variance differences
for a t-test) instead of the library's NaN or its silent 0.0. Warnings the libraries emit on
such input are silenced because the None already says it.

The only hand-written estimators are the vectorised count-based kappa (used by the bootstrap;
tested equal to scikit-learn) and Fleiss' kappa (statsmodels is a test-only dependency; tested
equal to statsmodels and to Fleiss 1971).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from assay.calibration.bands import correlation_band, effect_size_band
from assay.calibration.result import Bias, Correlation

_ZERO_SPREAD = 1e-12


def _finite(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


# --------------------------------------------------------------------------- categorical


def cohen_kappa(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    labels: Sequence[int],
    weights: Literal["linear", "quadratic"] | None = None,
) -> float | None:
    """scikit-learn's Cohen's kappa over the full ``labels`` list; None when undefined.

    Passing every label (not only the observed ones) matters for weighted kappa: the weights
    are distances between positions in ``labels``, so an option nobody chose still counts.
    """
    from sklearn.metrics import cohen_kappa_score

    if len(y_true) == 0:
        return None
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        try:
            value = cohen_kappa_score(y_true, y_pred, labels=list(labels), weights=weights)
        except ValueError:
            return None
    return _finite(value)


def kappa_from_confusion(counts: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Cohen's kappa of confusion matrices ``(..., K, K)``, vectorised; NaN where undefined.

    ``weights`` is a (K, K) disagreement-weight matrix (0 on the diagonal); None = unweighted.
    Same formula as scikit-learn: ``1 - sum(w * observed) / sum(w * expected)``.
    """
    counts = np.asarray(counts, dtype=np.float64)
    k = counts.shape[-1]
    if weights is None:
        weights = 1.0 - np.eye(k)
    total = counts.sum(axis=(-2, -1))
    rows = counts.sum(axis=-1)
    cols = counts.sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = np.einsum("...ij,ij->...", counts, weights)
        expected = np.einsum("...i,...j,ij->...", rows, cols, weights) / total
        kappa = 1.0 - observed / expected
    kappa = np.where((total > 0) & (expected > 0), kappa, np.nan)
    return kappa


def quadratic_weights(k: int) -> np.ndarray:
    """Quadratic disagreement weights ``(i - j)^2 / (k - 1)^2`` over k ordered positions."""
    idx = np.arange(k, dtype=np.float64)
    return (idx[:, None] - idx[None, :]) ** 2 / max(k - 1, 1) ** 2


def confusion(y_true: np.ndarray, y_pred: np.ndarray, k: int) -> np.ndarray:
    """scikit-learn confusion matrix over labels 0..k-1 (rows = human, columns = judge)."""
    from sklearn.metrics import confusion_matrix

    if len(y_true) == 0:
        return np.zeros((k, k), dtype=np.int64)
    return np.asarray(confusion_matrix(y_true, y_pred, labels=list(range(k))), dtype=np.int64)


def met_scores(
    met_true: np.ndarray, met_pred: np.ndarray
) -> tuple[float | None, float | None, float | None]:
    """Precision, recall and F1 of the MET class; None where a denominator is zero."""
    from sklearn.metrics import precision_recall_fscore_support

    if len(met_true) == 0:
        return None, None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        precision, recall, f1, _ = precision_recall_fscore_support(
            met_true, met_pred, labels=[1], average=None, zero_division=np.nan
        )
    return _finite(precision[0]), _finite(recall[0]), _finite(f1[0])


def macro_scores(
    y_true: np.ndarray, y_pred: np.ndarray
) -> tuple[float | None, float | None, float | None]:
    """Macro precision, recall and F1 over the labels either side used (scikit-learn).

    A per-label value with a zero denominator is left out of the mean (``zero_division=nan``)
    rather than counted as 0; None without pairs.
    """
    from sklearn.metrics import precision_recall_fscore_support

    if len(y_true) == 0:
        return None, None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        precision, recall, f1, _ = precision_recall_fscore_support(
            y_true, y_pred, average="macro", zero_division=np.nan
        )
    return _finite(precision), _finite(recall), _finite(f1)


def per_label_scores(
    y_true: np.ndarray, y_pred: np.ndarray, k: int
) -> list[tuple[float | None, float | None, float | None]]:
    """One-vs-rest precision, recall, F1 of each label 0..k-1; None at a zero denominator."""
    from sklearn.metrics import precision_recall_fscore_support

    if len(y_true) == 0:
        return [(None, None, None)] * k
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        precision, recall, f1, _ = precision_recall_fscore_support(
            y_true, y_pred, labels=list(range(k)), average=None, zero_division=np.nan
        )
    return [(_finite(a), _finite(b), _finite(c)) for a, b, c in zip(precision, recall, f1)]


def phi(met_true: np.ndarray, met_pred: np.ndarray) -> float | None:
    """Matthews phi; None when either side is a single class (sklearn would say 0.0)."""
    from sklearn.metrics import matthews_corrcoef

    if len(met_true) == 0 or len(np.unique(met_true)) < 2 or len(np.unique(met_pred)) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _finite(matthews_corrcoef(met_true, met_pred))


def ratio(numerator: float, denominator: float) -> float | None:
    """numerator / denominator, None at a zero denominator."""
    return numerator / denominator if denominator else None


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """Mean of the defined values; None when none is defined."""
    defined = [v for v in values if v is not None]
    return float(np.mean(defined)) if defined else None


# --------------------------------------------------------------------------- continuous


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
    from scipy import stats

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = len(x)
    if n < 3:
        return Correlation(
            method=method, coefficient=None, p_value=None, n=n, interpretation="insufficient data"
        )
    if np.ptp(x) <= _ZERO_SPREAD or np.ptp(y) <= _ZERO_SPREAD:
        return Correlation(
            method=method, coefficient=None, p_value=None, n=n, interpretation="undefined"
        )
    funcs: dict[str, Callable[[np.ndarray, np.ndarray], Any]] = {
        "spearman": stats.spearmanr,
        "kendall": stats.kendalltau,
        "pearson": stats.pearsonr,
    }
    func = funcs[method]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = func(x, y)
    coefficient = _finite(result.statistic)
    p_value = _finite(result.pvalue) if coefficient is not None else None
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
    from scipy import stats

    diff = np.asarray(pred, dtype=np.float64) - np.asarray(true, dtype=np.float64)
    n = len(diff)
    empty = {
        "t_statistic": None,
        "p_value": None,
        "ci_low": None,
        "ci_high": None,
        "effect_size": None,
        "effect_interpretation": "undefined",
        "limits_of_agreement": None,
    }
    if n == 0:
        return Bias(
            n=0,
            mean_bias=None,
            std_bias=None,
            confidence_level=confidence,
            direction=None,
            is_significant=None,
            **empty,
        )
    mean = float(np.mean(diff))
    direction = "positive" if mean > 0.001 else "negative" if mean < -0.001 else "none"
    if n == 1:
        return Bias(
            n=1,
            mean_bias=mean,
            std_bias=None,
            confidence_level=confidence,
            direction=direction,
            is_significant=None,
            **empty,
        )
    std = float(np.std(diff, ddof=1))
    limits = (mean - 1.96 * std, mean + 1.96 * std)
    if std <= _ZERO_SPREAD * max(1.0, abs(mean)):
        return Bias(
            n=n,
            mean_bias=mean,
            std_bias=std,
            confidence_level=confidence,
            direction=direction,
            is_significant=None,
            **{**empty, "limits_of_agreement": limits},
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        test = stats.ttest_rel(pred, true)
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * std / math.sqrt(n)
    effect = mean / std
    p_value = _finite(test.pvalue)
    return Bias(
        n=n,
        mean_bias=mean,
        std_bias=std,
        t_statistic=_finite(test.statistic),
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
        if abs(denominator) > _ZERO_SPREAD:
            out[name] = numerator / denominator
    return out


# --------------------------------------------------------------------------- inter-rater


def krippendorff_alpha(
    reliability: np.ndarray,
    level: Literal["nominal", "ordinal", "interval", "ratio"],
    value_domain: Sequence[float] | None = None,
) -> float | None:
    """krippendorff.alpha on a raters x units matrix (NaN = missing); None when undefined.

    Undefined: fewer than two units rated by at least two raters, a single value in the
    domain, or no expected disagreement. ``value_domain`` should list every scale position
    for ordinal data so that unchosen options still separate the chosen ones.
    """
    import krippendorff

    data = np.asarray(reliability, dtype=np.float64)
    if data.ndim != 2 or data.shape[0] < 2:
        return None
    pairable = np.sum(~np.isnan(data), axis=0) >= 2
    if int(pairable.sum()) < 2:
        return None
    data = data[:, pairable]
    observed = np.unique(data[~np.isnan(data)])
    domain = list(value_domain) if value_domain is not None else list(observed)
    if len(domain) < 2 or len(observed) < 1:
        return None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            value = krippendorff.alpha(
                reliability_data=data, level_of_measurement=level, value_domain=domain
            )
        except (ValueError, ZeroDivisionError):
            return None
    return _finite(value)


def fleiss_kappa(table: np.ndarray) -> float | None:
    """Fleiss' kappa of an items x categories count table (same raters per item).

    Fleiss (1971): ``(P_bar - P_e) / (1 - P_e)`` with ``P_i = (sum_j n_ij^2 - n) / (n(n-1))``
    and ``P_e = sum_j p_j^2``. None with fewer than 2 items, fewer than 2 raters, unequal
    rater counts, or no expected disagreement (everyone used one category).
    """
    table = np.asarray(table, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] < 2:
        return None
    raters = table.sum(axis=1)
    n = raters[0]
    if n < 2 or not np.all(raters == n):
        return None
    n_items = table.shape[0]
    p_j = table.sum(axis=0) / (n_items * n)
    p_i = (np.sum(table**2, axis=1) - n) / (n * (n - 1))
    p_bar = float(np.mean(p_i))
    p_e = float(np.sum(p_j**2))
    if 1.0 - p_e <= _ZERO_SPREAD:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


def complete_case_counts(codes: np.ndarray, k: int) -> np.ndarray:
    """Items x categories counts from a raters x items code matrix (-1 = no usable vote),
    keeping only items every rater voted on (complete case)."""
    codes = np.asarray(codes)
    complete = np.all(codes >= 0, axis=0)
    kept = codes[:, complete]
    table = np.zeros((kept.shape[1], k), dtype=np.int64)
    for row in kept:
        table[np.arange(kept.shape[1]), row] += 1
    return table
