"""Ensemble aggregation: one consensus verdict per (criterion, item) from several judges.

Strategies (vectorised over items; ``votes`` is judges x items of codes, negative = no vote):

* binary: ``majority`` (head count), ``weighted`` (summed judge weights), ``unanimous`` (MET
  only when no judge said UNMET). CANNOT_ASSESS votes are dropped; if every vote abstained
  the consensus abstains.
* ordinal: ``median`` (default), ``mean`` on option values snapped to the nearest option,
  or ``mode``. NA votes are dropped unless every vote is NA.
* nominal: ``mode``.

Ties always break to the worst case for the item: the lowest-valued option (UNMET) for a
positive criterion, the highest-valued one (MET) for a penalty criterion; remaining ties go
to the lowest index. The result never depends on judge order.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeGuard

import numpy as np

from assay.calibration.model import CANNOT_ASSESS, FAILED, MET, MISSING, UNMET, Criterion

BinaryStrategy = Literal["majority", "weighted", "unanimous"]
OrdinalStrategy = Literal["median", "mean", "mode"]
NominalStrategy = Literal["mode"]
_TIE = 1e-9


@dataclass(frozen=True)
class Aggregation:
    """The strategy per criterion kind."""

    binary: BinaryStrategy = "majority"
    ordinal: OrdinalStrategy = "median"
    nominal: NominalStrategy = "mode"

    def describe(self) -> str:
        return f"binary={self.binary}, ordinal={self.ordinal}, nominal={self.nominal}"


def _worst_rank(criterion: Criterion) -> np.ndarray:
    """Rank of each code from worst (0) to best; used to break ties."""
    n_codes = len(criterion.labels)
    values = criterion.code_values
    keyed = []
    for code in range(n_codes):
        value = values[code]
        if np.isnan(value):  # abstentions / value-less options rank after every valued option
            keyed.append((1, 0.0, code))
        else:
            keyed.append((0, value if criterion.weight >= 0 else -value, code))
    order = sorted(range(n_codes), key=lambda c: keyed[c])
    rank = np.empty(n_codes, dtype=np.int64)
    rank[order] = np.arange(n_codes)
    return rank


def _no_vote(votes: np.ndarray) -> np.ndarray:
    """MISSING for items nobody voted on, FAILED when the only votes failed."""
    any_failed = np.any(votes == FAILED, axis=0)
    return np.where(any_failed, FAILED, MISSING)


def _pick_max(counts: np.ndarray, rank: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Per item, the allowed code with the highest count; ties -> worst rank."""
    masked = np.where(allowed[None, :], counts, -np.inf)
    best = masked.max(axis=1, keepdims=True)
    tied = np.isclose(masked, best, rtol=0, atol=_TIE) & allowed[None, :]
    tie_rank = np.where(tied, rank[None, :], np.iinfo(np.int64).max)
    picked: np.ndarray = np.argmin(tie_rank, axis=1)
    return picked


def consensus(
    criterion: Criterion,
    votes: np.ndarray,
    weights: np.ndarray | None = None,
    strategy: Aggregation | None = None,
) -> np.ndarray:
    """Aggregate a judges x items code matrix into one code per item."""
    strategy = strategy or Aggregation()
    votes = np.asarray(votes)
    n_judges, n_items = votes.shape
    weights = np.ones(n_judges) if weights is None else np.asarray(weights, dtype=np.float64)
    n_codes = len(criterion.labels)
    valid = votes >= 0
    onehot = np.zeros((n_judges, n_items, n_codes))
    j_idx, i_idx = np.nonzero(valid)
    onehot[j_idx, i_idx, votes[j_idx, i_idx]] = 1.0
    counts = onehot.sum(axis=0)  # items x codes
    weighted_counts = np.einsum("j,jic->ic", weights, onehot)
    abstain = np.zeros(n_codes, dtype=bool)
    abstain[list(criterion.abstain_codes)] = True
    rank = _worst_rank(criterion)
    real_votes = counts[:, ~abstain].sum(axis=1)
    any_vote = counts.sum(axis=1) > 0
    first_abstain = criterion.abstain_codes[0] if criterion.abstain_codes else MISSING

    if criterion.kind_ == "binary":
        result = _binary(criterion, counts, weighted_counts, strategy)
        result = np.where(real_votes > 0, result, CANNOT_ASSESS)
    elif criterion.kind_ == "ordinal" and strategy.ordinal in ("median", "mean"):
        scale = np.array(criterion.scale_codes)
        pick = _nearest_to_centre(criterion, votes, strategy, scale, rank[scale])
        result = np.where(real_votes > 0, scale[pick], first_abstain)
    else:
        allowed = ~abstain
        pick = _pick_max(counts, rank, allowed)
        result = np.where(real_votes > 0, pick, first_abstain)
    return np.where(any_vote, result, _no_vote(votes)).astype(np.int16)


