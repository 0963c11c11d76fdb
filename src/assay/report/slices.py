"""One metric's scores within one slice of a run (every execution, or one cohort), and the
statistics the report gives for it: counts, mean, percentiles, pass rate, intervals, histogram.

Scores are kept as a packed array of doubles while the run goes; the statistics are taken over
the sorted values once, when the report is built.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

from assay.report.model import CohortMetric, MetricAggregate
from assay.report.statistics import (
    histogram,
    mean_interval,
    mean_or_none,
    pass_interval,
    pass_rate_of,
    percentile,
)

if TYPE_CHECKING:  # numpy loads where first used: a run's first requests do not wait for it
    import numpy as np
    import numpy.typing as npt


class SliceScores:
    """Scores of one metric within one slice (overall or a cohort)."""

    __slots__ = ("errored", "skipped", "values")

    def __init__(self) -> None:
        self.values = array("d")
        self.errored = 0  # executions the metric could not score
        self.skipped = 0  # executions it applied to whose system under test failed

    def sorted_values(self) -> npt.NDArray[np.float64]:
        import numpy as np

        if not self.values:
            return np.empty(0)
        return np.sort(np.frombuffer(self.values, dtype=np.float64))


def extend_slice(scores: SliceScores, values: npt.NDArray[np.float64], errored: int) -> None:
    """Append a column's scored values to a slice and count its errored rows."""
    scores.values.frombytes(values.tobytes())
    scores.errored += errored


def metric_aggregate(name: str, scores: SliceScores, threshold: float) -> MetricAggregate:
    """The report's aggregate of one metric over every execution."""
    values = scores.sorted_values()
    attempted = values.size + scores.errored + scores.skipped
    return MetricAggregate(
        name=name,
        attempted=attempted,
        scored=int(values.size),
        failed=int((~(values >= threshold)).sum()),
        errored=scores.errored,
        threshold=threshold,
        skipped=scores.skipped,
        coverage=values.size / attempted if attempted else None,
        mean=mean_or_none(values),
        p50=percentile(values, 50),
        p95=percentile(values, 95),
        min=float(values[0]) if values.size else None,
        max=float(values[-1]) if values.size else None,
        pass_rate=pass_rate_of(values, threshold),
        pass_rate_ci=pass_interval(values, threshold),
        mean_ci=mean_interval(values),
        histogram=histogram(values),
    )


def cohort_metric(name: str, scores: SliceScores, threshold: float) -> CohortMetric:
    """One metric's statistics within a cohort."""
    values = scores.sorted_values()
    return CohortMetric(
        name=name,
        scored=int(values.size),
        failed=int((~(values >= threshold)).sum()),
        errored=scores.errored,
        mean=mean_or_none(values),
        p50=percentile(values, 50),
        p95=percentile(values, 95),
        pass_rate=pass_rate_of(values, threshold),
        pass_rate_ci=pass_interval(values, threshold),
        mean_ci=mean_interval(values),
    )
