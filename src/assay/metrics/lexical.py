"""Lexical metrics: exact-match, contains, regex and rouge-l. Offline, exact, free."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import count
from typing import TYPE_CHECKING

import regex
from rapidfuzz.distance import LCSseq

from assay.errors import MetricConfigError, MetricError
from assay.metrics.backtrack_pool import RUN_BUDGET_S, BacktrackBudget
from assay.metrics.base import (
    MetricScore,
    check_bool_option,
    clamp01,
    expected_string,
    unit_score,
)
from assay.metrics.batch import ColumnBuilder, ScoreColumn, score_rows
from assay.metrics.tokens import token_keys, token_keys_all, tokenize

__all__ = [
    "Contains",
    "ExactMatch",
    "Regex",
    "RougeL",
    "parse_delimited",
    "rouge_l_counts",
    "tokenize",
]

if TYPE_CHECKING:
    from assay.data.dataset import Sample
    from assay.data.outputs import Output
    from assay.metrics.pattern import Pattern


@dataclass(frozen=True)
class ExactMatch:
    """Strict equality: no trimming, no case folding."""

    name: str = "exact-match"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        expected = expected_string(sample, self.name)
        match = output.text == expected
        return MetricScore(1.0 if match else 0.0, {"match": match})

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        matches = [
            o.text == s.expected_output if type(s.expected_output) is str else None
            for s, o in zip(samples, outputs)
        ]
        return _match_column(self, samples, outputs, matches)


@dataclass(frozen=True)
class Contains:
    """Substring membership; never true for an empty expected string."""

    name: str = "contains"
    case_sensitive: bool = True

    def __post_init__(self) -> None:
        check_bool_option(self.case_sensitive, self.name, "case_sensitive")

    def score(self, sample: Sample, output: Output) -> MetricScore:
        expected = expected_string(sample, self.name, non_empty=True)
        haystack = output.text
        if not self.case_sensitive:
            expected, haystack = expected.casefold(), haystack.casefold()
        match = expected in haystack
        return MetricScore(1.0 if match else 0.0, {"match": match})

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        if not self.case_sensitive:
            return _match_column(self, samples, outputs, [None] * len(samples))
        matches = [
            s.expected_output in o.text
            if type(s.expected_output) is str and s.expected_output.strip()
            else None
            for s, o in zip(samples, outputs)
        ]
        return _match_column(self, samples, outputs, matches)


def _match_column(
    metric: ExactMatch | Contains,
    samples: Sequence[Sample],
    outputs: Sequence[Output],
    matches: list[bool | None],
) -> ScoreColumn:
    """1.0/0.0 columns from per-row matches; rows marked None go through ``score()``."""
    builder = ColumnBuilder(len(samples))
    fallback = [i for i, match in enumerate(matches) if match is None]
    builder.values[:] = matches if not fallback else [bool(m) for m in matches]
    builder.put_column("match", matches)
    score_rows(metric.score, samples, outputs, fallback, builder)
    return builder.build()


_BRACKETS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_FLAGS = {  # plain ints: or-ing RegexFlag members goes through enum's Python code
    "i": int(regex.IGNORECASE),
    "m": int(regex.MULTILINE),
    "s": int(regex.DOTALL),
    "x": int(regex.VERBOSE),
    "u": int(regex.UNICODE),
}


def parse_delimited(pattern: str) -> tuple[str, int, bool]:
    """Split a PHP-style ``/body/flags`` pattern into (body, flags, anchored)."""
    if len(pattern) < 2:
        raise MetricError("regex pattern must be delimited, like /ORD-\\d{6}/i")
    opener = pattern[0]
    if opener.isalnum() or opener.isspace() or opener == "\\":
        raise MetricError(f"regex pattern must start with a delimiter such as '/'; got {opener!r}")
    closer = _BRACKETS.get(opener, opener)
    end = pattern.rfind(closer)
    if end <= 0:
        raise MetricError(f"regex pattern has no closing delimiter {closer!r}")
    body, modifiers = pattern[1:end], pattern[end + 1 :]
    flags, anchored = 0, False
    for modifier in modifiers:
        if modifier in _FLAGS:
            flags |= _FLAGS[modifier]
        elif modifier == "A":
            anchored = True
        elif modifier == "D":
            body = _dollar_end_only(body)
        elif modifier == "U":
            raise MetricError(
                "regex modifier 'U' (ungreedy) is not supported; write lazy quantifiers (*?, +?) "
                "instead"
            )
        elif modifier.isspace():
            continue
        else:
            raise MetricError(f"unknown regex modifier {modifier!r}")
    return body, flags, anchored


def _dollar_end_only(body: str) -> str:
    # PCRE's D: a trailing unescaped '$' matches only at the very end (Python's \Z).
    if body.endswith("$") and not body.endswith("\\$"):
        return body[:-1] + r"\Z"
    return body


@dataclass(frozen=True)
class Regex:
    """PCRE-style delimited pattern, search semantics: RE2 when it can take the pattern, else the
    backtracking engine in a worker process with hard time and memory limits."""

    name: str = "regex"
    timeout_s: float = 1.0
    run_budget_s: float = RUN_BUDGET_S
    # The run's bound on the backtracking engine: a metric object lives for one run.
    budget: BacktrackBudget = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not (0 < self.timeout_s <= 60):
            raise MetricConfigError("regex timeout_s must be in (0, 60] seconds")
        if not (0 < self.run_budget_s <= 86_400):
            raise MetricConfigError("regex run_budget_s must be in (0, 86400] seconds")
        object.__setattr__(self, "budget", BacktrackBudget(seconds=self.run_budget_s))

    def run_notes(self) -> list[str]:
        """What the report says of this run's backtracking (nothing when none ran)."""
        note = self.budget.note()
        return [note] if note else []

    def score(self, sample: Sample, output: Output) -> MetricScore:
        found, engine = _compiled(expected_string(sample, self.name)).find(
            output.text, self.timeout_s, self.budget
        )
        return unit_score(1.0 if found else 0.0, {"match": found, "engine": engine})

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        """As ``score`` row by row: the rows grouped by pattern, one parse and compile and one
        :meth:`~assay.metrics.pattern.Pattern.find_each` per distinct pattern in the batch."""
        size = len(samples)
        builder = ColumnBuilder(size)
        groups: dict[str, list[int]] = {}
        for index, sample in enumerate(samples):
            expected = sample.expected_output
            if type(expected) is str:
                groups.setdefault(expected, []).append(index)
            else:
                score_rows(self.score, samples, outputs, [index], builder)  # its error
        values = [math.nan] * size
        matches: list[bool | None] = [None] * size
        engines: list[str | None] = [None] * size
        for delimited, rows in groups.items():
            try:
                pattern = _compiled(delimited)
            except MetricError as exc:
                for index in rows:
                    builder.fail(index, str(exc))
                continue
            texts = [outputs[index].text for index in rows]
            for index, found in zip(rows, pattern.find_each(texts, self.timeout_s, self.budget)):
                if isinstance(found, str):
                    builder.fail(index, found)
                else:
                    matches[index], engines[index] = found
                    values[index] = 1.0 if found[0] else 0.0
        builder.values[:] = values
        builder.errors = dict(sorted(builder.errors.items()))  # in row order, as row by row
        builder.put_column("match", matches)
        builder.put_column("engine", engines)
        return builder.build()


