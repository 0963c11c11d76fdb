"""A batch of ranking judgements read once: per row its gains, its ranked ids and its k.

The ranking metrics of one batch share one :class:`Judged` (a per-thread memo keyed on the
identity of the batch's samples and outputs, element by element, so that the runner's
per-metric lists of the same executions hit it). Rows that cannot be read keep the message
``score()`` would raise, in the order ``score()`` checks: the gains, then the ranking, then k.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any

from assay.data.outputs import parse_retrieved
from assay.errors import MetricError
from assay.metrics.base import positive_int_option
from assay.metrics.memo import LastParsed
from assay.metrics.ranked_list import ranked
from assay.metrics.relevance import (
    DEFAULT_K,
    FINITE_LEVEL,
    RELEVANT_KEY,
    ordered_gains,
    relevance_source,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from assay.data.dataset import Sample
    from assay.data.outputs import Output

_STR, _DICT = frozenset({str}), frozenset({dict})
_FINITE = float(FINITE_LEVEL)  # a float below it in magnitude is an int level below FINITE_LEVEL


@dataclass(frozen=True)
class Judged:
    """The readable rows of a batch (``rows``, their gains, rankings and ``metadata.k``) and
    why the others cannot be scored (``errors``; ``k_errors``: only metrics that use k fail).

    ``rankings`` hold each row's ids, best first (an output's ``RankedDocs.ids``, not copied:
    most kernels look at the first k only). ``ordered`` holds every row's
    gains from high to low, row after row (``counts``: how many each), so that recall and the
    ideal DCG need no per-row work (a batch read in one go leaves it empty and puts them in
    ``derived`` as the float64 array the kernels read). A row's gains are the sample's own
    mapping when it holds integer levels (see :func:`~assay.metrics.relevance.ordered_gains`):
    nothing is copied.
    """

    size: int
    rows: list[int] = field(default_factory=list)
    relevance: list[Mapping[str, float]] = field(default_factory=list)
    rankings: list[Sequence[Any]] = field(default_factory=list)
    ordered: list[float] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    metadata_k: list[int | None] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)
    k_errors: dict[int, str] = field(default_factory=dict)
    derived: dict[Any, Any] = field(default_factory=dict)  # per-option tables built from it

    def ks(self, option: int | None) -> tuple[list[int], list[int], list[int]]:
        """(batch rows, their positions in ``rows``, their k) of the rows that have a valid k."""
        default = option if option is not None else DEFAULT_K
        if not self.k_errors:
            ks = [default if k is None else k for k in self.metadata_k]
            return self.rows, list(range(len(self.rows))), ks
        kept = [i for i, row in enumerate(self.rows) if row not in self.k_errors]
        ks = [default if (k := self.metadata_k[i]) is None else k for i in kept]
        return [self.rows[i] for i in kept], kept, ks


_LAST: LastParsed[Judged] = LastParsed()


def judged_batch(samples: Sequence[Sample], outputs: Sequence[Output]) -> Judged:
    """The batch's judgements, shared by the ranking metrics that score the same executions."""
    memo = _LAST
    source = memo.source
    if (
        memo.value is not None
        and isinstance(source, tuple)
        and _same(source[0], samples)
        and _same(source[1], outputs)
    ):
        return memo.value
    return memo.remember((samples, outputs), _judge(samples, outputs))


def _same(cached: Sequence[Any], given: Sequence[Any]) -> bool:
    return cached is given or (len(cached) == len(given) and all(map(operator.is_, cached, given)))


def _judge(samples: Sequence[Sample], outputs: Sequence[Output]) -> Judged:
    return _judge_plain(samples, outputs) or _judge_rows(samples, outputs)


def _judge_plain(samples: Sequence[Sample], outputs: Sequence[Output]) -> Judged | None:
    """The common batch, read with no per-row Python loop: no metadata.relevant, any
    metadata.k a plain positive integer, each ``expected_output`` is ``{id: integer level}``
    with a level above zero (all a float holds) and each output has a ``retrieved`` list; None
    for any other batch. What ``_judge_rows`` gives for it
    (:func:`~assay.metrics.relevance.ordered_gains` keeps such a mapping as is)."""
    metadata_k = _plain_ks([sample.metadata for sample in samples])
    if metadata_k is None:
        return None
    raws = [sample.expected_output for sample in samples]
    if {*map(type, raws)} != _DICT:
        return None
    # every level an int and every id a str (exact types, as ordered_gains asks); counting
    # the types is cheaper than a set of them
    total = sum(map(len, raws))
    values = chain.from_iterable(map(dict.values, raws))
    if list(map(type, values)).count(int) != total:
        return None
    if list(map(type, chain.from_iterable(raws))).count(str) != total:
        return None
    levels = _sorted_levels(raws)
    if levels is None:
        return None
    retrieved = [output.retrieved for output in outputs]
    if any(docs is None for docs in retrieved):  # none: its text is parsed row by row
        return None
    rankings: list[Sequence[Any]] = [docs.ids for docs in retrieved if docs is not None]
    size = len(raws)
    return Judged(
        size,
        rows=list(range(size)),
        relevance=raws,
        rankings=rankings,
        counts=levels[1],
        metadata_k=metadata_k,
        derived={("ordered",): levels[0]},
    )


