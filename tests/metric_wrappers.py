"""Metric wrappers shared by the runner tests: a metric with its ``score_batch`` hidden."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.metrics.base import MetricScore


@dataclass(frozen=True)
class RowOnly:
    """Wraps a metric and hides its score_batch: the per-sample path, for comparison."""

    inner: Any

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def score(self, sample: Sample, output: Output) -> MetricScore:
        return self.inner.score(sample, output)  # type: ignore[no-any-return]
