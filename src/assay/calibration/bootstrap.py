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
confusion matrix is the full one minus one cell, so it is evaluated once per distinct cell. A
statistic undefined in a resample (kappa on a single class) is left out of that statistic's
distribution and ``n_defined`` says how many remained; an interval is None when none did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from assay.calibration.agreement import Pairs
from assay.calibration.result import (
    BootstrapDistribution,
    BootstrapResult,
    CriterionIntervals,
    Interval,
)
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
            name=pairs.criterion.name,
            k=k,
            n_scale=pairs.scale.n_scale,
            ordinal=pairs.criterion.kind_ == "ordinal",
            cells=cells,
            onehot_t=onehot_t,
        )

    def full(self) -> np.ndarray:
        paired = self.cells[self.cells >= 0]
        return np.bincount(paired, minlength=self.k * self.k).astype(np.float64)


def _jackknife(
    crit: _Criterion, full: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
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


def _stats_from_counts(
    counts: np.ndarray, crit: _Criterion
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
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
        z0 = ndtri(
            (np.count_nonzero(boot < estimate) + np.count_nonzero(boot <= estimate))
            / (2 * len(boot))
        )
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


class _Rater:
    """One rater's pairs and score errors, and the replicate statistics collected for it."""

    def __init__(
        self, pairs: Sequence[Pairs], human_scores: np.ndarray, judge_scores: np.ndarray
    ) -> None:
        self.crits = [_Criterion.of(p) for p in pairs]
        scored = ~np.isnan(human_scores) & ~np.isnan(judge_scores)
        self.sq_err = np.where(scored, (judge_scores - human_scores) ** 2, 0.0)
        self.scored = scored.astype(np.float64)
        self.acc: list[list[np.ndarray]] = [[] for _ in self.crits]
        self.kap: list[list[np.ndarray]] = [[] for _ in self.crits]
        self.wk: list[list[np.ndarray]] = [[] for _ in self.crits]
        self.correct: list[np.ndarray] = []
        self.total: list[np.ndarray] = []
        self.rmse: list[np.ndarray] = []
        # (estimate, replicates, jackknife) of the aggregates, kept for paired comparisons
        self.draws: dict[str, tuple[float, np.ndarray, np.ndarray | None]] = {}

    def add(
        self,
        counts_per_criterion: Sequence[np.ndarray],
        sq_err_sum: np.ndarray,
        n_scored: np.ndarray,
    ) -> None:
        """Statistics of one chunk of resamples, from its confusion counts and score sums."""
        size = len(sq_err_sum)
        correct = np.zeros(size)
        total = np.zeros(size)
        for c, crit in enumerate(self.crits):
            counts = counts_per_criterion[c]
            acc, kap, wk = _stats_from_counts(counts, crit)
            self.acc[c].append(acc)
            self.kap[c].append(kap)
            if wk is not None:
                self.wk[c].append(wk)
            matrix = counts.reshape(size, crit.k, crit.k)
            correct += np.trace(matrix, axis1=-2, axis2=-1)
            total += matrix.sum(axis=(-2, -1))
        self.correct.append(correct)
        self.total.append(total)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.rmse.append(np.sqrt(sq_err_sum / n_scored))

    def result(self, n_resamples: int, seed: int | None, confidence: float) -> BootstrapResult:
        """Point estimates, jackknife values and intervals from the collected replicates."""
        n_items = len(self.sq_err)
        full_correct = 0.0
        full_total = 0.0
        jack_correct = np.zeros(n_items)
        jack_total = np.zeros(n_items)
        crit_intervals: list[CriterionIntervals] = []
        kappa_full: list[float] = []
        kappa_jack: list[np.ndarray] = []
        kappa_boot: list[np.ndarray] = []
        for c, crit in enumerate(self.crits):
            full = crit.full()
            acc, kap, wk = _stats_from_counts(full[None, :], crit)
            acc_j, kap_j, wk_j = _jackknife(crit, full)
            matrix = full.reshape(crit.k, crit.k)
            full_correct += float(np.trace(matrix))
            full_total += float(matrix.sum())
            paired = crit.cells >= 0
            on_diagonal = paired & (crit.cells // crit.k == crit.cells % crit.k)
            jack_correct += float(np.trace(matrix)) - on_diagonal
            jack_total += float(matrix.sum()) - paired
            kap_boot = np.concatenate(self.kap[c])
            kappa_full.append(float(kap[0]))
            kappa_jack.append(kap_j)
            kappa_boot.append(kap_boot)
            crit_intervals.append(
                CriterionIntervals(
                    name=crit.name,
                    accuracy=interval(
                        _finite_or_none(acc[0]), np.concatenate(self.acc[c]), acc_j, confidence
                    ),
                    kappa=interval(_finite_or_none(kap[0]), kap_boot, kap_j, confidence),
                    weighted_kappa=(
                        interval(
                            _finite_or_none(wk[0]), np.concatenate(self.wk[c]), wk_j, confidence
                        )
                        if wk is not None and wk_j is not None
                        else None
                    ),
                )
            )
        with np.errstate(divide="ignore", invalid="ignore"):
            acc_micro_boot = np.concatenate(self.correct) / np.concatenate(self.total)
            acc_micro_jack = jack_correct / jack_total
            acc_micro = full_correct / full_total if full_total else np.nan
            n_scored = self.scored.sum()
            rmse_full = np.sqrt(self.sq_err.sum() / n_scored) if n_scored else np.nan
            rmse_jack = np.sqrt((self.sq_err.sum() - self.sq_err) / (n_scored - self.scored))
        if self.crits:
            mean_kappa_boot = _nanmean_rows(kappa_boot)
            mean_kappa_jack: np.ndarray | None = _nanmean_rows(kappa_jack)
            mean_kappa_full = _nanmean_rows([np.array([k]) for k in kappa_full])[0]
        else:
            mean_kappa_boot, mean_kappa_jack, mean_kappa_full = (
                np.full(n_resamples, np.nan),
                None,
                np.nan,
            )
        self.draws = {
            "accuracy_micro": (acc_micro, acc_micro_boot, acc_micro_jack),
            "mean_kappa_macro": (mean_kappa_full, mean_kappa_boot, mean_kappa_jack),
            "rmse": (rmse_full, np.concatenate(self.rmse), rmse_jack),
        }
        return BootstrapResult(
            n_resamples=n_resamples,
            seed=seed,
            confidence_level=confidence,
            accuracy_micro=interval(
                _finite_or_none(acc_micro), acc_micro_boot, acc_micro_jack, confidence
            ),
            mean_kappa_macro=interval(
                _finite_or_none(mean_kappa_full), mean_kappa_boot, mean_kappa_jack, confidence
            ),
            rmse=interval(
                _finite_or_none(rmse_full), np.concatenate(self.rmse), rmse_jack, confidence
            ),
            criteria=crit_intervals,
        )


def _distribution(state: _Rater) -> BootstrapDistribution:
    """Every resample's value of the three aggregates, in draw order (None = undefined)."""

    def listed(name: str) -> list[float | None]:
        return [float(v) if np.isfinite(v) else None for v in state.draws[name][1]]

    return BootstrapDistribution(
        accuracy_micro=listed("accuracy_micro"),
        mean_kappa_macro=listed("mean_kappa_macro"),
        rmse=listed("rmse"),
    )


def bootstrap_raters(
    raters: Sequence[tuple[Sequence[Pairs], np.ndarray, np.ndarray]],
    *,
    n_resamples: int,
    seed: int | None,
    confidence: float = 0.95,
    compare: Sequence[tuple[int, int]] = (),
    keep_distribution: bool = False,
) -> tuple[list[BootstrapResult], list[tuple[int, int, str, Interval]]]:
    """Bootstrap several raters on the same resamples (one index draw serves them all).

    Each rater is ``(pairs, human_scores, judge_scores)`` over the same items. Sharing the
    draws makes the raters' intervals comparable; ``compare`` lists rater pairs ``(a, b)``
    whose paired differences ``a - b`` of micro accuracy and macro mean kappa get their own
    intervals (per resample, from the same items; BCa from the paired jackknife).
    """
    from scipy import sparse

    n_items = len(raters[0][1])
    states = [_Rater(*rater) for rater in raters]
    # every criterion of every rater in one sparse matrix: the resample weights are read once
    # per chunk instead of once per criterion
    blocks = [crit.onehot_t for state in states for crit in state.crits]
    stacked = sparse.vstack(blocks).tocsr() if blocks else None
    score_columns = np.column_stack([v for state in states for v in (state.sq_err, state.scored)])
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // max(n_items, 1))
    done = 0
    while done < n_resamples:
        size = min(chunk, n_resamples - done)
        idx = rng.integers(0, n_items, size=(size, n_items), dtype=np.int64)
        offsets = (np.arange(size, dtype=np.int64) * n_items)[:, None]
        weights = np.bincount((idx + offsets).ravel(), minlength=size * n_items)
        weights = weights.reshape(size, n_items).astype(np.float64)
        counts = (
            np.asarray(stacked @ np.ascontiguousarray(weights.T)).T if stacked is not None else None
        )
        score_sums = weights @ score_columns
        row = 0
        for r, state in enumerate(states):
            per_criterion = []
            for crit in state.crits:
                assert counts is not None
                per_criterion.append(counts[:, row : row + crit.k * crit.k])
                row += crit.k * crit.k
            state.add(per_criterion, score_sums[:, 2 * r], score_sums[:, 2 * r + 1])
        done += size
    results = [state.result(n_resamples, seed, confidence) for state in states]
    if keep_distribution:
        results = [
            result.model_copy(update={"bootstrap_distribution": _distribution(state)})
            for result, state in zip(results, states)
        ]
    comparisons: list[tuple[int, int, str, Interval]] = []
    for a, b in compare:
        for statistic in ("accuracy_micro", "mean_kappa_macro"):
            est_a, boot_a, jack_a = states[a].draws[statistic]
            est_b, boot_b, jack_b = states[b].draws[statistic]
            jack = jack_a - jack_b if jack_a is not None and jack_b is not None else None
            comparisons.append(
                (
                    a,
                    b,
                    statistic,
                    interval(_finite_or_none(est_a - est_b), boot_a - boot_b, jack, confidence),
                )
            )
    return results, comparisons


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
    results, _ = bootstrap_raters(
        [(pairs, human_scores, judge_scores)],
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
    )
    return results[0]
