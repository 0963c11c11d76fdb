"""The synchronous runner scores chunks through score_batch with exactly score()'s results."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from assay.data.dataset import Sample
from assay.data.executions import plan
from assay.data.outputs import Output
from assay.data.results import ExecutionResult
from assay.engine.runner import SCORE_CHUNK, Runner
from assay.engine.scoring import score_chunk, score_column, score_sync
from assay.engine.sut import SavedOutputs
from assay.errors import MetricError
from assay.metrics.base import MetricScore
from assay.metrics.batch import ScoreColumn
from assay.metrics.registry import resolve
from metric_wrappers import RowOnly


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


def _mixed_run(count: int, tmp_path: Any, *, missing: bool) -> tuple[Any, Any]:
    """One stored run over saved outputs: two tags and an untagged third, a tag-scoped metric,
    a raised threshold, errored rows (no expected text) and, with ``missing``, samples whose
    output is missing (system-under-test failures)."""
    from assay.data.dataset import Dataset
    from assay.engine.evaluation import RunOptions, run_samples
    from assay.metrics.registry import resolve_all
    from assay.store.runs import RunStore

    samples = [
        Sample(
            id=f"s{i}",
            input={"question": f"q{i}"},
            expected_output=None if i % 97 == 0 else f"alpha beta {i % 7}",
            metadata={"tags": [["a"], ["b", "a"], []][i % 3]},
        )
        for i in range(count)
    ]
    outputs = {
        s.id: Output(f"alpha beta {i % 5}" if i % 4 else "gamma")
        for i, s in enumerate(samples)
        if not (missing and i % 501 == 3)
    }
    metrics = resolve_all(["exact-match", "contains", {"name": "rouge-l", "threshold": 0.8}])
    store = RunStore(tmp_path / "runs.db")
    report = run_samples(
        Dataset(name="mixed", samples=samples),
        sut=SavedOutputs(outputs, "o.json"),
        metrics=metrics,
        options=RunOptions(thresholds={"rouge-l": 0.8}),
        store=store,
        scopes={"contains": frozenset({"b"})},
        keep_rows=False,
    )
    return report, store


@pytest.mark.parametrize("missing", [False, True], ids=["all-answered", "some-missing"])
def test_columns_fold_into_the_report_as_rows_do(tmp_path: Any, missing: bool) -> None:
    """The report the run builds from each chunk's columns equals the one the store rebuilds by
    folding the same stored results in row by row (ReportBuilder.add)."""
    from assay.engine.rebuild import report_from_store

    report, store = _mixed_run(SCORE_CHUNK * 2 + 11, tmp_path, missing=missing)
    rebuilt = report_from_store(store, report.run.run_id, keep_rows=False)
    assert report.summary == rebuilt.summary
    assert report.metrics == rebuilt.metrics
    assert report.cohorts == rebuilt.cohorts
    assert report.failures == rebuilt.failures
    assert report.summary.errored_rows > 0 and report.summary.failed_rows > 0
    assert (report.summary.sut_errors > 0) is missing
    assert len(report.failing_rows) > 0
    store.close()


class WithUsage:
    name = "with-usage"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        return MetricScore(1.0, usage={"model": "m", "total_tokens": 3})


def test_a_chunk_is_clean_only_without_errors_or_usage() -> None:
    """A clean chunk's rows are stored without being looked at one by one: it must have no
    system-under-test failure, no metric error or missing score and no provider usage."""
    samples = [Sample(id=f"s{i}", input={}, expected_output="x") for i in range(4)]
    answered: list[Output | str] = [Output("x")] * 4
    cases: list[tuple[list[Any], list[Output | str], bool]] = [
        ([resolve("exact-match")], answered, True),
        ([resolve("exact-match")], [*answered[:3], "system under test failed"], False),
        ([resolve("exact-match"), OutOfRange()], answered, False),
        ([resolve("exact-match"), RowOnly(resolve("contains"))], answered, True),
        ([WithUsage()], answered, False),
    ]
    for metrics, answers, clean in cases:
        chunk = score_chunk(metrics, {}, plan(samples[: len(answers)], 1), answers)
        assert chunk.clean is clean, [m.name for m in metrics]
        assert chunk.clean == all(
            r.sut_error is None
            and not r.has_usage
            and all(s.error is None and s.value is not None for s in r.scores.values())
            for r in chunk.results
        )


class BigDetails:
    """Scores 0.25 with one details value, row by row and as a column: one orjson and
    pydantic-core may write differently (a float past 1e16, see ORJSON_FLOAT_BOUND) or orjson
    cannot (past 64 bits)."""

    name = "big-details"

    def __init__(self, value: Any) -> None:
        self.value = value

    def score(self, sample: Sample, output: Output) -> MetricScore:
        return MetricScore(0.25, details={"value": self.value, "small": 1e-7})

    def score_batch(self, samples: Sequence[Sample], outputs: Sequence[Output]) -> ScoreColumn:
        size = len(samples)
        columns = {"value": [self.value] * size, "small": [1e-7] * size}
        return ScoreColumn(np.full(size, 0.25), details=columns)


class OneByOne(SavedOutputs):
    """Saved outputs answered as a concurrent system answers: each execution is scored and
    recorded on its own (Recorder.on_result), never as a chunk."""

    synchronous = False


def _stored_run(
    tmp_path: Any, name: str, metrics: list[Any], sut: type[SavedOutputs] = SavedOutputs
) -> tuple[Any, list[bytes]]:
    """A stored run over saved outputs with more failing rows than are listed: its report
    and its stored rows."""
    from assay.data.dataset import Dataset
    from assay.engine.evaluation import RunOptions, run_samples
    from assay.store.runs import RunStore

    count = SCORE_CHUNK + 700
    samples = [
        Sample(id=f"s{i}", input={"q": i}, expected_output=f"alpha {i % 3}") for i in range(count)
    ]
    outputs = {s.id: Output(f"alpha {i % 4}") for i, s in enumerate(samples)}
    store = RunStore(tmp_path / f"{name}.db")
    report = run_samples(
        Dataset(name="d", samples=samples),
        sut=sut(outputs, "o.json"),
        metrics=metrics,
        options=RunOptions(),
        store=store,
        keep_rows=False,
    )
    rows = [row for *_, row in store.iter_stored(report.run.run_id)]
    store.close()
    return report, rows


@pytest.mark.parametrize(
    "extra",
    [[], [BigDetails(1e20)], [BigDetails(-(2**70))]],
    ids=["plain", "float-past-1e16", "int-past-64-bits"],
)
def test_columns_store_and_list_what_results_row_by_row_do(tmp_path: Any, extra: list[Any]) -> None:
    """A clean chunk whose metrics scored every row plainly goes to the store from its columns
    (rows encoded by orjson) and counts the failing rows it does not list: the same stored
    bytes, failing rows and omitted count as each execution scored and recorded on its own."""
    metrics = [resolve("exact-match"), resolve("rouge-l"), *extra]
    columns, stored = _stored_run(tmp_path, "columns", metrics)
    rows, one_by_one = _stored_run(tmp_path, "rows", [RowOnly(m) for m in metrics], OneByOne)
    assert stored == one_by_one and len(stored) == SCORE_CHUNK + 700
    assert columns.failing_rows == rows.failing_rows and len(rows.failing_rows) == 1000
    assert columns.failing_rows_omitted == rows.failing_rows_omitted > 0
    assert columns.summary == rows.summary
