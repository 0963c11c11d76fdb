"""The synchronous runner scores chunks through score_batch with exactly score()'s results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from assay.dataset import Sample
from assay.errors import MetricError
from assay.metrics.base import MetricScore
from assay.metrics.batch import ScoreColumn
from assay.metrics.registry import resolve
from assay.outputs import Output
from assay.results import ExecutionResult
from assay.runner import SCORE_CHUNK, Runner, plan, score_column, score_sync
from assay.sut import SavedOutputs


@dataclass(frozen=True)
class RowOnly:
    """Wraps a metric and hides its score_batch: the per-sample path, for comparison."""

    inner: Any

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def score(self, sample: Sample, output: Output) -> MetricScore:
        return self.inner.score(sample, output)  # type: ignore[no-any-return]


def run(metrics: Sequence[Any], samples: list[Sample], outputs: dict[str, Output], scopes: Any):
    results: list[ExecutionResult] = []
    runner = Runner(
        metrics,
        SavedOutputs(outputs, "o.json"),
        on_result=lambda result, _output: results.append(result),
        scopes=scopes,
    )
    runner.run(plan(samples, 2))
    return results


def test_batch_run_equals_row_by_row_run() -> None:
    count = SCORE_CHUNK + 37  # more than one chunk
    samples = [
        Sample(
            id=f"s{i}",
            input={},
            expected_output=None if i % 97 == 0 else f"alpha beta {i % 7}",
            metadata={"tags": ["a"] if i % 2 else ["b"]},
        )
        for i in range(count)
    ]
    outputs = {f"s{i}": Output(f"alpha {i % 5} beta") for i in range(count) if i % 50}
    names = ["exact-match", "contains", "rouge-l", {"name": "regex", "as": "re"}]
    metrics = [resolve(n) for n in names]
    scopes = {"contains": frozenset({"a"})}
    batched = run(metrics, samples, outputs, scopes)
    rows = run([RowOnly(m) for m in metrics], samples, outputs, scopes)
    assert [(r.sample_id, r.repetition) for r in batched] == [
        (r.sample_id, r.repetition) for r in rows
    ]
    for a, b in zip(batched, rows):
        assert a.sut_error == b.sut_error
        assert a.scores.keys() == b.scores.keys()
        for name in a.scores:
            x, y = a.scores[name], b.scores[name]
            assert (x.value, x.error, dict(x.details)) == (y.value, y.error, dict(y.details))
    assert any(r.sut_error for r in batched)
    assert any(s.error for r in batched for s in r.scores.values())


class Broken:
    name = "broken"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        return MetricScore(0.25, {"row": True})

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        raise ZeroDivisionError("kernel bug")


class OutOfRange:
    name = "out-of-range"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        raise MetricError("never called")

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        return ScoreColumn(np.array([1.5, float("nan"), 0.5]), {2: "cannot"})


@pytest.mark.parametrize("count", [1, 3])
def test_a_broken_kernel_falls_back_to_score(count: int) -> None:
    samples = [Sample(id=str(i), input={}, expected_output="x") for i in range(count)]
    outputs = [Output("x")] * count
    assert score_column(Broken(), samples, outputs) == [
        score_sync(Broken(), s, o) for s, o in zip(samples, outputs)
    ]


def test_values_outside_the_range_are_errors_as_in_metric_score() -> None:
    samples = [Sample(id=str(i), input={}, expected_output="x") for i in range(3)]
    results = score_column(OutOfRange(), samples, [Output("x")] * 3)
    assert [r.value for r in results] == [None, None, None]
    assert results[0].error == "metric score must be in [0.0, 1.0]; got 1.5"
    assert results[1].error == "metric score must be in [0.0, 1.0]; got nan"
    assert results[2].error == "cannot"
