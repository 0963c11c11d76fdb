"""Statistics with the None rules: thin wrappers over scikit-learn, scipy and krippendorff.

Each wrapper returns ``None`` where the statistic is undefined (no pairs, a single class on
both sides, constant input, fewer than 3 points for a correlation, zero-variance differences
for a t-test) instead of the library's NaN or its silent 0.0. Warnings the libraries emit on
such input are silenced because the None already says it.

The only hand-written estimators are the vectorised count-based kappa (used by the bootstrap;
tested equal to scikit-learn), the all-pairs kappa of the inter-judge table (tested bit for bit
equal to scikit-learn per pair) and Fleiss' kappa (statsmodels is a test-only dependency; tested
equal to statsmodels and to Fleiss 1971). The statistics of paired scores (RMSE, MAE,
correlations, bias, ICC) live in :mod:`assay.calibration.score_stats` and are importable here.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np

from assay.calibration.score_stats import (
    ZERO_SPREAD,
    correlation,
    finite,
    fisher_interval,
    icc,
    mae,
    rmse,
    systematic_bias,
)

__all__ = [
    "cohen_kappa",
    "complete_case_counts",
    "confusion",
    "correlation",
    "fisher_interval",
    "fleiss_kappa",
    "icc",
    "kappa_from_confusion",
    "krippendorff_alpha",
    "macro_scores",
    "mae",
    "mean_or_none",
    "met_scores",
    "pairwise_cohen_kappas",
    "per_label_scores",
    "phi",
    "quadratic_weights",
    "ratio",
    "rmse",
    "systematic_bias",
]


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
    return finite(value)


def pairwise_cohen_kappas(codes: np.ndarray, k: int) -> list[float | None]:
    """Cohen's kappa of every pair of rows of ``codes`` (raters x items, -1 = missing) over the
    items both rated, in ``(a, b > a)`` order: what :func:`cohen_kappa` gives each pair.

    One call per pair cost about a millisecond of scikit-learn's checks: 500 judges are
    124,750 pairs. Here each rater's confusion matrices with all later raters come from one
    matrix product, and :func:`_sklearn_kappas` repeats scikit-learn's arithmetic on them.
    """
    onehot = (codes[:, :, None] == np.arange(k)).astype(np.float64)  # missing: all zeros
    out: list[float | None] = []
    for a in range(codes.shape[0] - 1):
        counts = np.matmul(onehot[a].T, onehot[a + 1 :])  # (later raters, k, k), exact
        out += [finite(value) for value in _sklearn_kappas(counts).tolist()]
    return out


def _sklearn_kappas(confusions: np.ndarray) -> np.ndarray:
    """Unweighted Cohen's kappa of each ``(k, k)`` confusion matrix (as floats), with
    ``cohen_kappa_score``'s operations in its order, so each is bit for bit its value; NaN
    where it is undefined. (:func:`kappa_from_confusion` sums in another order: it can differ
    in the last bit.)"""
    n, k = confusions.shape[0], confusions.shape[-1]
    sum0, sum1 = confusions.sum(axis=1), confusions.sum(axis=2)
    total = sum0.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = (sum0[:, :, None] * sum1[:, None, :]) / total[:, None, None]
        weights = 1.0 - np.eye(k)
        observed = (weights * confusions).reshape(n, k * k).sum(axis=1)
        chance = (weights * expected).reshape(n, k * k).sum(axis=1)
        kappa = 1 - observed / chance
    return np.where((total > 0) & (chance != 0), kappa, np.nan)


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
    return finite(precision[0]), finite(recall[0]), finite(f1[0])


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
    return finite(precision), finite(recall), finite(f1)


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
    return [(finite(a), finite(b), finite(c)) for a, b, c in zip(precision, recall, f1)]


def phi(met_true: np.ndarray, met_pred: np.ndarray) -> float | None:
    """Matthews phi; None when either side is a single class (sklearn would say 0.0)."""
    from sklearn.metrics import matthews_corrcoef

    if len(met_true) == 0 or len(np.unique(met_true)) < 2 or len(np.unique(met_pred)) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return finite(matthews_corrcoef(met_true, met_pred))


def ratio(numerator: float, denominator: float) -> float | None:
    """numerator / denominator, None at a zero denominator."""
    return numerator / denominator if denominator else None


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """Mean of the defined values; None when none is defined."""
    defined = [v for v in values if v is not None]
    return float(np.mean(defined)) if defined else None


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
    return finite(value)


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
    if 1.0 - p_e <= ZERO_SPREAD:
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
