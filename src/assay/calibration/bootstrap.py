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
from typing import Any

import numpy as np

from assay.calibration.agreement import Pairs
from assay.calibration.bootstrap_result import BootstrapDistribution, BootstrapResult, Interval
from assay.calibration.intervals import finite_or_none, interval
from assay.calibration.replicates import RaterReplicates
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


def _hand_out(states: list[RaterReplicates], counts: Any, score_sums: np.ndarray) -> None:
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
