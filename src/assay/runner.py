"""The run engine: answer every (sample, repetition), score it with every metric, hand it on.

Saved outputs scored by offline metrics take a plain synchronous loop (no event loop per
sample). Anything that calls out — a Python or HTTP system under test, provider-backed metrics —
runs on asyncio with bounded concurrency, in windows so that metrics can batch their provider
calls (``prefetch``). Each finished execution is handed to ``on_result`` at once, so the store
commits it as it finishes. A failure of the system under test or of a metric is recorded for
that execution only; the run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.dataset import Sample
from assay.errors import AssayError, MetricError
from assay.metrics.base import Metric, MetricScore, applies, check_details
from assay.outputs import Output
from assay.report.aggregate import ExecutionResult, ScoreResult
from assay.sut import SystemUnderTest

ResultHandler = Callable[[ExecutionResult, Output | None], None]


def _internal_error(metric: str, exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    return f"metric '{metric}' crashed: {type(exc).__name__}" + (f": {text}" if text else "")


def _accept(metric: Metric, value: Any) -> ScoreResult:
    if not isinstance(value, MetricScore):
        return ScoreResult(None, error=f"metric '{metric.name}' returned {type(value).__name__}, not a MetricScore")
    try:
        check_details(value.details, metric.name)
    except MetricError as exc:
        return ScoreResult(None, error=str(exc), usage=tuple(value.usage or ()))
    return ScoreResult(value.value, value.details, None, _usage_tuple(value.usage))


def _usage_tuple(usage: Any) -> tuple[dict[str, Any], ...]:
    if not usage:
        return ()
    if isinstance(usage, dict):
        return (usage,)
    return tuple(dict(u) for u in usage)


def score_sync(metric: Metric, sample: Sample, output: Output) -> ScoreResult:
    """Score one execution with a synchronous metric, capturing any failure."""
    try:
        return _accept(metric, metric.score(sample, output))
    except MetricError as exc:
        return ScoreResult(None, error=str(exc), usage=_usage_tuple(exc.usage))
    except AssayError as exc:
        return ScoreResult(None, error=str(exc))
    except Exception as exc:  # a custom metric's bug must not end the run
        return ScoreResult(None, error=_internal_error(metric.name, exc))


async def score_async(metric: Metric, sample: Sample, output: Output) -> ScoreResult:
    try:
        value = metric.score(sample, output)
        if inspect.isawaitable(value):
            value = await value
        return _accept(metric, value)
    except MetricError as exc:
        return ScoreResult(None, error=str(exc), usage=_usage_tuple(exc.usage))
    except AssayError as exc:
        return ScoreResult(None, error=str(exc))
    except Exception as exc:
        return ScoreResult(None, error=_internal_error(metric.name, exc))


def is_async_metric(metric: Metric) -> bool:
    return inspect.iscoroutinefunction(metric.score) or hasattr(metric, "prefetch")


@dataclass(frozen=True)
class Execution:
    position: int
    sample: Sample
    repetition: int


def plan(samples: Sequence[Sample], repetitions: int, skip: Iterable[tuple[str, int]] = ()) -> list[Execution]:
    """Every (sample, repetition) still to do, in dataset order."""
    done = set(skip)
    return [
        Execution(position, sample, repetition)
        for position, sample in enumerate(samples)
        for repetition in range(repetitions)
        if (sample.id, repetition) not in done
    ]


class Runner:
    """Drives one run. ``should_stop`` is polled between executions (budget halts)."""

    def __init__(
        self,
        metrics: Sequence[Metric],
        sut: SystemUnderTest,
        *,
        on_result: ResultHandler,
        sut_concurrency: int = 8,
        window: int = 256,
        should_stop: Callable[[], bool] = lambda: False,
        scopes: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        if sut_concurrency < 1:
            raise ValueError("sut_concurrency must be at least 1")
        self.metrics = list(metrics)
        self.sut = sut
        self.on_result = on_result
        self.sut_concurrency = sut_concurrency
        self.window = max(1, window)
        self.should_stop = should_stop
        self.stopped_early = False
        self.scopes = dict(scopes or {})

    def metrics_for(self, sample: Sample) -> list[Metric]:
        """The metrics that apply to a sample (tag-scoped metrics skip other samples)."""
        if not self.scopes:
            return self.metrics
        tags = sample.tags
        return [m for m in self.metrics if applies(self.scopes, m.name, tags)]

    @property
    def needs_event_loop(self) -> bool:
        return not getattr(self.sut, "synchronous", False) or any(is_async_metric(m) for m in self.metrics)

    def run(self, executions: Sequence[Execution]) -> None:
        if self.needs_event_loop:
            asyncio.run(self.run_async(executions))
        else:
            self._run_sync(executions)

    # ----------------------------------------------------------------------- sync path

    def _run_sync(self, executions: Sequence[Execution]) -> None:
        answer_now = self.sut.answer_now  # type: ignore[attr-defined]
        for execution in executions:
            if self.should_stop():
                self.stopped_early = True
                return
            sample = execution.sample
            try:
                output = answer_now(sample)
            except AssayError as exc:
                self.on_result(ExecutionResult(sample.id, execution.repetition, {}, sut_error=str(exc)), None)
                continue
            scores = {metric.name: score_sync(metric, sample, output) for metric in self.metrics_for(sample)}
            self.on_result(ExecutionResult(sample.id, execution.repetition, scores), output)

    # ----------------------------------------------------------------------- async path

    async def run_async(self, executions: Sequence[Execution]) -> None:
        gate = asyncio.Semaphore(self.sut_concurrency)
        prefetchers = [m for m in self.metrics if hasattr(m, "prefetch")]
        for start in range(0, len(executions), self.window):
            if self.should_stop():
                self.stopped_early = True
                return
            window = executions[start : start + self.window]
            answers = await asyncio.gather(*(self._answer(gate, e) for e in window))
            ready = [(e.sample, a) for e, a in zip(window, answers) if isinstance(a, Output)]
            for metric in prefetchers:
                # A failed prefetch only loses the batching; each sample's own call reports the error.
                with contextlib.suppress(Exception):
                    await metric.prefetch(ready)  # type: ignore[attr-defined]
            await asyncio.gather(*(self._finish(e, a) for e, a in zip(window, answers)))

    async def _answer(self, gate: asyncio.Semaphore, execution: Execution) -> Output | str:
        async with gate:
            try:
                return await self.sut.answer(execution.sample)
            except AssayError as exc:
                return str(exc)
            except Exception as exc:
                return f"system under test failed: {type(exc).__name__}"

    async def _finish(self, execution: Execution, answer: Output | str) -> None:
        sample, repetition = execution.sample, execution.repetition
        if isinstance(answer, str):
            self.on_result(ExecutionResult(sample.id, repetition, {}, sut_error=answer), None)
            return
        metrics = self.metrics_for(sample)
        results = await asyncio.gather(*(score_async(m, sample, answer) for m in metrics))
        scores = {m.name: r for m, r in zip(metrics, results)}
        self.on_result(ExecutionResult(sample.id, repetition, scores), answer)
