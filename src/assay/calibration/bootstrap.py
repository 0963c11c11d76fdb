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
from assay.calibration.bootstrap_result import (
    BootstrapDistribution,
    BootstrapResult,
    CriterionIntervals,
    Interval,
)
from assay.calibration.intervals import finite_or_none, interval, nanmean_rows
from assay.calibration.stats import kappa_from_confusion, quadratic_weights
from assay.errors import UsageError

__all__ = ["bootstrap", "bootstrap_raters", "interval"]

_MAX_BYTES = 1_000_000_000  # the largest array a bootstrap may build (see _check_memory)
_CHUNK_CELLS = 4_000_000  # resamples x items per chunk (bounds memory to ~32 MB per array)


def _distribution(state: RaterReplicates) -> BootstrapDistribution:
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
    every = [pairs for rater in raters for pairs in rater[0]]
    _check_memory(every, n_items=len(raters[0][1]), n_resamples=n_resamples)
    states = [RaterReplicates(*rater) for rater in raters]
    _resample(states, n_items=len(raters[0][1]), n_resamples=n_resamples, seed=seed)
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
                    interval(finite_or_none(est_a - est_b), boot_a - boot_b, jack, confidence),
                )
            )
    return results, comparisons


def _check_memory(pairs: Sequence[Pairs], *, n_items: int, n_resamples: int) -> None:
    """Refuse, before any allocation, a bootstrap whose arrays would not fit in memory.

    A criterion of K options keeps K*K confusion cells per resample of a chunk, and its
    jackknife one row of them per distinct observed cell: free text inferred as a nominal
    criterion of 5,000 options asked for ~40 GB (a MemoryError) before this check.
    """
    chunk = min(max(1, _CHUNK_CELLS // max(n_items, 1)), n_resamples)
    for each in pairs:
        cells = each.scale.k * each.scale.k
        needed = max(chunk, min(each.n, cells)) * cells * 8
        if needed > _MAX_BYTES:
            raise UsageError(
                f"--bootstrap: criterion {each.criterion.name!r} has {each.scale.k} options; its "
                f"intervals would need about {needed / 1e9:.1f} GB (the limit is "
                f"{_MAX_BYTES / 1e9:.1f} GB): declare the criterion, or pass --bootstrap 0"
            )


def _resample(
    states: list[RaterReplicates], *, n_items: int, n_resamples: int, seed: int | None
) -> None:
    """Draw the resamples chunk by chunk and hand each rater its counts and score sums."""
    from scipy import sparse

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
        _hand_out(states, counts, weights @ score_columns)
        done += size


def _hand_out(
    states: list[RaterReplicates], counts: np.ndarray | None, score_sums: np.ndarray
) -> None:
    """Split one chunk's stacked counts and score sums among the raters, in stacking order."""
    row = 0
    for r, state in enumerate(states):
        per_criterion = []
        for crit in state.crits:
            assert counts is not None
            per_criterion.append(counts[:, row : row + crit.k * crit.k])
            row += crit.k * crit.k
        state.add(per_criterion, score_sums[:, 2 * r], score_sums[:, 2 * r + 1])


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


# (estimate, replicates, jackknife) of one aggregate statistic
Draw = tuple[float, np.ndarray, np.ndarray | None]


@dataclass(frozen=True)
class CriterionCells:
    """One criterion's (human, judge) pairs as confusion cells per item, and their one-hot."""

    name: str
    k: int
    n_scale: int
    ordinal: bool
    cells: np.ndarray  # per item: confusion cell t*K + p, -1 for items without a pair
    onehot_t: Any  # sparse K*K x items (transposed one-hot of the cells)

    @classmethod
    def of(cls, pairs: Pairs) -> CriterionCells:
        """The cells of ``pairs`` (-1 where an item has no pair)."""
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
        """The confusion counts over every item, flattened (K*K)."""
        paired = self.cells[self.cells >= 0]
        return np.bincount(paired, minlength=self.k * self.k).astype(np.float64)


def jackknife(
    crit: CriterionCells, full: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Leave-one-item-out accuracy, kappa and weighted kappa for every item."""
    n_items = len(crit.cells)
    paired = crit.cells >= 0
    unique, inverse = np.unique(crit.cells[paired], return_inverse=True)
    loo = np.repeat(full[None, :], len(unique), axis=0)
    loo[np.arange(len(unique)), unique] -= 1.0
    acc_u, kap_u, wk_u = stats_from_counts(loo, crit)
    acc_f, kap_f, wk_f = stats_from_counts(full[None, :], crit)

    def spread(per_cell: np.ndarray, whole: np.ndarray) -> np.ndarray:
        out = np.full(n_items, whole[0])
        out[paired] = per_cell[inverse]
        return out

    weighted = spread(wk_u, wk_f) if wk_u is not None and wk_f is not None else None
    return spread(acc_u, acc_f), spread(kap_u, kap_f), weighted


def stats_from_counts(
    counts: np.ndarray, crit: CriterionCells
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


class RaterReplicates:
    """One rater's pairs and score errors, and the replicate statistics collected for it."""

    def __init__(
        self, pairs: Sequence[Pairs], human_scores: np.ndarray, judge_scores: np.ndarray
    ) -> None:
        self.crits = [CriterionCells.of(p) for p in pairs]
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
            acc, kap, wk = stats_from_counts(counts, crit)
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
        pooled = _Pooled(len(self.sq_err))
        crit_intervals = [
            self._criterion_intervals(c, crit, pooled, confidence)
            for c, crit in enumerate(self.crits)
        ]
        with np.errstate(divide="ignore", invalid="ignore"):
            acc_micro_boot = np.concatenate(self.correct) / np.concatenate(self.total)
            acc_micro_jack = pooled.jack_correct / pooled.jack_total
            acc_micro = pooled.full_correct / pooled.full_total if pooled.full_total else np.nan
            n_scored = self.scored.sum()
            rmse_full = np.sqrt(self.sq_err.sum() / n_scored) if n_scored else np.nan
            rmse_jack = np.sqrt((self.sq_err.sum() - self.sq_err) / (n_scored - self.scored))
        self.draws = {
            "accuracy_micro": (acc_micro, acc_micro_boot, acc_micro_jack),
            "mean_kappa_macro": pooled.mean_kappa(n_resamples),
            "rmse": (rmse_full, np.concatenate(self.rmse), rmse_jack),
        }
        return BootstrapResult(
            n_resamples=n_resamples,
            seed=seed,
            confidence_level=confidence,
            accuracy_micro=_interval_of(self.draws["accuracy_micro"], confidence),
            mean_kappa_macro=_interval_of(self.draws["mean_kappa_macro"], confidence),
            rmse=_interval_of(self.draws["rmse"], confidence),
            criteria=crit_intervals,
        )

    def _criterion_intervals(
        self, c: int, crit: CriterionCells, pooled: _Pooled, confidence: float
    ) -> CriterionIntervals:
        """Criterion ``c``'s intervals; its full and jackknife counts join ``pooled``."""
        full = crit.full()
        acc, kap, wk = stats_from_counts(full[None, :], crit)
        acc_j, kap_j, wk_j = jackknife(crit, full)
        kap_boot = np.concatenate(self.kap[c])
        pooled.add(crit, full, kappa=(float(kap[0]), kap_boot, kap_j))
        return CriterionIntervals(
            name=crit.name,
            accuracy=interval(
                finite_or_none(acc[0]), np.concatenate(self.acc[c]), acc_j, confidence
            ),
            kappa=interval(finite_or_none(kap[0]), kap_boot, kap_j, confidence),
            weighted_kappa=(
                interval(finite_or_none(wk[0]), np.concatenate(self.wk[c]), wk_j, confidence)
                if wk is not None and wk_j is not None
                else None
            ),
        )


class _Pooled:
    """Counts pooled over criteria (micro accuracy) and each criterion's kappa (macro mean)."""

    def __init__(self, n_items: int) -> None:
        self.full_correct = 0.0
        self.full_total = 0.0
        self.jack_correct = np.zeros(n_items)
        self.jack_total = np.zeros(n_items)
        self.kappa_full: list[float] = []
        self.kappa_jack: list[np.ndarray] = []
        self.kappa_boot: list[np.ndarray] = []

    def add(
        self, crit: CriterionCells, full: np.ndarray, *, kappa: tuple[float, np.ndarray, np.ndarray]
    ) -> None:
        """One criterion's full counts, its leave-one-out counts and its kappa
        (estimate, replicates, jackknife)."""
        matrix = full.reshape(crit.k, crit.k)
        self.full_correct += float(np.trace(matrix))
        self.full_total += float(matrix.sum())
        paired = crit.cells >= 0
        on_diagonal = paired & (crit.cells // crit.k == crit.cells % crit.k)
        self.jack_correct += float(np.trace(matrix)) - on_diagonal
        self.jack_total += float(matrix.sum()) - paired
        self.kappa_full.append(kappa[0])
        self.kappa_boot.append(kappa[1])
        self.kappa_jack.append(kappa[2])

    def mean_kappa(self, n_resamples: int) -> Draw:
        """The macro mean kappa's draw; undefined everywhere without criteria."""
        if not self.kappa_boot:
            return np.nan, np.full(n_resamples, np.nan), None
        return (
            nanmean_rows([np.array([k]) for k in self.kappa_full])[0],
            nanmean_rows(self.kappa_boot),
            nanmean_rows(self.kappa_jack),
        )


def _interval_of(draw: Draw, confidence: float) -> Interval:
    estimate, replicates, jackknife_values = draw
    return interval(finite_or_none(estimate), replicates, jackknife_values, confidence)
