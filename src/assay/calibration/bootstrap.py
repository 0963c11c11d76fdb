"""Seeded, vectorised item-level bootstrap with percentile and BCa intervals.

Items are the resampling unit (a cluster bootstrap): one draw of item indices per resample is
shared by every criterion and by the score axis, so the intervals respect the correlation
between criteria judged on the same answer. Resample ``b`` draws ``n`` indices with
``rng.integers(0, n, (B, n))`` from ``numpy.random.default_rng(seed)`` - the same stream
``scipy.stats.bootstrap`` uses, which the tests exploit to check the intervals exactly.

Each resample's statistics come from count vectors, not from re-running scikit-learn: the
multiplicity matrix ``W`` (resamples x items) times the sparse one-hot pair matrix (items x
K*K) gives every resample's confusion matrix in one product; kappa, weighted kappa and
accuracy follow from the counts (see :func:`assay.calibration.stats.kappa_from_confusion`).
BCa (Efron 1987) uses the jackknife over items, also computed from counts: a leave-one-out
confusion matrix is the full one minus one cell, so it is evaluated once per distinct cell. A statistic undefined in a
resample (kappa on a single class) is left out of that statistic's distribution and
``n_defined`` says how many remained; an interval is None when none did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from assay.calibration.agreement import Pairs
from assay.calibration.result import BootstrapResult, CriterionIntervals, Interval
from assay.calibration.stats import kappa_from_confusion, quadratic_weights

_CHUNK_CELLS = 4_000_000  # resamples x items per chunk (bounds memory to ~32 MB per array)


@dataclass(frozen=True)
class _Criterion:
    name: str
    k: int
    n_scale: int
    ordinal: bool
    cells: np.ndarray  # per item: confusion cell t*K + p, -1 for items without a pair
    onehot_t: Any  # sparse K*K x items (transposed one-hot of the cells)

    @classmethod
    def of(cls, pairs: Pairs) -> _Criterion:
        from scipy import sparse

        k = pairs.scale.k
        keep = pairs.keep
        cells = np.where(keep, pairs.true * k + pairs.pred, -1)
        items = np.nonzero(keep)[0]
        onehot_t = sparse.csr_matrix(
            (np.ones(len(items)), (cells[items], items)), shape=(k * k, len(cells))
        )
        return cls(
            name=pairs.criterion.name, k=k, n_scale=pairs.scale.n_scale,
            ordinal=pairs.criterion.kind_ == "ordinal", cells=cells, onehot_t=onehot_t,
        )

    def counts(self, weights: np.ndarray) -> np.ndarray:
        """Confusion counts (resamples x K*K) of every resample, one sparse product."""
        return np.asarray(self.onehot_t @ weights.T).T

    def full(self) -> np.ndarray:
        paired = self.cells[self.cells >= 0]
        return np.bincount(paired, minlength=self.k * self.k).astype(np.float64)


def _jackknife(crit: _Criterion, full: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Leave-one-item-out accuracy, kappa and weighted kappa for every item."""
    n_items = len(crit.cells)
    paired = crit.cells >= 0
    unique, inverse = np.unique(crit.cells[paired], return_inverse=True)
    loo = np.repeat(full[None, :], len(unique), axis=0)
    loo[np.arange(len(unique)), unique] -= 1.0
    acc_u, kap_u, wk_u = _stats_from_counts(loo, crit)
    acc_f, kap_f, wk_f = _stats_from_counts(full[None, :], crit)

    def spread(per_cell: np.ndarray, whole: np.ndarray) -> np.ndarray:
        out = np.full(n_items, whole[0])
        out[paired] = per_cell[inverse]
        return out

    weighted = spread(wk_u, wk_f) if wk_u is not None and wk_f is not None else None
    return spread(acc_u, acc_f), spread(kap_u, kap_f), weighted


