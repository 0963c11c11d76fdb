"""The pass rule, in one place.

A metric's score *passes* when it is at least the metric's ``threshold`` (a per-metric option,
default 0.5). A row *failed* a metric when it was scored below that threshold, and *errored*
when it could not be scored at all; the two words are never mixed. Every aggregate, renderer,
gate rule and JUnit case asks :func:`passes`.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from assay.errors import MetricConfigError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

DEFAULT_THRESHOLD = 0.5
SUT_STAGE = "system-under-test"
NO_SCORE = "metric produced no score"
DEFAULT_TEXT_LIMIT = 200  # characters a failing row keeps of each text (``--text-limit``)

Thresholds = Mapping[str, float]


@overload
def passes(value: float, threshold: float = DEFAULT_THRESHOLD) -> bool: ...
@overload
def passes(
    value: npt.NDArray[np.floating[Any]], threshold: float = DEFAULT_THRESHOLD
) -> npt.NDArray[np.bool_]: ...


def passes(
    value: float | npt.NDArray[np.floating[Any]], threshold: float = DEFAULT_THRESHOLD
) -> bool | npt.NDArray[np.bool_]:
    """Whether a score passes: ``value >= threshold`` (element-wise for an array of scores)."""
    return value >= threshold


def threshold_for(thresholds: Thresholds | None, metric: str) -> float:
    """The threshold of ``metric`` (the default when it sets none)."""
    if not thresholds:
        return DEFAULT_THRESHOLD
    return thresholds.get(metric, DEFAULT_THRESHOLD)


def parse_threshold(value: object, metric: str) -> float:
    """A metric's ``threshold:`` option: a number in [0, 1]."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value.strip())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MetricConfigError(
            f"metric '{metric}': 'threshold' must be a number in [0, 1]; got {value!r}"
        )
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise MetricConfigError(f"metric '{metric}': 'threshold' must be in [0, 1]; got {number}")
    return number


@dataclass(slots=True)
class ScoreResult:
    """One metric's outcome on one execution: a value, or an error message."""

    value: float | None
    details: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    usage: tuple[Mapping[str, Any], ...] = ()


@dataclass(slots=True)
class ExecutionResult:
    """Everything one (sample, repetition) produced; the unit the store commits."""

    sample_id: str
    repetition: int
    scores: dict[str, ScoreResult]
    sut_error: str | None = None
    sut_usage: tuple[Mapping[str, Any], ...] = ()

    def passed(self, thresholds: Thresholds | None = None) -> bool:
        """No error and every metric at or above its threshold (the one pass rule)."""
        return self.sut_error is None and all(
            s.error is None
            and s.value is not None
            and passes(s.value, threshold_for(thresholds, n))
            for n, s in self.scores.items()
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "sut_error": self.sut_error,
            "sut_usage": [dict(u) for u in self.sut_usage],
            "scores": {
                name: {
                    "value": s.value,
                    "details": dict(s.details),
                    "error": s.error,
                    "usage": [dict(u) for u in s.usage],
                }
                for name, s in self.scores.items()
            },
        }

    @property
    def has_usage(self) -> bool:
        """Whether the system under test or any metric reported provider usage."""
        return bool(self.sut_usage) or any(s.usage for s in self.scores.values())

    @classmethod
    def from_json(cls, sample_id: str, repetition: int, data: Mapping[str, Any]) -> ExecutionResult:
        """Back from :meth:`to_json`, or from a stored report row (:func:`row_document`)."""
        if "row_hash" in data:
            return cls._from_row(sample_id, repetition, data)
        return cls(
            sample_id,
            repetition,
            {
                name: ScoreResult(
                    _stored_score(s["value"]),
                    _stored_details(s.get("details")),
                    s.get("error"),
                    tuple(s.get("usage") or ()),
                )
                for name, s in data.get("scores", {}).items()
            },
            data.get("sut_error"),
            tuple(data.get("sut_usage") or ()),
        )

    @classmethod
    def _from_row(cls, sample_id: str, repetition: int, row: Mapping[str, Any]) -> ExecutionResult:
        """A result stored as its report row (it had no usage to keep): scores, then errors."""
        errors = dict(row.get("errors") or {})
        sut_error = errors.pop(SUT_STAGE, None)
        scores = {
            name: ScoreResult(_stored_score(s["score"]), _stored_details(s.get("details")))
            for name, s in (row.get("scores") or {}).items()
        }
        for name, message in errors.items():
            scores[name] = ScoreResult(None, error=message)
        return cls(sample_id, repetition, scores, sut_error)


