"""The failing rows of a run: what failed or errored, with the texts a person needs to fix it.

Collected as results arrive (so a store-backed run holds only its failures, not every row),
truncated to a text limit, and emptied of every text with ``redact``. A row *failed* a metric
when it scored below the metric's threshold, and *errored* when it could not be scored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.data.results import (
    DEFAULT_TEXT_LIMIT,
    SUT_STAGE,
    ExecutionResult,
    Thresholds,
    passes,
    threshold_for,
)
from assay.data.trajectory import parse_trajectory
from assay.errors import AssayError
from assay.report.model import FailingRow, Report, Row, trusted
from assay.report.reasons import failing_reason

LISTING_CAP = 1000
REDACTED = "(redacted)"
_INPUT_KEYS = ("question", "input", "query", "prompt", "message", "text")
_NO_TEXTS: Mapping[str, Any] = {"input": None, "expected": None, "actual": None, "tools": None}


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis that says how much was cut."""
    if limit <= 0 or len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit} chars)"


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def input_text(raw: Mapping[str, Any]) -> str:
    """A sample's input as a person reads it: the question itself when there is one."""
    for key in _INPUT_KEYS:
        if isinstance(raw.get(key), str):
            return str(raw[key])
    return _as_text(dict(raw))


def redacted_report(report: Report) -> Report:
    """``report`` marked ``redacted``, its failure messages and rows without their texts."""
    failures = [f.model_copy(update={"message": REDACTED}) for f in report.failures]
    rows = [redacted_row(row) for row in report.rows]
    return report.model_copy(update={"redacted": True, "failures": failures, "rows": rows})


def redacted_row(row: Row) -> Row:
    """``row`` for a ``--redact`` report: error messages and string details become REDACTED.

    Errors quote the system's exceptions and details such as ``judge_reason`` quote answers;
    every report renders rows, so each row source passes through here (numbers, bools stay).
    """
    scores = {
        name: score.model_copy(update={"details": _redacted(score.details)})
        for name, score in row.scores.items()
    }
    errors = dict.fromkeys(row.errors, REDACTED)
    return row.model_copy(update={"scores": scores, "errors": errors})


def _redacted(value: object) -> Any:
    """``value`` with every string in it (keys aside) replaced by REDACTED."""
    if isinstance(value, str):
        return REDACTED
    if isinstance(value, Mapping):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(item) for item in value]
    return value


def _tools(output: Output | None) -> list[str] | None:
    """The tool names of a recorded trajectory, in call order; None when it cannot be read."""
    if output is None or output.trajectory is None:
        return None
    try:
        return parse_trajectory(output.trajectory).tool_names
    except AssayError:
        return None


def _bare(score: float | None, threshold: float | None) -> str:
    """A redacted failed row's reason: the numbers only (a reason may quote the texts)."""
    return f"scored {score or 0.0:.4f}, below the threshold {threshold}"