def _stats_from_counts(counts: np.ndarray, crit: _Criterion) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Accuracy, kappa and (ordinal) quadratic kappa from flattened counts (..., K*K)."""
    k = crit.k
    matrix = counts.reshape(*counts.shape[:-1], k, k)
    total = matrix.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        accuracy = np.where(total > 0, np.trace(matrix, axis1=-2, axis2=-1) / total, np.nan)
    kappa = kappa_from_confusion(matrix)
    weighted = None
    if crit.ordinal:
        m = crit.n_scale
        weighted = kappa_from_confusion(matrix[..., :m, :m], quadratic_weights(m))
    return accuracy, kappa, weighted


def _nanmean_rows(columns: Sequence[np.ndarray]) -> np.ndarray:
    stacked = np.stack(columns, axis=-1)
    defined = ~np.isnan(stacked)
    count = defined.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, np.nansum(stacked, axis=-1) / count, np.nan)


def interval(
    estimate: float | None,
    replicates: np.ndarray,
    jackknife: np.ndarray | None,
    confidence: float,
) -> Interval:
    """Percentile and BCa intervals of one statistic (NaN replicates are left out)."""
    from scipy.special import ndtr, ndtri

    boot = replicates[~np.isnan(replicates)]
    if len(boot) == 0:
        return Interval(estimate=estimate, percentile=None, bca=None, standard_error=None, n_defined=0)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.percentile(boot, [100 * alpha, 100 * (1 - alpha)])
    se = float(np.std(boot, ddof=1)) if len(boot) > 1 else None
    bca: tuple[float, float] | None = None
    if estimate is not None and np.ptp(boot) == 0:
        bca = (float(boot[0]), float(boot[0]))
    elif estimate is not None and jackknife is not None and not np.any(np.isnan(jackknife)):
        z0 = ndtri((np.count_nonzero(boot < estimate) + np.count_nonzero(boot <= estimate)) / (2 * len(boot)))
        spread = np.mean(jackknife) - jackknife
        denominator = np.sum(spread**2) ** 1.5
        if np.isfinite(z0) and denominator > 0:
            accel = np.sum(spread**3) / (6.0 * denominator)
            ends = []
            for z_alpha in (ndtri(alpha), -ndtri(alpha)):
                shifted = z0 + z_alpha
                ends.append(ndtr(z0 + shifted / (1 - accel * shifted)))
            if np.all(np.isfinite(ends)):
                b_low, b_high = np.percentile(boot, [100 * ends[0], 100 * ends[1]])
                bca = (float(b_low), float(b_high))
    return Interval(
        estimate=estimate,
        percentile=(float(low), float(high)),
        bca=bca,
        standard_error=se,
        n_defined=len(boot),
    )


def _finite_or_none(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def bootstrap(
    pairs: Sequence[Pairs],
    human_scores: np.ndarray,
    judge_scores: np.ndarray,
    *,
    n_resamples: int,
    seed: int | None,
    confidence: float = 0.95,
) -> BootstrapResult:
    """Intervals for micro accuracy, macro mean kappa, score RMSE and per-criterion stats."""
    n_items = len(human_scores)
    crits = [_Criterion.of(p) for p in pairs]
    scored = ~np.isnan(human_scores) & ~np.isnan(judge_scores)
    sq_err = np.where(scored, (judge_scores - human_scores) ** 2, 0.0)
    scored_f = scored.astype(np.float64)

    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // max(n_items, 1))
    acc_b: list[list[np.ndarray]] = [[] for _ in crits]
    kap_b: list[list[np.ndarray]] = [[] for _ in crits]
    wk_b: list[list[np.ndarray]] = [[] for _ in crits]
    correct_b: list[np.ndarray] = []
    total_b: list[np.ndarray] = []
    rmse_b: list[np.ndarray] = []
    done = 0
    while done < n_resamples:
        size = min(chunk, n_resamples - done)
        idx = rng.integers(0, n_items, size=(size, n_items), dtype=np.int64)
        offsets = (np.arange(size, dtype=np.int64) * n_items)[:, None]
        weights = np.bincount((idx + offsets).ravel(), minlength=size * n_items)
        weights = weights.reshape(size, n_items).astype(np.float64)
        correct = np.zeros(size)
        total = np.zeros(size)
        for c, crit in enumerate(crits):
            counts = crit.counts(weights)
            acc, kap, wk = _stats_from_counts(counts, crit)
            acc_b[c].append(acc)
            kap_b[c].append(kap)
            if wk is not None:
                wk_b[c].append(wk)
            diag = counts.reshape(size, crit.k, crit.k)
            correct += np.trace(diag, axis1=-2, axis2=-1)
            total += diag.sum(axis=(-2, -1))
        with np.errstate(divide="ignore", invalid="ignore"):
            correct_b.append(correct)
            total_b.append(total)
            rmse_b.append(np.sqrt((weights @ sq_err) / (weights @ scored_f)))
        done += size

    # full-sample estimates and leave-one-item-out (jackknife) values, from counts
    full_correct = 0.0
    full_total = 0.0
    jack_correct = np.zeros(n_items)
    jack_total = np.zeros(n_items)
    crit_intervals: list[CriterionIntervals] = []
    kappa_full: list[float] = []
    kappa_jack: list[np.ndarray] = []
    kappa_boot: list[np.ndarray] = []
    for c, crit in enumerate(crits):
        full = crit.full()
        acc, kap, wk = _stats_from_counts(full[None, :], crit)
        acc_j, kap_j, wk_j = _jackknife(crit, full)
        diag_full = full.reshape(crit.k, crit.k)
        full_correct += float(np.trace(diag_full))
        full_total += float(diag_full.sum())
        paired = crit.cells >= 0
        on_diagonal = paired & (crit.cells // crit.k == crit.cells % crit.k)
        jack_correct += float(np.trace(diag_full)) - on_diagonal
        jack_total += float(diag_full.sum()) - paired
        acc_boot = np.concatenate(acc_b[c])
        kap_boot = np.concatenate(kap_b[c])
        kappa_full.append(float(kap[0]))
        kappa_jack.append(kap_j)
        kappa_boot.append(kap_boot)
        crit_intervals.append(
            CriterionIntervals(
                name=crit.name,
                accuracy=interval(_finite_or_none(acc[0]), acc_boot, acc_j, confidence),
                kappa=interval(_finite_or_none(kap[0]), kap_boot, kap_j, confidence),
                weighted_kappa=(
                    interval(_finite_or_none(wk[0]), np.concatenate(wk_b[c]), wk_j, confidence)
                    if wk is not None and wk_j is not None
                    else None
                ),
            )
        )

    with np.errstate(divide="ignore", invalid="ignore"):
        acc_micro_boot = np.concatenate(correct_b) / np.concatenate(total_b)
        acc_micro_jack = jack_correct / jack_total
        acc_micro = full_correct / full_total if full_total else np.nan
        n_scored = scored_f.sum()
        rmse_full = np.sqrt(sq_err.sum() / n_scored) if n_scored else np.nan
        rmse_jack = np.sqrt((sq_err.sum() - sq_err) / (n_scored - scored_f))
    mean_kappa_boot = _nanmean_rows(kappa_boot) if crits else np.full(n_resamples, np.nan)
    mean_kappa_jack = _nanmean_rows(kappa_jack) if crits else None
    mean_kappa_full = _nanmean_rows([np.array([k]) for k in kappa_full])[0] if crits else np.nan

    return BootstrapResult(
        n_resamples=n_resamples,
        seed=seed,
        confidence_level=confidence,
        accuracy_micro=interval(_finite_or_none(acc_micro), acc_micro_boot, acc_micro_jack, confidence),
        mean_kappa_macro=interval(
            _finite_or_none(mean_kappa_full), mean_kappa_boot, mean_kappa_jack, confidence
        ),
        rmse=interval(_finite_or_none(rmse_full), np.concatenate(rmse_b) if rmse_b else np.array([]),
                      rmse_jack, confidence),
        criteria=crit_intervals,
    )