def _stored_score(value: object) -> float | None:
    """A stored score read back: None, or a number in [0, 1] as MetricScore made it; a store
    edited by hand may hold anything (ValueError, which the store's reader names)."""
    if type(value) is float and 0.0 <= value <= 1.0:
        return value  # what assay stores (NaN fails the comparison)
    if value is None:
        return None
    if type(value) is int and 0 <= value <= 1:
        return float(value)
    raise ValueError(f"a score of {str(value)[:40]!r} is not a number in [0, 1]")


def _stored_details(value: object) -> Mapping[str, Any]:
    """A stored score's details read back: an object (or nothing)."""
    if type(value) is dict:
        return value
    if value is None:
        return {}
    raise ValueError(f"a score's details are a JSON {type(value).__name__}, not an object")


def row_document(
    result: ExecutionResult,
    tags: list[str],
    row_hash: str,
    metric_names: Sequence[str],
    thresholds: Thresholds | None = None,
) -> dict[str, Any]:
    """The report row of one execution as plain JSON values, keys in the report's order.

    The one definition of a row (``assay.report.model.Row`` validates the same keys): its scores
    and errors, no input, expected or metadata. A score is listed under ``scores`` with whether
    it passed its metric's threshold; a metric that could not score is listed under ``errors``.
    """
    limits = [(name, threshold_for(thresholds, name)) for name in metric_names]
    return _row(result, tags, row_hash, limits)


def row_documents(
    results: Sequence[ExecutionResult],
    tags: Sequence[list[str]],
    row_hashes: Sequence[str],
    metric_names: Sequence[str],
    thresholds: Thresholds | None = None,
) -> list[dict[str, Any]]:
    """:func:`row_document` of each result, with its tags and row hash (thresholds looked up
    once, not per row)."""
    limits = [(name, threshold_for(thresholds, name)) for name in metric_names]
    return [_row(r, labels, h, limits) for r, labels, h in zip(results, tags, row_hashes)]


ScoredColumn = tuple[str, float, Sequence[float], Sequence[dict[str, Any]]]
"""One metric's part of a clean chunk: its name, threshold, values and details, a row each."""


def scored_rows(
    ids: Sequence[str],
    repetitions: Sequence[int],
    tags: Sequence[list[str]],
    row_hashes: Sequence[str],
    columns: Sequence[ScoredColumn],
) -> list[dict[str, Any]]:
    """The rows :func:`row_document` gives for executions that every metric scored, built
    from each metric's name, threshold, values and details (one entry per row, in the
    metrics' order) without a result object per row."""
    entries = []
    verdicts = []
    for _name, threshold, values, details in columns:
        passed = [passes(value, threshold) for value in values]
        verdicts.append(passed)
        entries.append(
            [{"score": v, "passed": p, "details": d} for v, p, d in zip(values, passed, details)]
        )
    names = [column[0] for column in columns]
    all_pass = map(all, zip(*verdicts)) if verdicts else itertools.repeat(True)
    return [
        {
            "id": sample_id,
            "row_hash": row_hash,
            "repetition": repetition,
            "tags": labels,
            "passed": passed,
            "scores": dict(zip(names, scores)),
            "errors": {},
        }
        for sample_id, row_hash, repetition, labels, passed, scores in zip(
            ids,
            row_hashes,
            repetitions,
            tags,
            all_pass,
            zip(*entries) if entries else itertools.repeat(()),
        )
    ]


def _row(
    result: ExecutionResult, tags: list[str], row_hash: str, limits: list[tuple[str, float]]
) -> dict[str, Any]:
    """See :func:`row_document`; ``limits`` is each metric's name and threshold, in order."""
    errors: dict[str, str] = {}
    if result.sut_error is not None:
        errors[SUT_STAGE] = result.sut_error
    scores: dict[str, dict[str, Any]] = {}
    all_pass = True
    got = result.scores
    for name, threshold in limits:
        outcome = got.get(name)
        if outcome is None:
            continue
        value = outcome.value
        if outcome.error is not None or value is None:
            errors[name] = outcome.error or NO_SCORE
            continue
        passed = passes(value, threshold)
        all_pass = all_pass and passed
        details = outcome.details
        scores[name] = {
            "score": value,
            "passed": passed,
            "details": details if type(details) is dict else dict(details),
        }
    return {
        "id": result.sample_id,
        "row_hash": row_hash,
        "repetition": result.repetition,
        "tags": tags,
        "passed": not errors and all_pass,
        "scores": scores,
        "errors": errors,
    }
