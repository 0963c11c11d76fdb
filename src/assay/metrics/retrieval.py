"""Retrieval-ranking metrics: hit@k, recall@k, MRR, nDCG@k and answer-containment@k.

The ranked list comes from the output's ``retrieved`` field, or from the output text when it is
JSON (a list of ids / ``{id, text}`` objects, or an object with a ``retrieved`` list).
Relevance comes from ``expected_output``: a list of ids (gain 1 each), a mapping of id to
numeric gain, or a JSON string of either. An id is relevant when its gain is above zero.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from assay.errors import MetricConfigError, MetricError
from assay.metrics.base import MetricScore, clamp01, positive_int_option, register, type_name
from assay.outputs import Retrieved, parse_retrieved

if TYPE_CHECKING:
    from assay.dataset import Sample
    from assay.outputs import Output

DEFAULT_K = 5


class _LastParsed(threading.local):
    """A one-entry memo per thread: the retrieval metrics of one execution share one parse.

    Keyed on object identity, so it can never return a parse of a different value; it holds
    no metric state (metrics stay stateless and shareable).
    """

    def __init__(self) -> None:
        self.source: object = None
        self.value: Any = None


_LAST_GAINS = _LastParsed()
_LAST_RANKING = _LastParsed()
_LAST_IDS = _LastParsed()


def ranked_ids(output: Output) -> list[str]:
    """Ids of the ranked list, best first (shared by the metrics of one execution)."""
    memo = _LAST_IDS
    if memo.source is output:
        return memo.value
    value = [item.id for item in ranked(output)]
    memo.source, memo.value = output, value
    return value


def ranked(output: Output) -> tuple[Retrieved, ...]:
    """The output's ranked retrieval list (duplicates keep their best rank)."""
    if output.retrieved is not None:
        return output.retrieved
    memo = _LAST_RANKING
    if memo.source is output:
        return memo.value
    value = _parse_ranking(output)
    memo.source, memo.value = output, value
    return value


def _parse_ranking(output: Output) -> tuple[Retrieved, ...]:
    text = output.text.strip()
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise MetricError(
            "output has no 'retrieved' list and its text is not JSON; return {output, retrieved} "
            "from the system under test or a JSON list of ids"
        ) from None
    if isinstance(data, Mapping) and "retrieved" in data:
        data = data["retrieved"]
    if not isinstance(data, list):
        raise MetricError(
            "retrieval output must be a JSON list or an object with a 'retrieved' list"
        )
    try:
        return parse_retrieved(data)
    except ValueError as exc:
        raise MetricError(str(exc)) from None


def gains(sample: Sample) -> dict[str, float]:
    """Relevance judgements ``{id: gain}`` from expected_output (callers must not mutate it)."""
    memo = _LAST_GAINS
    raw: Any = sample.expected_output
    if memo.source is raw and raw is not None:
        return memo.value
    value = _parse_gains(raw)
    memo.source, memo.value = raw, value
    return value


def _parse_gains(raw: Any) -> dict[str, float]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            raise MetricError(
                "expected_output string is not JSON; give a list of relevant ids or an id -> gain map"
            ) from None
    result: dict[str, float] = {}
    if isinstance(raw, list):
        for position, item in enumerate(raw):
            if isinstance(item, int) and not isinstance(item, bool):
                item = str(item)
            if not isinstance(item, str) or not item:
                raise MetricError(f"expected_output[{position}] must be a non-empty id string")
            result.setdefault(item, 1.0)
    elif isinstance(raw, Mapping):
        for key, value in raw.items():
            if isinstance(value, str):
                try:
                    value = float(value)
                except ValueError:
                    value = None
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
            ):
                raise MetricError(f"expected_output gain for {key!r} must be a finite number")
            result[str(key)] = float(value)
    else:
        raise MetricError(
            f"expected_output must list relevant ids or map id -> gain; got {type_name(raw)}"
        )
    if not any(gain > 0 for gain in result.values()):
        raise MetricError("expected_output must name at least one relevant id (gain > 0)")
    return result


def resolve_k(sample: Sample, option: int | None) -> int:
    """``metadata.k`` (int or digit string), else the metric option, else 5."""
    if "k" in sample.metadata and sample.metadata["k"] is not None:
        return positive_int_option(sample.metadata["k"], "metadata.k")
    return option if option is not None else DEFAULT_K


def _check_k(k: int | None) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise MetricConfigError("retrieval metric k must be a positive integer")