@lru_cache(maxsize=4096)  # a memo of a pure function: one parse and compile per distinct pattern
def _compiled(delimited: str) -> Pattern:
    from assay.metrics.pattern import compile_pattern

    return compile_pattern(*parse_delimited(delimited))


def rouge_l_counts(reference: list[str], candidate: list[str]) -> int:
    """Length of the longest common subsequence of two token lists."""
    return int(LCSseq.similarity(reference, candidate))


_similarity = LCSseq.similarity


@dataclass(frozen=True)
class RougeL:
    """ROUGE-L over Unicode-aware tokens; LCS computed by rapidfuzz."""

    name: str = "rouge-l"
    beta: float = 1.0
    max_tokens: int = 1024

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise MetricConfigError("rouge-l max_tokens must be at least 1")
        if not self.beta > 0:
            raise MetricConfigError("rouge-l beta must be positive")

    def _check_length(self, count: int, field: str) -> None:
        if count > self.max_tokens:
            raise MetricError(
                f"{field} has {count} tokens; rouge-l supports at most {self.max_tokens} "
                "(raise max_tokens to allow longer texts)"
            )

    def score(self, sample: Sample, output: Output) -> MetricScore:
        reference = sample.expected_output
        if type(reference) is not str:
            reference = expected_string(sample, self.name)
        ref, cand = token_keys(reference, output.text)
        n_ref, n_cand, limit = len(ref), len(cand), self.max_tokens
        if not (0 < n_ref <= limit and 0 < n_cand <= limit):
            return self._edge_score(n_ref, n_cand)
        lcs = _similarity(ref, cand)
        precision, recall = lcs / n_cand, lcs / n_ref
        details = {"lcs_tokens": lcs, "precision": precision, "recall": recall}
        value = 0.0
        if lcs:
            beta2 = self.beta * self.beta
            value = (1 + beta2) * precision * recall / (recall + beta2 * precision)
            if not 0.0 <= value <= 1.0:
                return MetricScore(clamp01(value), details)  # rounded past 1.0; NaN: an error
        return unit_score(value, details)

    def _edge_score(self, n_ref: int, n_cand: int) -> MetricScore:
        """A side too long (an error), or an empty one: both empty score 1.0, one empty 0.0."""
        self._check_length(n_ref, "expected_output")
        self._check_length(n_cand, "output")
        if not n_ref and not n_cand:
            return MetricScore(1.0, {"lcs_tokens": 0, "precision": 1.0, "recall": 1.0})
        return MetricScore(0.0, {"lcs_tokens": 0, "precision": 0.0, "recall": 0.0})

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        """As ``score`` row by row, without a score object per row; the texts are tokenized by
        :func:`token_keys_all`. Rows it cannot score (a reference that is not a string, an empty
        or too long side) go through ``score``."""
        size = len(samples)
        references = [sample.expected_output for sample in samples]
        references = [text if type(text) is str else "" for text in references]
        builder = ColumnBuilder(size)
        lcs_col: list[int | None] = [None] * size
        precision_col: list[float | None] = [None] * size
        recall_col: list[float | None] = [None] * size
        fallback: list[int] = []
        values: list[float] = [0.0] * size
        beta2 = self.beta * self.beta
        scale = 1 + beta2
        limit = self.max_tokens
        similarity = _similarity
        rows = zip(
            count(),
            token_keys_all(references),
            token_keys_all([output.text for output in outputs]),
        )
        for index, ref, cand in rows:
            n_ref, n_cand = len(ref), len(cand)
            if not (0 < n_ref <= limit and 0 < n_cand <= limit):
                fallback.append(index)
                continue
            lcs = similarity(ref, cand)
            precision, recall = lcs / n_cand, lcs / n_ref
            if lcs:
                values[index] = clamp01(scale * precision * recall / (recall + beta2 * precision))
            lcs_col[index], precision_col[index], recall_col[index] = lcs, precision, recall
        builder.values[:] = values
        builder.put_column("lcs_tokens", lcs_col)
        builder.put_column("precision", precision_col)
        builder.put_column("recall", recall_col)
        score_rows(self.score, samples, outputs, fallback, builder)
        return builder.build()
