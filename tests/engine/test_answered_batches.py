"""Any system under test: once answers are in, synchronous metrics score them as a batch.

The answers that finish together go through each metric's ``score_batch`` (one call per metric
per batch), and every execution's result equals what the metric's own ``score`` gives for it:
scores, errors and details, in the run's metric order, with tag scopes and system failures.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.data.dataset import Sample
from assay.data.executions import plan
from assay.data.outputs import Output
from assay.data.results import ExecutionResult
from assay.engine.runner import Runner
from assay.engine.sut import PythonTarget
from assay.errors import SystemUnderTestError
from assay.metrics.base import MetricScore
from assay.metrics.batch import ScoreColumn
from assay.metrics.registry import resolve
from metric_wrappers import RowOnly


@dataclass
class CountingBatch:
    """Wraps a metric; counts the rows its score_batch is given, call by call."""

    inner: Any
    batches: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def score(self, sample: Sample, output: Output) -> MetricScore:
        return self.inner.score(sample, output)  # type: ignore[no-any-return]

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        self.batches.append(len(samples))
        return self.inner.score_batch(samples, outputs)  # type: ignore[no-any-return]


class Awaiting:
    """An async metric: it must keep its place in each result's metric order."""

    name = "awaiting"

    async def score(self, sample: Sample, output: Output) -> MetricScore:
        await asyncio.sleep(0)
        return MetricScore(0.5 if "3" in output.text else 1.0, {"length": len(output.text)})


async def answer(inputs: dict[str, Any]) -> str:
    number = int(inputs["n"])
    await asyncio.sleep((number % 7) / 2000)
    if number % 23 == 5:
        raise SystemUnderTestError("no answer")
    return f"alpha {number % 5} beta"


def samples(count: int) -> list[Sample]:
    return [
        Sample(
            id=f"s{i}",
            input={"n": i},
            expected_output=None if i % 31 == 0 else f"alpha {i % 4} beta",
            metadata={"tags": ["a"] if i % 2 else ["b"]},
        )
        for i in range(count)
    ]


def run(metrics: Sequence[Any], data: list[Sample]) -> list[ExecutionResult]:
    results: list[ExecutionResult] = []
    runner = Runner(
        metrics,
        PythonTarget(answer),
        on_result=lambda result, _output: results.append(result),
        scopes={"contains": frozenset({"a"})},
        sut_concurrency=16,
    )
    runner.run(plan(data, 2))
    return sorted(results, key=lambda r: (r.sample_id, r.repetition))


def test_a_python_system_is_scored_through_score_batch_with_score_s_results() -> None:
    data = samples(300)
    names = ["exact-match", "contains", "rouge-l", "regex"]
    batched = [CountingBatch(resolve(n)) for n in names]
    with_batches = run([batched[0], Awaiting(), *batched[1:]], data)
    by_row = run(
        [RowOnly(resolve(names[0])), Awaiting(), *map(RowOnly, map(resolve, names[1:]))], data
    )

    assert len(with_batches) == len(by_row) == 600
    for a, b in zip(with_batches, by_row):
        assert (a.sample_id, a.repetition, a.sut_error) == (b.sample_id, b.repetition, b.sut_error)
        assert list(a.scores) == list(b.scores)  # the same metrics, in the same order
        for name in a.scores:
            x, y = a.scores[name], b.scores[name]
            assert (x.value, x.error, dict(x.details)) == (y.value, y.error, dict(y.details))
    assert list(with_batches[1].scores) == ["exact-match", "awaiting", "rouge-l", "regex"]
    assert any(r.sut_error for r in with_batches)
    assert any(s.error for r in with_batches for s in r.scores.values())
    answered = sum(1 for r in with_batches if r.sut_error is None)
    assert sum(batched[0].batches) == answered  # every answered row went through score_batch
    scoped = sum(1 for r in with_batches if r.sut_error is None and "contains" in r.scores)
    assert sum(batched[1].batches) == scoped
    assert max(batched[0].batches) > 1  # answers that finished together were one batch
