"""The run engine: sync and async paths agree, order survives concurrency, resume and retry."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from assay.data.dataset import Dataset, Sample
from assay.data.outputs import Output, Retrieved, coerce_output
from assay.engine.evaluation import RunOptions, RunState, run_samples
from assay.engine.sut import PythonTarget, SavedOutputs
from assay.errors import MetricError, SystemUnderTestError, UsageError
from assay.metrics.base import MetricScore
from assay.metrics.registry import resolve_scoped
from assay.report.model import Report, SystemUnderTestInfo
from assay.store.runs import RunStore
from report.reports import check_report

BODY = ("summary", "metrics", "cohorts", "rows", "failures", "usage")


def body(report: Report) -> dict[str, Any]:
    data = check_report(report)
    return {key: data[key] for key in BODY}


def make_dataset(count: int = 12, repetitions: int = 1) -> tuple[Dataset, dict[str, Output]]:
    samples: list[Sample] = []
    outputs: dict[str, Output] = {}
    for i in range(count):
        sid = f"{i:03d}"
        if i % 3 == 0:
            samples.append(
                Sample(
                    id=sid,
                    input={"q": sid},
                    expected_output=[f"d{i}", "dx"],
                    metadata={"tags": ["rag"], "k": 3},
                )
            )
            outputs[sid] = Output(
                f"answer {i}", (Retrieved("dz"), Retrieved(f"d{i}"), Retrieved("dx"))
            )
        else:
            expected = f"the answer is {i}"
            samples.append(
                Sample(
                    id=sid,
                    input={"q": sid},
                    expected_output=expected,
                    metadata={"tags": ["text", f"g{i % 2}"]},
                )
            )
            outputs[sid] = Output(expected if i % 4 else f"the answer was {i}")
    return Dataset(name="runner", samples=samples, repetitions=repetitions), outputs


SPECS = [
    {"name": "exact-match", "tags": ["text"]},
    {"name": "rouge-l", "tags": ["text"]},
    {"name": "retrieval-mrr", "tags": ["rag"]},
    {"name": "retrieval-recall-at-k", "tags": ["rag"]},
]


class CountingSaved(SavedOutputs):
    """Saved outputs that count calls and fail on chosen sample ids (synchronous path)."""

    def __init__(self, outputs: dict[str, Output], failing: set[str] | None = None) -> None:
        super().__init__(outputs, "saved.json")
        self.calls: Counter[str] = Counter()
        self.failing = failing or set()

    def answer_now(self, sample: Sample) -> Output:
        self.calls[sample.id] += 1
        if sample.id in self.failing:
            raise SystemUnderTestError(f"no answer for {sample.id}")
        return super().answer_now(sample)


class AsyncSut:
    """An asynchronous system under test; later samples answer first to shuffle completion."""

    synchronous = False

    def __init__(
        self, outputs: dict[str, Output], positions: dict[str, int], failing: set[str] | None = None
    ) -> None:
        self.outputs = outputs
        self.positions = positions
        self.failing = failing or set()
        self.calls: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0

    def describe(self) -> SystemUnderTestInfo:
        return SystemUnderTestInfo(kind="saved-outputs", target="saved.json")

    async def answer(self, sample: Sample) -> Output:
        self.calls[sample.id] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.001 * (len(self.positions) - self.positions[sample.id]))
            if sample.id in self.failing:
                raise SystemUnderTestError(f"no answer for {sample.id}")
            return self.outputs[sample.id]
        finally:
            self.in_flight -= 1


def run(dataset: Dataset, sut: Any, *, store: RunStore | None = None, **options: Any) -> Report:
    metrics, scopes = resolve_scoped(SPECS)
    return run_samples(
        dataset, sut=sut, metrics=metrics, scopes=scopes, store=store, options=RunOptions(**options)
    )


# --------------------------------------------------------------------------- sync vs async


def test_sync_and_async_paths_give_the_same_report() -> None:
    dataset, outputs = make_dataset(repetitions=2)
    positions = {s.id: i for i, s in enumerate(dataset.samples)}
    failing = {"004"}
    sync_sut = CountingSaved(outputs, failing)
    async_sut = AsyncSut(outputs, positions, failing)
    sync_report = run(dataset, sync_sut)
    async_report = run(dataset, async_sut, sut_concurrency=4)
    assert body(sync_report) == body(async_report)
    assert sync_report.summary.sut_errors == 2  # one failing sample, two repetitions
    assert sync_report.summary.total_executions == 24
    assert sync_report.repetitions is not None
    assert body(sync_report)["rows"] == body(async_report)["rows"]


def test_python_target_sync_and_async_functions_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset, outputs = make_dataset()
    table = {s.input["q"]: outputs[s.id].to_json() for s in dataset.samples}
    module = tmp_path / "runner_sut_module.py"
    module.write_text(
        textwrap.dedent(
            f"""
            import asyncio
            TABLE = {table!r}

            def answer(sample_input):
                if sample_input["q"] == "005":
                    raise KeyError("secret-free failure")
                return TABLE[sample_input["q"]]

            async def answer_async(sample_input):
                await asyncio.sleep(0)
                return answer(sample_input)
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "runner_sut_module", raising=False)
    sync_report = run(dataset, PythonTarget("runner_sut_module:answer"))
    async_report = run(dataset, PythonTarget("runner_sut_module:answer_async"))
    saved = run(dataset, CountingSaved(outputs, {"005"}))
    assert body(sync_report)["metrics"] == body(async_report)["metrics"] == body(saved)["metrics"]
    assert body(sync_report)["rows"] == body(async_report)["rows"]
    (failure,) = sync_report.failures
    assert failure.sample_id == "005" and "KeyError" in failure.message


