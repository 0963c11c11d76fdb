"""The ranking kernels: hit, recall, first relevant rank and DCG over a zero-padded gain matrix.

:class:`GainTable` holds, per readable row of a batch, the gains of its top-k ids (numpy,
``rows x max k``, zero past k or past the list); recall and the ideal DCG read each row's
gains sorted once for the batch (``Judged.ordered``). Every kernel returns what the per-sample
metric computes, bit for bit: DCG is the same divisions summed left to right (``cumsum``).
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from assay.metrics.batch import ColumnBuilder, ScoreColumn

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from assay.metrics.ranking_judgements import Judged

_LN2 = math.log(2.0)
_POSITIVE = (0.0).__lt__
OVERFLOW = "relevance gains are too large: the ideal DCG overflows a float"


@dataclass(frozen=True)
class GainTable:
    """The rows of a batch a metric with cut-off ``option`` scores, and their top-k gains."""

    rows: list[int]  # batch indices
    positions: list[int]  # their positions among the judged rows
    ks: list[int]
    cuts: list[int]  # how many ids each row's gains cover: min(k, length of its ranking)
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
    relevance, rankings = judged.relevance, judged.rankings
    if len(positions) != len(judged.rows):
        relevance = [relevance[i] for i in positions]
        rankings = [rankings[i] for i in positions]
    cuts = list(map(min, ks, map(len, rankings)))
    width = max(cuts, default=0)
    zero = itertools.repeat(0.0)
    if min(cuts, default=0) == width:  # every row's gains cover the width: no padding
        tops = map(operator.itemgetter(slice(width)), rankings)
        gets = map(operator.attrgetter("get"), relevance)
        flat = itertools.chain.from_iterable(map(map, gets, tops, itertools.repeat(zero)))
        table = np.fromiter(flat, dtype=np.float64, count=len(rows) * width)
    else:
        table = np.array(_padded(relevance, rankings, ks, width), dtype=np.float64)
    table = table.reshape(len(rows), width)
    return GainTable(rows, positions, ks, cuts, table)


def _padded(
    relevance: list[Mapping[str, float]], rankings: list[Sequence[Any]], ks: list[int], width: int
) -> list[float]:
    """Each row's gains of its top k ids, zero-padded to ``width``, row after row."""
    flat: list[float] = []
    zero, padding = itertools.repeat(0.0), [0.0] * width
    for gain, ranking, k in zip(relevance, rankings, ks):
        top = ranking[:k] if k < width else ranking[:width]
        flat += map(gain.get, top, zero)
        if len(top) < width:
            flat += padding[len(top) :]
    return flat


def _ordered(judged: Judged) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]]:
    """Every judged row's gains from high to low, row after row, and where each row starts
    (one more entry: the end), as float64 (built once per batch)."""
    import numpy as np

    cached = judged.derived.get(("ordered",))
    if cached is None:
        bounds = np.zeros(len(judged.counts) + 1, dtype=np.intp)
        np.cumsum(judged.counts, out=bounds[1:])
        cached = judged.derived["ordered",] = (np.array(judged.ordered, dtype=np.float64), bounds)
    return cast("tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]]", cached)


def relevant_counts(judged: Judged, table: GainTable) -> list[int]:
    """How many ids of each row of ``table`` have a gain above zero."""
    import numpy as np

    gains, bounds = _ordered(judged)
    positive = np.zeros(len(gains) + 1, dtype=np.intp)
    np.cumsum(gains > 0, out=positive[1:])
    where = np.array(table.positions, dtype=np.intp)
    return cast("list[int]", (positive[bounds[where + 1]] - positive[bounds[where]]).tolist())


def first_relevant_ranks(judged: Judged) -> list[int | None]:
    """Per readable row, the 1-based rank of its first id with a gain above zero (None: none).

    A gain table hit, recall or nDCG built for the batch answers the rows with a relevant id
    in their top k; only the others are scanned, from there on.
    """
    ranks: list[int | None] = [None] * len(judged.rows)
    starts = [0] * len(judged.rows)
    tables = [
        value
        for key, value in judged.derived.items()
        if key[0] == "table" and value.gains.shape[1]  # a table of no column has no argmax
    ]
    if tables:
        table = max(tables, key=lambda t: t.gains.shape[1])
        positive = table.gains > 0
        found, first = positive.any(axis=1).tolist(), (positive.argmax(axis=1) + 1).tolist()
        for position, cut, hit, rank in zip(table.positions, table.cuts, found, first):
            if hit:
                ranks[position] = rank
            else:
                starts[position] = cut
    zero = itertools.repeat(0.0)
    relevance, rankings = judged.relevance, judged.rankings
    for position in [position for position, rank in enumerate(ranks) if rank is None]:
        start = starts[position]
        rest = itertools.islice(rankings[position], start, None)
        relevant = map(_POSITIVE, map(relevance[position].get, rest, zero))
        ranks[position] = next(itertools.compress(itertools.count(start + 1), relevant), None)
    return ranks


def ideal_gains(judged: Judged, table: GainTable) -> npt.NDArray[np.float64]:
    """Each row's gains sorted from high to low, cut at its k, zero-padded."""
    import numpy as np

    gains, bounds = _ordered(judged)
    counts = judged.counts
    if len(table.positions) != len(counts):
        counts = [counts[i] for i in table.positions]
    cut = np.array(list(map(min, table.ks, counts)), dtype=np.intp)
    width = int(cut.max()) if len(cut) else 0
    column = np.arange(width)
    inside = column < cut[:, None]
    start = bounds[np.array(table.positions, dtype=np.intp)]
    return np.where(inside, gains[np.where(inside, start[:, None] + column, 0)], 0.0)


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
    values: object,
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
