"""The ranking kernels: hit, recall, first relevant rank and DCG over a zero-padded gain matrix.

:class:`GainTable` holds, per readable row of a batch, the gains of its top-k ids (numpy,
``rows x max k``, zero past k or past the list). Every kernel returns what the per-sample
metric computes, bit for bit: DCG is the same divisions summed left to right (``cumsum``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.metrics.batch import ColumnBuilder, ScoreColumn

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from assay.metrics.judged import Judged

_LN2 = math.log(2.0)
_POSITIVE = (0.0).__lt__
OVERFLOW = "relevance gains are too large: the ideal DCG overflows a float"


@dataclass(frozen=True)
class GainTable:
    """The rows of a batch a metric with cut-off ``option`` scores, and their top-k gains."""

    rows: list[int]  # batch indices
    ks: list[int]
    relevance: list[dict[str, float]]
    gains: npt.NDArray[np.float64]


def gain_table(judged: Judged, option: int | None) -> GainTable:
    """The table for ``option``, built once per batch (hit, recall and nDCG share it)."""
    table = judged.derived.get(("table", option))
    if table is None:
        table = judged.derived["table", option] = _build(judged, option)
    return table


def _build(judged: Judged, option: int | None) -> GainTable:
    import numpy as np

    rows, positions, ks = judged.ks(option)
    relevance = [judged.relevance[i] for i in positions]
    rankings = [judged.rankings[i] for i in positions]
    width = max(map(min, ks, map(len, rankings)), default=0)
    flat: list[float] = []
    zero = itertools.repeat(0.0)
    for gain, ranking, k in zip(relevance, rankings, ks):
        top = ranking[: min(k, width)]
        flat += map(gain.get, judged.ids(top), zero)
        flat += [0.0] * (width - len(top))
    table = np.array(flat, dtype=np.float64).reshape(len(rows), width)
    return GainTable(rows, ks, relevance, table)


def relevant_counts(table: GainTable) -> list[int]:
    """How many ids of each row have a gain above zero."""
    return [sum(map(_POSITIVE, gain.values())) for gain in table.relevance]


def first_relevant_ranks(judged: Judged) -> list[int | None]:
    """Per readable row, the 1-based rank of its first id with a gain above zero (None: none)."""
    ranks: list[int | None] = []
    zero = itertools.repeat(0.0)
    for gain, ranking in zip(judged.relevance, judged.rankings):
        relevant = map(_POSITIVE, map(gain.get, judged.ids(ranking), zero))
        ranks.append(next(itertools.compress(itertools.count(1), relevant), None))
    return ranks


def ideal_gains(table: GainTable) -> npt.NDArray[np.float64]:
    """Each row's gains sorted from high to low, cut at its k, zero-padded."""
    import numpy as np

    ideal = [sorted(gain.values(), reverse=True)[:k] for gain, k in zip(table.relevance, table.ks)]
    width = max(map(len, ideal), default=0)
    flat: list[float] = []
    for row in ideal:
        flat += row
        flat += [0.0] * (width - len(row))
    return np.array(flat, dtype=np.float64).reshape(len(ideal), width)


def dcg_rows(gain: npt.NDArray[np.float64], *, exponential: bool) -> npt.NDArray[np.float64]:
    """Per-row DCG of a zero-padded gain matrix, bit for bit as the per-sample ``dcg``
    (a gain whose 2^g - 1 overflows gives inf, as the per-sample metric's overflow does)."""
    import numpy as np

    if gain.shape[1] == 0:
        return np.zeros(gain.shape[0])
    positive = gain > 0
    if exponential:
        gain = gain.copy()
        gain[positive] = [_exp2m1(g) for g in gain[positive].tolist()]
    discount = np.array([math.log2(p + 2) for p in range(gain.shape[1])])
    terms = np.where(positive, gain / discount, 0.0)
    return np.cumsum(terms, axis=1)[:, -1]


def _exp2m1(gain: float) -> float:
    try:
        return math.expm1(gain * _LN2)
    except OverflowError:
        return math.inf


def column(
    judged: Judged,
    rows: list[int],
    values: Any,
    details: Mapping[str, list[Any]],
    errors: Mapping[int, str],
) -> ScoreColumn:
    """A metric's column: ``values`` and ``details`` on ``rows``, the other rows' errors."""
    builder = ColumnBuilder(judged.size)
    builder.values[rows] = values
    for key, values_at in details.items():
        builder.put_column(key, _spread(judged.size, rows, values_at))
    for index, message in errors.items():
        builder.fail(index, message)
    return builder.build()


def _spread(size: int, rows: list[int], values: list[Any]) -> list[Any]:
    """A full-length details column from the scored rows' values (None elsewhere)."""
    if len(rows) == size:
        return values
    full: list[Any] = [None] * size
    for index, value in zip(rows, values):
        full[index] = value
    return full
