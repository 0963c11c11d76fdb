"""Retrieval-ranking metrics: hit@k, recall@k, MRR, nDCG@k and answer-containment@k.

The ranked list comes from the output's ``retrieved`` field, or from the output text when it is
JSON (a list of ids / ``{id, text}`` objects, or an object with a ``retrieved`` list).
Relevance comes from ``metadata.relevant`` when a sample has it (so ``expected_output`` can hold
the reference answer), else from ``expected_output``: a list of ids (gain 1 each), a mapping of
id to numeric gain, or a JSON string of either. An id is relevant when its gain is above zero.
"""

from __future__ import annotations

import itertools
import math
import operator
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from assay.bounded import loads_json
from assay.errors import MetricConfigError, MetricError
from assay.metrics.base import MetricScore, clamp01, positive_int_option, type_name
from assay.metrics.batch import ColumnBuilder, ScoreColumn, score_rows
from assay.outputs import Retrieved, parse_retrieved

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from assay.dataset import Sample
    from assay.outputs import Output

DEFAULT_K = 5
_T = TypeVar("_T")


class _LastParsed(threading.local, Generic[_T]):
    """A one-entry memo per thread: the retrieval metrics of one execution share one parse.

    Keyed on object identity, so it can never return a parse of a different value; it holds
    no metric state (metrics stay stateless and shareable). ``value`` is None until the first
    parse, and ``source`` is then None too, which no caller's input is.
    """

    def __init__(self) -> None:
        self.source: object = None
        self.value: _T | None = None
        self.tops: dict[int | None, _Top] = {}


_LAST_GAINS: _LastParsed[dict[str, float]] = _LastParsed()
RELEVANT_KEY = "relevant"
_LAST_RANKING: _LastParsed[tuple[Retrieved, ...]] = _LastParsed()
_LAST_IDS: _LastParsed[list[str]] = _LastParsed()
_LAST_BATCH: _LastParsed[list[Parsed | None]] = _LastParsed()
_ID = operator.attrgetter("id")
_INT, _STR = frozenset({int}), frozenset({str})
_POSITIVE = (0.0).__lt__


def ranked_ids(output: Output) -> list[str]:
    """Ids of the ranked list, best first (shared by the metrics of one execution)."""
    memo = _LAST_IDS
    if memo.source is output and memo.value is not None:
        return memo.value
    value = list(map(_ID, ranked(output)))
    memo.source, memo.value = output, value
    return value


def ranked(output: Output) -> tuple[Retrieved, ...]:
    """The output's ranked retrieval list (duplicates keep their best rank)."""
    if output.retrieved is not None:
        return output.retrieved
    memo = _LAST_RANKING
    if memo.source is output and memo.value is not None:
        return memo.value
    value = _parse_ranking(output)
    memo.source, memo.value = output, value
    return value


def _parse_ranking(output: Output) -> tuple[Retrieved, ...]:
    text = output.text.strip()
    data = loads_json(
        text,
        lambda _: MetricError(
            "output has no 'retrieved' list and its text is not JSON; return {output, retrieved} "
            "from the system under test or a JSON list of ids"
        ),
    )
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
    """Relevance ``{id: gain}`` from ``metadata.relevant``, else from ``expected_output``.

    ``metadata.relevant`` lets one sample hold a reference answer in ``expected_output`` and
    the relevant document ids beside it (callers must not mutate the result).
    """
    memo = _LAST_GAINS
    raw: Any = sample.metadata.get(RELEVANT_KEY)
    where = f"metadata.{RELEVANT_KEY}"
    if raw is None:
        raw, where = sample.expected_output, "expected_output"
    if memo.source is raw and raw is not None and memo.value is not None:
        return memo.value
    value = _parse_gains(raw, where)
    memo.source, memo.value = raw, value
    return value


def _parse_gains(raw: Any, where: str = "expected_output") -> dict[str, float]:
    if type(raw) is dict and {*map(type, raw.values())} == _INT and {*map(type, raw)} == _STR:
        # the common shape ({id: integer level}, from YAML or JSON), read without the checks
        # below: integers are finite and their float() is what the general path computes
        try:
            levels: dict[str, float] = dict(zip(raw, map(float, raw.values())))
        except OverflowError:
            raise MetricError(f"{where} gains must be finite numbers") from None
        if not any(gain > 0 for gain in levels.values()):
            raise MetricError(f"{where} must name at least one relevant id (gain > 0)")
        return levels
    if isinstance(raw, str):
        raw = loads_json(
            raw,
            lambda _: MetricError(
                f"{where} string is not JSON; give a list of relevant ids or an id -> gain map"
            ),
        )
    result: dict[str, float] = {}
    if isinstance(raw, list):
        for position, item in enumerate(raw):
            if isinstance(item, int) and not isinstance(item, bool):
                item = str(item) if abs(item) < 10**40 else ""
            if not isinstance(item, str) or not item:
                raise MetricError(f"{where}[{position}] must be a non-empty id string")
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
                or abs(value) > 1e300  # compared, never converted: 2**1100 stays total
                or not math.isfinite(value)
            ):
                raise MetricError(f"{where} gain for {key!r} must be a finite number")
            result[str(key)] = float(value)
    else:
        raise MetricError(f"{where} must list relevant ids or map id -> gain; got {type_name(raw)}")
    if not any(gain > 0 for gain in result.values()):
        raise MetricError(f"{where} must name at least one relevant id (gain > 0)")
    return result