# --------------------------------------------------------------------------- ordering


@pytest.mark.parametrize("with_store", [False, True])
def test_concurrency_keeps_dataset_order(tmp_path: Path, with_store: bool) -> None:
    dataset, outputs = make_dataset(count=20, repetitions=2)
    positions = {s.id: i for i, s in enumerate(dataset.samples)}
    sut = AsyncSut(outputs, positions, failing={"007", "013"})
    store = RunStore(tmp_path / "runs.db") if with_store else None
    try:
        report = run(dataset, sut, store=store, sut_concurrency=8)
    finally:
        if store is not None:
            store.close()
    assert sut.max_in_flight > 1  # it really ran concurrently
    expected = [(s.id, r) for s in dataset.samples for r in range(2)]
    assert [(row.id, row.repetition) for row in report.rows] == expected
    assert [(f.sample_id, f.repetition) for f in report.failures] == [
        ("007", 0),
        ("007", 1),
        ("013", 0),
        ("013", 1),
    ]


def test_concurrency_limit_is_respected() -> None:
    dataset, outputs = make_dataset(count=20)
    sut = AsyncSut(outputs, {s.id: i for i, s in enumerate(dataset.samples)})
    run(dataset, sut, sut_concurrency=3)
    assert 1 < sut.max_in_flight <= 3


# -------------------------------------------------------------------------- failures inside metrics


class FlakyMetric:
    """A custom metric that raises MetricError on one sample and crashes on another."""

    name = "flaky"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        if sample.id == "001":
            raise MetricError("cannot judge 001")
        if sample.id == "002":
            raise ZeroDivisionError("bug in a plugin")
        return MetricScore(1.0)


class AsyncMetric:
    name = "async-len"

    async def score(self, sample: Sample, output: Output) -> MetricScore:
        await asyncio.sleep(0)
        return MetricScore(min(1.0, len(output.text) / 100))


def test_metric_failures_are_recorded_per_execution() -> None:
    dataset, outputs = make_dataset(count=4)
    report = run_samples(
        dataset, sut=SavedOutputs(outputs, "o.json"), metrics=[FlakyMetric(), AsyncMetric()]
    )
    check_report(report)
    messages = {(f.sample_id, f.metric): f.message for f in report.failures}
    assert messages[("001", "flaky")] == "cannot judge 001"
    assert "ZeroDivisionError" in messages[("002", "flaky")]
    flaky = report.metric("flaky")
    assert (flaky.scored, flaky.errored) == (2, 2)
    lengths = [min(1.0, len(outputs[s.id].text) / 100) for s in dataset.samples]
    assert report.metric("async-len").mean == pytest.approx(sum(lengths) / 4)


# --------------------------------------------------------------------------- resume and retry


