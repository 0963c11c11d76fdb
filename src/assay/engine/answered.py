"""Answers that are in on the asynchronous path, and the batch scoring that finishes them.

When a system under test answers over the network or from a Python callable, the metrics that
await (provider calls, an async ``score``) run per execution as soon as its answer arrives.
The others are deterministic: they wait until the runner collects the executions that finished
together and score those in one :func:`~assay.engine.scoring.score_column` call per metric, so a
metric's ``score_batch`` serves every kind of system under test, not only saved outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from assay.data.dataset import Sample
from assay.data.executions import Execution
from assay.data.outputs import Output
from assay.data.results import ExecutionResult, ScoreResult
from assay.engine.scoring import is_async_metric, score_column
from assay.metrics.base import Metric


@dataclass(frozen=True)
class Answered:
    """An execution's answer (or the system's failure, as text) and its scores so far."""

    execution: Execution
    answer: Output | str
    scores: dict[str, ScoreResult]

    def result(self, names: Sequence[str]) -> ExecutionResult:
        """The execution's result, its scores in ``names`` order (the metrics that apply)."""
        sample, repetition = self.execution.sample, self.execution.repetition
        if isinstance(self.answer, str):
            return ExecutionResult(sample.id, repetition, {}, sut_error=self.answer)
        return ExecutionResult(sample.id, repetition, {name: self.scores[name] for name in names})


def score_answered(
    metrics: Sequence[Metric],
    answered: Sequence[Answered],
    *,
    applies: Callable[[Metric, Sample], bool],
) -> None:
    """Add every synchronous metric's results to the answered executions it applies to.

    Executions whose system failed get none; asynchronous metrics are left alone (they were
    scored when the answer arrived).
    """
    ready = [a for a in answered if isinstance(a.answer, Output)]
    for metric in metrics:
        if is_async_metric(metric):
            continue
        picked = [a for a in ready if applies(metric, a.execution.sample)]
        if not picked:
            continue
        samples = [a.execution.sample for a in picked]
        scored = score_column(metric, samples, [cast(Output, a.answer) for a in picked])
        for item, result in zip(picked, scored):
            item.scores[metric.name] = result