def resolve_k(sample: Sample, option: int | None) -> int:
    """``metadata.k`` (int or digit string), else the metric option, else 5."""
    if "k" in sample.metadata and sample.metadata["k"] is not None:
        return positive_int_option(sample.metadata["k"], "metadata.k")
    return option if option is not None else DEFAULT_K


def _check_k(k: int | None) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise MetricConfigError("retrieval metric k must be a positive integer")


Parsed = tuple[dict[str, float], list[str]]


def _parsed_batch(samples: Sequence[Sample], outputs: Sequence[Output]) -> list[Parsed | None]:
    """(gains, ranked ids) per row, None where either cannot be read.

    Shared by the ranking metrics that score one batch: a one-entry memo per thread keyed on
    the identity of both lists (as the per-execution memos above).
    """
    memo = _LAST_BATCH
    source = memo.source
    cached = memo.value
    if (
        cached is not None
        and isinstance(source, tuple)
        and source[0] is samples
        and source[1] is outputs
    ):
        return cached
    rows: list[Parsed | None] = []
    for sample, output in zip(samples, outputs):
        try:
            rows.append((gains(sample), ranked_ids(output)))
        except MetricError:
            rows.append(None)
    memo.source, memo.value, memo.tops = (samples, outputs), rows, {}
    return rows


@dataclass(frozen=True)
class _Top:
    """The kernel rows of a batch: their k and the gains of their top-k ids, zero-padded."""

    rows: list[int]
    fallback: list[int]
    ks: list[int]
    gains: npt.NDArray[np.float64]
    parsed: list[Parsed]  # (gains, ranked ids) of each kernel row, aligned with ``rows``


def _top(samples: Sequence[Sample], outputs: Sequence[Output], option: int | None) -> _Top:
    """Gains at ranks 1..k per row (0 past k or past the list); rows that fail go to fallback.

    Memoised with the batch's parse, so hit, recall and nDCG at the same k share one table.
    """
    parsed = _parsed_batch(samples, outputs)
    tops = _LAST_BATCH.tops
    if option not in tops:
        tops[option] = _top_table(samples, parsed, option)
    return tops[option]


def _top_table(samples: Sequence[Sample], parsed: list[Parsed | None], option: int | None) -> _Top:
    import numpy as np

    rows: list[int] = []
    fallback: list[int] = []
    ks: list[int] = []
    kept: list[Parsed] = []
    for index, item in enumerate(parsed):
        try:
            k = resolve_k(samples[index], option)
        except MetricError:
            k = 0
        if item is None or k == 0:
            fallback.append(index)
            continue
        rows.append(index)
        ks.append(k)
        kept.append(item)
    width = max((min(k, len(item[1])) for item, k in zip(kept, ks)), default=0)
    table = []
    for (relevance, ids), k in zip(kept, ks):
        row = [relevance.get(i, 0.0) for i in ids[: min(k, width)]]
        table.append(row + [0.0] * (width - len(row)))
    gain = np.array(table, dtype=np.float64).reshape(len(rows), width)
    return _Top(rows, fallback, ks, gain, kept)


def _spread(size: int, rows: list[int], values: list[Any]) -> list[Any]:
    """A full-length details column from the kernel rows' values (None elsewhere)."""
    if len(rows) == size:
        return values
    column: list[Any] = [None] * size
    for index, value in zip(rows, values):
        column[index] = value
    return column


def _finish(
    metric: Any,
    samples: Sequence[Sample],
    outputs: Sequence[Output],
    top: tuple[list[int], list[int]],
    values: Any,
    details: Mapping[str, list[Any]],
) -> ScoreColumn:
    """Assemble a column: kernel rows' values and details, fallback rows through ``score``."""
    rows, fallback = top
    builder = ColumnBuilder(len(samples))
    builder.values[rows] = values
    for key, column in details.items():
        builder.put_column(key, _spread(len(samples), rows, column))
    score_rows(metric.score, samples, outputs, fallback, builder)
    return builder.build()


@dataclass(frozen=True)
class _RankingMetric:
    name: str
    k: int | None = None

    def __post_init__(self) -> None:
        _check_k(self.k)

    def _inputs(self, sample: Sample, output: Output) -> tuple[list[str], dict[str, float], int]:
        relevance = gains(sample)
        return ranked_ids(output), relevance, resolve_k(sample, self.k)