def _sorted_levels(
    raws: list[dict[str, int]],
) -> tuple[tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]], list[int]] | None:
    """Every row's levels from high to low as float64, row after row, and where each row
    starts (one more entry: the end), as ``gain_table`` builds them from ``Judged.ordered``,
    but sorted in one numpy call; and how many each row has. None when a row has no level
    above zero or one at least 2**1023 in magnitude (the per-row path says why, or reads it)."""
    import numpy as np

    counts = np.fromiter(map(len, raws), dtype=np.intp, count=len(raws))
    bounds = np.zeros(len(raws) + 1, dtype=np.intp)
    np.cumsum(counts, out=bounds[1:])
    values = chain.from_iterable(map(dict.values, raws))
    try:
        levels = np.fromiter(values, dtype=np.float64, count=int(bounds[-1]))
    except OverflowError:  # beyond a float: the per-row path says so
        return None
    width = int(counts.max()) if len(raws) else 0
    if width == 0:  # no row has a level: nothing to sort (the per-row path says why)
        return None
    if counts.min() == width:  # as many levels in every row: no padding
        table = -levels.reshape(len(raws), width)
    else:  # negated levels left-aligned per row, +inf after them (sorted last)
        table = np.full((len(raws), width), np.inf)
        rows = np.arange(len(raws)).repeat(counts)
        table[rows, np.arange(len(levels)) - bounds[:-1].repeat(counts)] = -levels
    table.sort(axis=1)
    if not (table[:, 0] < 0).all() or not (np.abs(levels) < _FINITE).all():
        return None
    inside = table if counts.min() == width else table[np.arange(width) < counts[:, None]]
    return (-inside.reshape(-1), bounds), counts.tolist()


def _plain_ks(metadata: list[dict[str, Any]]) -> list[int | None] | None:
    """Each sample's ``metadata.k`` where every one is absent or an ``int`` of at least 1 and
    no sample names its relevance in metadata; None otherwise (the per-row path reads those,
    and says why a k is refused)."""
    if not any(metadata):
        return [None] * len(metadata)
    if any(entries.get(RELEVANT_KEY) is not None for entries in metadata):
        return None
    ks = [entries.get("k") for entries in metadata]
    if all(k is None or (type(k) is int and k >= 1) for k in ks):
        return ks
    return None


def _judge_rows(samples: Sequence[Sample], outputs: Sequence[Output]) -> Judged:
    judged = Judged(len(samples))
    for index, (sample, output) in enumerate(zip(samples, outputs)):
        try:
            relevance, ordered = ordered_gains(*relevance_source(sample))
            ids = ranked(output).ids
        except MetricError as exc:
            judged.errors[index] = str(exc)
            continue
        k = sample.metadata.get("k")
        if k is not None:
            try:
                k = positive_int_option(k, "metadata.k")
            except MetricError as exc:
                judged.k_errors[index], k = str(exc), None
        _keep(judged, index, (relevance, ordered), ids, k)
    return judged


def _keep(
    judged: Judged,
    index: int,
    gains: tuple[Mapping[str, float], list[float]],
    ids: Sequence[Any],
    k: int | None,
) -> None:
    relevance, ordered = gains
    judged.rows.append(index)
    judged.relevance.append(relevance)
    judged.ordered.extend(ordered)
    judged.counts.append(len(ordered))
    judged.rankings.append(ids)
    judged.metadata_k.append(k)


def judged_lists(relevance: Sequence[Any], rankings: Sequence[Any]) -> Judged:
    """Judgements from plain per-query lists: relevance as ``expected_output`` takes it, and
    rankings of ids (or ``{id, text}`` objects) best first."""
    if len(relevance) != len(rankings):
        raise ValueError("relevance and rankings must have one entry per query each")
    judged = Judged(len(relevance))
    for index, (raw, ranking) in enumerate(zip(relevance, rankings)):
        try:
            gains = ordered_gains(raw, f"relevance[{index}]")
            ids = plain_ids(ranking, f"rankings[{index}]")
        except MetricError as exc:
            judged.errors[index] = str(exc)
            continue
        _keep(judged, index, gains, ids, None)
    return judged


def plain_ids(ranking: object, where: str) -> Sequence[str]:
    """Ranked ids, best first; a repeated id keeps its first rank (as ``retrieved`` does)."""
    if isinstance(ranking, (list, tuple)) and {*map(type, ranking)} == _STR:
        first = dict.fromkeys(ranking)
        if "" not in first:
            return list(first)
    try:
        return parse_retrieved(ranking, where=where).ids
    except ValueError as exc:
        raise MetricError(str(exc)) from None
