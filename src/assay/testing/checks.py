"""``assert_metric``: one metric on one answer, as an assertion inside an ordinary test."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from assay.data.dataset import MetricSpec, Sample
from assay.data.outputs import Output, coerce_output
from assay.data.results import ScoreResult, passes, threshold_for
from assay.engine.scoring import is_async_metric, score_async, score_sync
from assay.errors import UsageError
from assay.metrics.base import Metric
from assay.metrics.registry import resolve, thresholds_of
from assay.testing.text import show

MetricLike = str | Mapping[str, Any] | MetricSpec | Metric


def _prepare(
    metric: MetricLike,
    output: object,
    expected: object,
    input: Mapping[str, Any] | None,
    metadata: Mapping[str, Any] | None,
) -> tuple[Metric, Sample, Output, float]:
    """The metric, a one-off sample, the answer, and the metric's own threshold."""
    resolved = resolve(metric)
    threshold = threshold_for(thresholds_of([metric], [resolved]), resolved.name)
    sample = Sample(
        id="assert-metric",
        input=dict(input or {}),
        expected_output=expected,
        metadata=dict(metadata or {}),
    )
    return resolved, sample, coerce_output(output), threshold


def _verdict(
    metric: Metric, sample: Sample, output: Output, result: ScoreResult, threshold: float
) -> float:
    """The score, or an AssertionError naming the metric with expected and actual."""
    __tracebackhide__ = True
    limit = threshold
    context = f"\n  expected: {show(sample.expected_output)}\n  actual:   {show(output.text)}"
    if sample.input:
        context = f"\n  input:    {show(sample.input)}" + context
    if result.error is not None or result.value is None:
        raise AssertionError(
            f"{metric.name} could not score the answer (errored): {result.error}{context}"
        )
    if not passes(result.value, limit):
        raise AssertionError(
            f"{metric.name} scored {result.value:.4f}, below the threshold {limit:.4f}{context}"
        )
    return result.value


def assert_metric(
    metric: MetricLike,
    output: object,
    expected: object = None,
    *,
    input: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    threshold: float | None = None,
) -> float:
    """Score ``output`` against ``expected`` with one metric; fail below ``threshold``.

    ``metric`` is a name (``"contains"``), a spec mapping (``{"name": "regex", "pattern": ...}``)
    or a metric object. ``threshold`` defaults to the metric's own (its ``threshold`` option,
    else 0.5), the same pass rule as every report. Returns the score. An answer the metric cannot
    score fails as *errored*. For provider-backed (async) metrics inside a running event loop use
    :func:`assert_metric_async`.
    """
    __tracebackhide__ = True
    resolved, sample, answer, own = _prepare(metric, output, expected, input, metadata)
    if is_async_metric(resolved):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            result = asyncio.run(score_async(resolved, sample, answer))
        else:
            raise UsageError(
                f"metric '{resolved.name}' is async and an event loop is running: "
                "use 'await assert_metric_async(...)'"
            )
    else:
        result = score_sync(resolved, sample, answer)
    return _verdict(resolved, sample, answer, result, own if threshold is None else threshold)


async def assert_metric_async(
    metric: MetricLike,
    output: object,
    expected: object = None,
    *,
    input: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    threshold: float | None = None,
) -> float:
    """:func:`assert_metric` for async tests (awaits provider-backed metrics)."""
    __tracebackhide__ = True
    resolved, sample, answer, own = _prepare(metric, output, expected, input, metadata)
    result = await score_async(resolved, sample, answer)
    return _verdict(resolved, sample, answer, result, own if threshold is None else threshold)
