"""Retrieval-ranking metrics: hit@k, recall@k, MRR, nDCG@k and answer-containment@k.

The ranked list comes from the output's ``retrieved`` field, or from the output text when it is
JSON (:mod:`assay.metrics.ranked_list`); relevance from ``metadata.relevant`` or
``expected_output`` (:mod:`assay.metrics.relevance`). The four ranking metrics also score a
whole batch at once (``score_batch``, the runner's path) and plain per-query lists without a
Sample or Output per query (:func:`score_rankings`), through the kernels of
:mod:`assay.metrics.gain_table`.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from assay.errors import MetricConfigError, MetricError
from assay.metrics.base import (
    MetricScore,
    check_bool_option,
    clamp01,
    positive_int_option,
    type_name,
)
from assay.metrics.gain_table import (
    OVERFLOW,
    column,
    dcg_rows,
    first_relevant_ranks,
    gain_table,
    ideal_gains,
    relevant_counts,
)
from assay.metrics.memo import LastParsed
from assay.metrics.ranked_list import ranked, ranked_ids
from assay.metrics.ranking_judgements import Judged, judged_batch, judged_lists
from assay.metrics.relevance import DEFAULT_K, RELEVANT_KEY, check_k, gains, resolve_k

if TYPE_CHECKING:
    from assay.data.dataset import Sample
    from assay.data.outputs import Output
    from assay.metrics.batch import ScoreColumn

__all__ = [
    "DEFAULT_K",
    "MRR",
    "RELEVANT_KEY",
    "AnswerContainmentAtK",
    "HitAtK",
    "NDCGAtK",
    "RecallAtK",
    "dcg",
    "gains",
    "ranked",
    "ranked_ids",
    "resolve_k",
    "score_rankings",
]


class _Read:
    """What the ranking metrics read of one sample and output: its gains, its ranked ids,
    ``metadata.k`` as given, and the gains of its top k (for the last k asked for). The
    metrics of one execution score it one after another and share one read (a per-thread
    memo keyed on the identity of the sample and the output, as :func:`gains` is)."""

    __slots__ = ("ids", "metadata_k", "ordered", "output", "relevance", "sample", "top", "top_k")

    top: list[float]
    ordered: list[float] | None

    def __init__(self, sample: Sample, output: Output) -> None:
        self.sample, self.output = sample, output
        self.relevance = gains(sample)  # raises first, as score() always has: gains, ids, k
        self.ids = ranked(output).ids
        self.metadata_k = sample.metadata.get("k")
        self.top_k, self.top, self.ordered = -1, [], None

    def k(self, option: int | None) -> int:
        """``metadata.k`` (int or digit string), else the metric option, else 5."""
        if self.metadata_k is None:
            return option if option is not None else DEFAULT_K
        return positive_int_option(self.metadata_k, "metadata.k")

    def top_gains(self, k: int) -> list[float]:
        """The gains of the first k ids (zero for an id without one)."""
        if k != self.top_k:
            self.top_k = k
            self.top = list(map(self.relevance.get, self.ids[:k], itertools.repeat(0.0)))
        return self.top

    def first_relevant_rank(self) -> int | None:
        """The 1-based rank of the first id with a gain above zero (None: none); the top
        gains already read answer it when they hold one."""
        start = len(self.top)  # the top gains are those of ids[:start]
        rank = next(itertools.compress(itertools.count(1), map(_POSITIVE, self.top)), None)
        if rank is None:
            rest = _relevant(self.relevance, itertools.islice(self.ids, start, None))
            rank = next(itertools.compress(itertools.count(start + 1), rest), None)
        return rank

    def relevant_count(self) -> int:
        """How many ids have a gain above zero: the head of the gains from high to low."""
        return bisect.bisect_left(self.sorted_gains(), 0.0, key=_NEGATED)

    def sorted_gains(self) -> list[float]:
        """Every gain, from high to low."""
        if self.ordered is None:
            self.ordered = sorted(self.relevance.values(), reverse=True)
        return self.ordered


_LAST_READ: LastParsed[_Read] = LastParsed()


def _read(sample: Sample, output: Output) -> _Read:
    read = _LAST_READ.value
    if read is not None and read.output is output and read.sample is sample:
        return read
    return _LAST_READ.remember(output, _Read(sample, output))


@dataclass(frozen=True)
class _RankingMetric:
    name: str
    k: int | None = None

    def __post_init__(self) -> None:
        check_k(self.k)

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        """As ``score`` row by row (values bit for bit, details, error messages)."""
        return self.score_judged(judged_batch(samples, outputs))

    def score_judged(self, judged: Judged) -> ScoreColumn:
        raise NotImplementedError

    def _errors(self, judged: Judged) -> dict[int, str]:
        return {**judged.errors, **judged.k_errors}


@dataclass(frozen=True)
class HitAtK(_RankingMetric):
    name: str = "retrieval-hit-at-k"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        read = _read(sample, output)
        k = read.k(self.k)
        hit = any(map(_POSITIVE, read.top_gains(k)))
        return MetricScore(1.0 if hit else 0.0, {"k": k, "hit": hit})

    def score_judged(self, judged: Judged) -> ScoreColumn:
        top = gain_table(judged, self.k)
        hit = (top.gains > 0).any(axis=1)
        details = {"k": top.ks, "hit": cast("list[Any]", hit.tolist())}
        return column(judged, top.rows, hit, details, self._errors(judged))


@dataclass(frozen=True)
class RecallAtK(_RankingMetric):
    name: str = "retrieval-recall-at-k"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        read = _read(sample, output)
        k = read.k(self.k)
        relevant = read.relevant_count()
        found = sum(map(_POSITIVE, read.top_gains(k)))
        return MetricScore(
            clamp01(found / relevant), {"k": k, "relevant": relevant, "found": found}
        )

    def score_judged(self, judged: Judged) -> ScoreColumn:
        import numpy as np

        top = gain_table(judged, self.k)
        relevant = relevant_counts(judged, top)
        found = (top.gains > 0).sum(axis=1)
        values = np.clip(found / np.array(relevant, dtype=np.int64).reshape(-1), 0.0, 1.0)
        details = {"k": top.ks, "relevant": relevant, "found": found.tolist()}
        return column(judged, top.rows, values, details, self._errors(judged))


@dataclass(frozen=True)
class MRR:
    name: str = "retrieval-mrr"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        rank = _read(sample, output).first_relevant_rank()
        if rank is None:
            return MetricScore(0.0, {"first_relevant_rank": None})
        return MetricScore(1.0 / rank, {"first_relevant_rank": rank})

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        """As ``score`` row by row (values bit for bit, details, error messages)."""
        return self.score_judged(judged_batch(samples, outputs))

    def score_judged(self, judged: Judged) -> ScoreColumn:
        ranks = first_relevant_ranks(judged)
        values = [0.0 if rank is None else 1.0 / rank for rank in ranks]
        details = {"first_relevant_rank": ranks}
        return column(judged, judged.rows, values, details, judged.errors)


_LN2 = math.log(2.0)
_POSITIVE = (0.0).__lt__
_NEGATED: Callable[[float], float] = operator.neg
_DISCOUNTS = tuple(math.log2(position + 2) for position in range(256))


def _relevant(relevance: Mapping[str, float], ids: Iterable[str]) -> Iterator[bool]:
    """Per id, whether its gain is above zero (an unjudged id's gain is zero)."""
    return map(_POSITIVE, map(relevance.get, ids, itertools.repeat(0.0)))


def dcg(gain_list: Sequence[float], *, exponential: bool) -> float:
    """Sum, left to right, of each gain above zero (2^gain - 1 when exponential) divided by
    log2(position + 2), positions counted from 0."""
    discounts: Sequence[float] = _DISCOUNTS
    if len(gain_list) > len(discounts):
        discounts = [math.log2(position + 2) for position in range(len(gain_list))]
    total = 0.0
    for gain, discount in zip(gain_list, discounts):
        if gain > 0:
            total += (math.expm1(gain * _LN2) if exponential else gain) / discount
    return total


@dataclass(frozen=True)
class NDCGAtK(_RankingMetric):
    name: str = "retrieval-ndcg-at-k"
    gain: Literal["linear", "exponential"] = "linear"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.gain not in ("linear", "exponential"):
            raise MetricConfigError("retrieval-ndcg-at-k gain must be 'linear' or 'exponential'")

    def score(self, sample: Sample, output: Output) -> MetricScore:
        read = _read(sample, output)
        k = read.k(self.k)
        exponential = self.gain == "exponential"
        try:
            actual = dcg(read.top_gains(k), exponential=exponential)
            ideal = dcg(read.sorted_gains()[:k], exponential=exponential)
        except OverflowError:
            actual = ideal = math.inf
        if not math.isfinite(ideal):
            raise MetricError(OVERFLOW)
        return MetricScore(clamp01(actual / ideal), {"k": k, "dcg": actual, "idcg": ideal})

    def score_judged(self, judged: Judged) -> ScoreColumn:
        """dcg as :func:`dcg` computes it: the same divisions, summed left to right (cumsum)."""
        import numpy as np

        top = gain_table(judged, self.k)
        exponential = self.gain == "exponential"
        actual = dcg_rows(top.gains, exponential=exponential)
        ideal = dcg_rows(ideal_gains(judged, top), exponential=exponential)
        good = np.isfinite(ideal)
        errors = self._errors(judged)
        if not good.all():
            errors |= {row: OVERFLOW for row, ok in zip(top.rows, good.tolist()) if not ok}
            rows = [row for row, ok in zip(top.rows, good.tolist()) if ok]
            ks = [k for k, ok in zip(top.ks, good.tolist()) if ok]
            actual, ideal = actual[good], ideal[good]
        else:
            rows, ks = top.rows, top.ks
        values = np.clip(actual / ideal, 0.0, 1.0)
        details = {"k": ks, "dcg": actual.tolist(), "idcg": ideal.tolist()}
        return column(judged, rows, values, details, errors)


RankingMetric = HitAtK | RecallAtK | MRR | NDCGAtK


def score_rankings(
    metrics: Sequence[RankingMetric], relevance: Sequence[Any], rankings: Sequence[Any]
) -> list[ScoreColumn]:
    """Ranking metrics over plain per-query lists, one column per metric, without building a
    Sample and an Output (and a ``Retrieved`` per document) for each query.

    ``relevance[i]`` is what ``expected_output`` takes (a list of relevant ids, an id -> gain
    map, or JSON of either) and ``rankings[i]`` the ids best first; k is each metric's option
    (else 5). Values, details and error messages are those ``score`` gives for the same query.
    """
    judged = judged_lists(relevance, rankings)
    return [metric.score_judged(judged) for metric in metrics]


_SPACE = re.compile(r"\s+")


def _normalise(text: str, case_sensitive: bool) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if case_sensitive else text.casefold()


@dataclass(frozen=True)
class AnswerContainmentAtK:
    """End-to-end reachability: is the answer text inside one of the top-k passages?"""

    name: str = "answer-containment-at-k"
    k: int | None = None
    case_sensitive: bool = False

    def __post_init__(self) -> None:
        check_k(self.k)
        check_bool_option(self.case_sensitive, self.name, "case_sensitive")

    def score(self, sample: Sample, output: Output) -> MetricScore:
        expected = sample.expected_output
        if not isinstance(expected, str) or not expected.strip():
            raise MetricError(
                f"expected_output must be a non-empty answer span for {self.name}; got "
                f"{type_name(expected)}"
            )
        span = _normalise(expected, self.case_sensitive)
        k = resolve_k(sample, self.k)
        items = ranked(output)[:k]
        if items and items.texts is None:
            raise MetricError(
                "retrieved entries carry no text; answer-containment-at-k needs {id, text} entries"
            )
        for rank, item in enumerate(items, start=1):
            if item.text and span in _normalise(item.text, self.case_sensitive):
                return MetricScore(1.0, {"k": k, "matched_rank": rank})
        return MetricScore(0.0, {"k": k, "matched_rank": None})