@dataclass(frozen=True)
class _RankingMetric:
    name: str
    k: int | None = None

    def __post_init__(self) -> None:
        _check_k(self.k)

    def _inputs(self, sample: Sample, output: Output) -> tuple[list[str], dict[str, float], int]:
        relevance = gains(sample)
        return ranked_ids(output), relevance, resolve_k(sample, self.k)


@register("retrieval-hit-at-k", "1.0 when any relevant id is in the top k")
@dataclass(frozen=True)
class HitAtK(_RankingMetric):
    name: str = "retrieval-hit-at-k"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        ids, relevance, k = self._inputs(sample, output)
        hit = any(relevance.get(i, 0.0) > 0 for i in ids[:k])
        return MetricScore(1.0 if hit else 0.0, {"k": k, "hit": hit})


@register("retrieval-recall-at-k", "share of relevant ids found in the top k")
@dataclass(frozen=True)
class RecallAtK(_RankingMetric):
    name: str = "retrieval-recall-at-k"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        ids, relevance, k = self._inputs(sample, output)
        relevant = {i for i, g in relevance.items() if g > 0}
        found = sum(1 for i in ids[:k] if i in relevant)
        return MetricScore(
            clamp01(found / len(relevant)), {"k": k, "relevant": len(relevant), "found": found}
        )


@register("retrieval-mrr", "reciprocal rank of the first relevant id over the whole list")
@dataclass(frozen=True)
class MRR:
    name: str = "retrieval-mrr"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        relevance = gains(sample)
        for rank, item_id in enumerate(ranked_ids(output), start=1):
            if relevance.get(item_id, 0.0) > 0:
                return MetricScore(1.0 / rank, {"first_relevant_rank": rank})
        return MetricScore(0.0, {"first_relevant_rank": None})


_LN2 = math.log(2.0)


def dcg(gain_list: list[float], *, exponential: bool) -> float:
    total = 0.0
    for position, gain in enumerate(gain_list):
        if gain > 0:
            value = math.expm1(gain * _LN2) if exponential else gain
            total += value / math.log2(position + 2)
    return total


@register(
    "retrieval-ndcg-at-k",
    "normalised discounted cumulative gain over the top k (linear or 2^g-1 gains)",
)
@dataclass(frozen=True)
class NDCGAtK(_RankingMetric):
    name: str = "retrieval-ndcg-at-k"
    gain: Literal["linear", "exponential"] = "linear"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.gain not in ("linear", "exponential"):
            raise MetricConfigError("retrieval-ndcg-at-k gain must be 'linear' or 'exponential'")

    def score(self, sample: Sample, output: Output) -> MetricScore:
        ids, relevance, k = self._inputs(sample, output)
        exponential = self.gain == "exponential"
        try:
            actual = dcg([relevance.get(i, 0.0) for i in ids[:k]], exponential=exponential)
            ideal = dcg(sorted(relevance.values(), reverse=True)[:k], exponential=exponential)
        except OverflowError:
            actual = ideal = math.inf
        if not math.isfinite(ideal):
            raise MetricError("relevance gains are too large: the ideal DCG overflows a float")
        return MetricScore(clamp01(actual / ideal), {"k": k, "dcg": actual, "idcg": ideal})


_SPACE = re.compile(r"\s+")


def _normalise(text: str, case_sensitive: bool) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if case_sensitive else text.casefold()


@register(
    "answer-containment-at-k", "1.0 when the expected answer span occurs in a top-k retrieved text"
)
@dataclass(frozen=True)
class AnswerContainmentAtK:
    """End-to-end reachability: is the answer text inside one of the top-k passages?"""

    name: str = "answer-containment-at-k"
    k: int | None = None
    case_sensitive: bool = False

    def __post_init__(self) -> None:
        _check_k(self.k)

    def score(self, sample: Sample, output: Output) -> MetricScore:
        expected = sample.expected_output
        if not isinstance(expected, str) or not expected.strip():
            raise MetricError(
                f"expected_output must be a non-empty answer span for {self.name}; got {type_name(expected)}"
            )
        span = _normalise(expected, self.case_sensitive)
        k = resolve_k(sample, self.k)
        items = ranked(output)[:k]
        if items and not any(item.text for item in items):
            raise MetricError(
                "retrieved entries carry no text; answer-containment-at-k needs {id, text} entries"
            )
        for rank, item in enumerate(items, start=1):
            if item.text and span in _normalise(item.text, self.case_sensitive):
                return MetricScore(1.0, {"k": k, "matched_rank": rank})
        return MetricScore(0.0, {"k": k, "matched_rank": None})