class FailingRowCollector:
    """Builds :class:`FailingRow` entries from finished executions."""

    def __init__(
        self,
        thresholds: Thresholds | None = None,
        *,
        text_limit: int = DEFAULT_TEXT_LIMIT,
        redact: bool = False,
        cap: int = LISTING_CAP,
    ) -> None:
        self.thresholds = dict(thresholds or {})
        self.text_limit = text_limit
        self.redact = redact
        self.cap = cap
        self._kept: list[tuple[int, int, FailingRow]] = []
        self._seen = 0
        self._bound: tuple[int, int] | None = None  # key of the last listed row, once full
        self._in_order = True  # every row kept so far arrived in dataset order
        self.position = 0  # the dataset position of the execution being added

    def add(self, result: ExecutionResult, sample: Sample, output: Output | None) -> None:
        """Record every failed or errored metric of one execution."""
        self._add(result, sample.tags, (sample, output))

    def lists(self, position: int, repetition: int) -> bool:
        """Whether an execution at ``position`` could still be listed (else only counted)."""
        return self._bound is None or (position, repetition) < self._bound

    def count(self, entries: int) -> None:
        """Count failing rows that will not be listed (see :meth:`lists`)."""
        self._seen += entries

    def add_stored(self, result: ExecutionResult, tags: list[str]) -> None:
        """:meth:`add` for an execution read back from the run store, which keeps no dataset:
        the rows say what failed and why, without the texts (``input``, ``expected``...)."""
        self._add(result, tags, None)

    def _add(
        self, result: ExecutionResult, tags: list[str], texts: tuple[Sample, Output | None] | None
    ) -> None:
        row_texts = _RowTexts(texts, self.text_limit, redact=self.redact)
        if result.sut_error is not None:
            self._append(result, tags, row_texts, SUT_STAGE, "errored", None, result.sut_error)
        for name, outcome in result.scores.items():
            if outcome.error is not None or outcome.value is None:
                error = outcome.error or "metric produced no score"
                self._append(result, tags, row_texts, name, "errored", None, error)
            elif not passes(outcome.value, threshold := threshold_for(self.thresholds, name)):
                sample, output = texts if texts is not None else (None, None)
                expected = None if sample is None else sample.expected_output
                reason = failing_reason(
                    name, outcome.value, threshold, outcome.details, expected, output
                )
                self._append(result, tags, row_texts, name, "failed", outcome.value, reason)

    def _append(
        self,
        result: ExecutionResult,
        tags: list[str],
        texts: _RowTexts,
        metric: str,
        status: str,
        score: float | None,
        reason: str,
    ) -> None:
        """Keep one row; an errored row's reason is its error message (redacted with texts)."""
        self._seen += 1
        if self._bound is not None and (self.position, result.repetition) >= self._bound:
            return  # sorts after every listed row: counted, never listed, so not built
        threshold = None if metric == SUT_STAGE else threshold_for(self.thresholds, metric)
        if self.redact:
            reason = REDACTED if status == "errored" else _bare(score, threshold)
        self._keep(
            trusted(
                FailingRow,
                {
                    "sample_id": result.sample_id,
                    "repetition": result.repetition,
                    "tags": list(tags),
                    "metric": metric,
                    "status": status,
                    "score": score,
                    "threshold": threshold,
                    "reason": reason,
                    **texts.of(metric),
                },
            )
        )

    def _keep(self, row: FailingRow) -> None:
        """Keep the ``cap`` rows first in dataset order, whatever order results arrive in.

        Results that arrive in dataset order (a sequential run) fix the bound at the cap-th
        row, so no later row is built at all.
        """
        key = (self.position, row.repetition)
        self._in_order = self._in_order and (not self._kept or self._kept[-1][:2] <= key)
        self._kept.append((*key, row))
        if len(self._kept) >= 2 * self.cap or (self._in_order and len(self._kept) >= self.cap):
            self._trim()

    def _trim(self) -> None:
        self._kept.sort(key=lambda item: (item[0], item[1]))
        del self._kept[self.cap :]
        if self._kept and len(self._kept) >= self.cap:
            self._bound = self._kept[-1][:2]

    @property
    def rows(self) -> list[FailingRow]:
        """The listed rows, in dataset order (stable within one execution)."""
        self._trim()
        return [row for _, _, row in self._kept]

    @property
    def omitted(self) -> int:
        """Failing rows beyond the cap: counted, not listed."""
        return max(0, self._seen - self.cap)


class _RowTexts:
    """The texts of one execution's failing rows, built once however many of its metrics fail;
    a retrieval metric's actual is the ranking it scored."""

    def __init__(
        self, texts: tuple[Sample, Output | None] | None, limit: int, *, redact: bool
    ) -> None:
        self._texts = None if redact else texts
        self._limit = limit
        self._plain: Mapping[str, Any] | None = None
        self._ranked: Mapping[str, Any] | None = None

    def of(self, metric: str) -> Mapping[str, Any]:
        if self._texts is None:
            return _NO_TEXTS
        sample, output = self._texts
        if self._plain is None:
            expected = sample.expected_output
            self._plain = {
                "input": truncate(input_text(sample.input), self._limit),
                "expected": None if expected is None else truncate(_as_text(expected), self._limit),
                "actual": None if output is None else truncate(output.text, self._limit),
                "tools": _tools(output),
            }
        if output is None or output.retrieved is None or not metric.startswith("retrieval-"):
            return self._plain
        if self._ranked is None:
            ranking = truncate(actual_text(output, metric), self._limit)
            self._ranked = {**self._plain, "actual": ranking}
        return self._ranked


def actual_text(output: Output, metric: str) -> str:
    """What a failing row shows as the answer ``metric`` scored: a retrieval metric's is the
    ranking (``ranking: 1. doc, 2. doc ...``), any other's the answer's text."""
    if output.retrieved is None or not metric.startswith("retrieval-"):
        return output.text
    ranks = ", ".join(f"{rank}. {doc}" for rank, doc in enumerate(output.retrieved.ids, 1))
    return "ranking: " + ranks