def _binary(
    criterion: Criterion, counts: np.ndarray, weighted_counts: np.ndarray, strategy: Aggregation
) -> np.ndarray:
    """MET or UNMET per item by majority, weighted majority or unanimity; ties -> the worse."""
    met, unmet = counts[:, MET], counts[:, UNMET]
    if strategy.binary == "weighted":
        met, unmet = weighted_counts[:, MET], weighted_counts[:, UNMET]
    if strategy.binary == "unanimous":
        return np.where((unmet == 0) & (met > 0), MET, UNMET)
    tie_code = UNMET if criterion.weight >= 0 else MET
    return np.where(
        np.isclose(met, unmet, rtol=0, atol=_TIE),
        tie_code,
        np.where(met > unmet, MET, UNMET),
    )


def _nearest_to_centre(
    criterion: Criterion,
    votes: np.ndarray,
    strategy: Aggregation,
    scale: np.ndarray,
    scale_rank: np.ndarray,
) -> np.ndarray:
    """Per item, the index (into ``scale``) of the option whose value is nearest the median or
    mean of the real votes' values; ties -> the worse option."""
    values = criterion.code_values
    vote_values = np.where(votes >= 0, values[np.clip(votes, 0, None)], np.nan)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: no real vote
        centre = (
            np.nanmedian(vote_values, axis=0)
            if strategy.ordinal == "median"
            else np.nanmean(vote_values, axis=0)
        )
    distance = np.abs(centre[:, None] - values[scale][None, :])
    fake_counts = -np.nan_to_num(distance, nan=np.inf)
    allowed = np.ones(len(scale), dtype=bool)
    return _pick_max(fake_counts, scale_rank, allowed)


AbstainPolicy = Literal["skip", "zero", "worst"]
ABSTAIN_POLICIES: tuple[AbstainPolicy, ...] = ("skip", "zero", "worst")


def is_abstain_policy(value: object) -> TypeGuard[AbstainPolicy]:
    """Whether ``value`` names an abstention policy (skip | zero | worst)."""
    return value in ABSTAIN_POLICIES


def weighted_scores(
    criteria: Sequence[Criterion], codes: np.ndarray, abstain: AbstainPolicy = "skip"
) -> np.ndarray:
    """Scores of every item from a criteria x items code matrix; NaN where undefined."""
    codes = np.asarray(codes)
    n_items = codes.shape[1]
    total = np.zeros(n_items)
    positive = np.zeros(n_items)
    negative = np.zeros(n_items)
    for c, criterion in enumerate(criteria):
        values = criterion.code_values.copy()
        if abstain != "skip":
            for code in criterion.abstain_codes:
                values[code] = 0.0 if abstain == "zero" else values[criterion.worst_code]
        row = codes[c]
        value = np.where(row >= 0, values[np.clip(row, 0, None)], np.nan)
        scored = ~np.isnan(value)
        weight = criterion.weight
        total += np.where(scored, np.nan_to_num(value) * weight, 0.0)
        if weight > 0:
            positive += np.where(scored, weight, 0.0)
        elif weight < 0:
            negative += np.where(scored, -weight, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        by_positive = np.clip(total / positive, 0.0, 1.0)
        by_negative = np.clip(1.0 + total / negative, 0.0, 1.0)
    return np.where(positive > 0, by_positive, np.where(negative > 0, by_negative, np.nan))