def test_resume_skips_finished_executions(tmp_path: Path) -> None:
    dataset, outputs = make_dataset(count=10, repetitions=2)
    store = RunStore(tmp_path / "runs.db")
    try:
        first = CountingSaved(outputs)
        state = RunState()
        state.should_stop = lambda: state.done >= 7
        metrics, scopes = resolve_scoped(SPECS)
        partial = run_samples(
            dataset,
            sut=first,
            metrics=metrics,
            scopes=scopes,
            store=store,
            state=state,
            options=RunOptions(run_id="r1"),
        )
        assert partial.run.halted is True and partial.summary.total_executions == 7
        assert sum(first.calls.values()) == 7
        assert store.get_run("r1").status == "halted"

        second = CountingSaved(outputs)
        resumed = run(dataset, second, store=store, run_id="r1", resume=True)
        assert sum(second.calls.values()) == 20 - 7
        # nothing answered twice across the two sessions
        assert first.calls + second.calls == Counter({s.id: 2 for s in dataset.samples})
        assert store.get_run("r1").status == "finished"

        fresh = run(dataset, CountingSaved(outputs), store=store, run_id="r2")
        assert body(resumed) == body(fresh)
        assert resumed.run.halted is False
    finally:
        store.close()


def test_retry_errors_redoes_only_errored_executions(tmp_path: Path) -> None:
    dataset, outputs = make_dataset(count=9)
    store = RunStore(tmp_path / "runs.db")
    try:
        broken = run(
            dataset, CountingSaved(outputs, failing={"002", "005"}), store=store, run_id="r"
        )
        assert broken.summary.sut_errors == 2

        # a plain resume has nothing left to do: errored executions count as done
        idle = CountingSaved(outputs)
        again = run(dataset, idle, store=store, run_id="r", resume=True)
        assert sum(idle.calls.values()) == 0
        assert again.summary.sut_errors == 2

        fixed = CountingSaved(outputs)
        retried = run(dataset, fixed, store=store, run_id="r", resume=True, retry_errors=True)
        assert fixed.calls == Counter({"002": 1, "005": 1})
        assert retried.summary.errored_rows == 0
        assert retried.summary.total_executions == 9
        assert body(retried) == body(run(dataset, CountingSaved(outputs)))
    finally:
        store.close()


def test_retry_errors_also_redoes_metric_failures(tmp_path: Path) -> None:
    dataset, outputs = make_dataset(count=4)
    store = RunStore(tmp_path / "runs.db")
    try:
        run_samples(
            dataset,
            sut=SavedOutputs(outputs, "o"),
            metrics=[FlakyMetric()],
            store=store,
            options=RunOptions(run_id="m"),
        )
        counting = CountingSaved(outputs)
        run_samples(
            dataset,
            sut=counting,
            metrics=[FlakyMetric()],
            store=store,
            options=RunOptions(run_id="m", resume=True, retry_errors=True),
        )
        assert counting.calls == Counter({"001": 1, "002": 1})
    finally:
        store.close()


def test_resume_refuses_other_metrics_or_dataset(tmp_path: Path) -> None:
    dataset, outputs = make_dataset(count=3)
    store = RunStore(tmp_path / "runs.db")
    try:
        run(dataset, SavedOutputs(outputs, "o"), store=store, run_id="r")
        with pytest.raises(UsageError, match="same metrics"):
            run_samples(
                dataset,
                sut=SavedOutputs(outputs, "o"),
                metrics=[FlakyMetric()],
                store=store,
                options=RunOptions(run_id="r", resume=True),
            )
        other = dataset.model_copy(update={"name": "other"})
        with pytest.raises(UsageError, match="dataset"):
            run(other, SavedOutputs(outputs, "o"), store=store, run_id="r", resume=True)
    finally:
        store.close()
    with pytest.raises(UsageError):
        run(dataset, SavedOutputs(outputs, "o"), run_id="r", resume=True)


def test_repetitions_option_overrides_dataset() -> None:
    dataset, outputs = make_dataset(count=3, repetitions=2)
    sut = CountingSaved(outputs)
    report = run(dataset, sut, repetitions=3)
    assert report.run.repetitions == 3 and report.summary.total_executions == 9
    assert sut.calls == Counter({s.id: 3 for s in dataset.samples})


def test_coerce_output_contract_for_python_suts() -> None:
    # what a Python SUT may return: a string or a mapping with 'output' (+ 'retrieved')
    assert coerce_output({"output": "x", "retrieved": [{"id": "d", "text": "t"}]}).retrieved == (
        Retrieved("d", "t"),
    )


def test_store_and_memory_paths_give_the_same_report(tmp_path: Path) -> None:
    dataset, outputs = make_dataset(count=9, repetitions=2)
    in_memory = run(dataset, CountingSaved(outputs, {"004"}))
    store = RunStore(tmp_path / "runs.db")
    try:
        stored = run(dataset, CountingSaved(outputs, {"004"}), store=store)
    finally:
        store.close()
    assert body(in_memory) == body(stored)