@dataclass(frozen=True)
class HitAtK(_RankingMetric):
    name: str = "retrieval-hit-at-k"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        ids, relevance, k = self._inputs(sample, output)
        hit = any(relevance.get(i, 0.0) > 0 for i in ids[:k])
        return MetricScore(1.0 if hit else 0.0, {"k": k, "hit": hit})

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        top = _top(samples, outputs, self.k)
        hit = (top.gains > 0).any(axis=1)
        hits = cast("list[Any]", hit.tolist())
        details = {"k": top.ks, "hit": hits}
        return _finish(self, samples, outputs, (top.rows, top.fallback), hit, details)


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

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        import numpy as np

        top = _top(samples, outputs, self.k)
        relevant = [sum(g > 0 for g in relevance.values()) for relevance, _ in top.parsed]
        found = (top.gains > 0).sum(axis=1)
        values = np.clip(found / np.array(relevant, dtype=np.int64).reshape(-1), 0.0, 1.0)
        details: dict[str, list[Any]] = {
            "k": top.ks,
            "relevant": relevant,
            "found": found.tolist(),
        }
        return _finish(self, samples, outputs, (top.rows, top.fallback), values, details)


@dataclass(frozen=True)
class MRR:
    name: str = "retrieval-mrr"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        relevance = gains(sample)
        for rank, item_id in enumerate(ranked_ids(output), start=1):
            if relevance.get(item_id, 0.0) > 0:
                return MetricScore(1.0 / rank, {"first_relevant_rank": rank})
        return MetricScore(0.0, {"first_relevant_rank": None})

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        rows: list[int] = []
        fallback: list[int] = []
        ranks: list[int | None] = []
        for index, item in enumerate(_parsed_batch(samples, outputs)):
            if item is None:
                fallback.append(index)
                continue
            relevance, ids = item
            rows.append(index)
            # the first rank whose gain is > 0, iterated in C (gains are floats)
            relevant = map(_POSITIVE, map(relevance.get, ids, itertools.repeat(0.0)))
            ranks.append(next(itertools.compress(itertools.count(1), relevant), None))
        values = [0.0 if rank is None else 1.0 / rank for rank in ranks]
        details = {"first_relevant_rank": ranks}
        return _finish(self, samples, outputs, (rows, fallback), values, details)


_LN2 = math.log(2.0)


def dcg(gain_list: list[float], *, exponential: bool) -> float:
    total = 0.0
    for position, gain in enumerate(gain_list):
        if gain > 0:
            value = math.expm1(gain * _LN2) if exponential else gain
            total += value / math.log2(position + 2)
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

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        """dcg as :func:`dcg` computes it: the same divisions, summed left to right (cumsum)."""
        import numpy as np

        top = _top(samples, outputs, self.k)
        ideal_rows = [
            sorted(relevance.values(), reverse=True)[:k]
            for (relevance, _), k in zip(top.parsed, top.ks)
        ]
        width = max(map(len, ideal_rows), default=0)
        ideal_gains = np.array([r + [0.0] * (width - len(r)) for r in ideal_rows], np.float64)
        try:
            actual = self._dcg_rows(top.gains)
            ideal = self._dcg_rows(ideal_gains.reshape(len(top.rows), width))
        except OverflowError:
            return _finish(self, samples, outputs, ([], top.fallback + top.rows), [], {})
        good = np.isfinite(ideal) & (ideal > 0)
        rows = [r for r, ok in zip(top.rows, good.tolist()) if ok]
        fallback = top.fallback + [r for r, ok in zip(top.rows, good.tolist()) if not ok]
        actual, ideal = actual[good], ideal[good]
        values = np.clip(actual / ideal, 0.0, 1.0)
        ks = [k for k, ok in zip(top.ks, good.tolist()) if ok]
        details = {"k": ks, "dcg": actual.tolist(), "idcg": ideal.tolist()}
        return _finish(self, samples, outputs, (rows, sorted(fallback)), values, details)

    def _dcg_rows(self, gain: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Per-row DCG of a zero-padded gain matrix, bit for bit as :func:`dcg`."""
        import numpy as np

        if gain.shape[1] == 0:
            return np.zeros(gain.shape[0])
        positive = gain > 0
        if self.gain == "exponential":
            gain = gain.copy()
            gain[positive] = [math.expm1(g * _LN2) for g in gain[positive].tolist()]
        discount = np.array([math.log2(p + 2) for p in range(gain.shape[1])])
        terms = np.where(positive, gain / discount, 0.0)
        return np.cumsum(terms, axis=1)[:, -1]


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
        _check_k(self.k)

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
        if items and not any(item.text for item in items):
            raise MetricError(
                "retrieved entries carry no text; answer-containment-at-k needs {id, text} entries"
            )
        for rank, item in enumerate(items, start=1):
            if item.text and span in _normalise(item.text, self.case_sensitive):
                return MetricScore(1.0, {"k": k, "matched_rank": rank})
        return MetricScore(0.0, {"k": k, "matched_rank": None})
