"""One metric's scores within one slice of a run (every execution, or one cohort), and the
statistics the report gives for it: counts, mean, percentiles, pass rate, intervals, histogram.

Scores are kept as a packed array of doubles while the run goes, up to a cap (:data:`SPILL_CAP`
values, 1 MB); the statistics are taken over the sorted values once, when the report is built.
A slice that outgrows the cap writes its values to a temporary file (:mod:`assay.report.spilled`)
and its statistics are taken over that file in chunks, so memory stays flat however many
samples a run has: the same counts, extremes, histogram and percentiles (bit for bit), and a
mean and standard deviation that are correctly rounded sums, which may differ from numpy's
whole-array sums in the last digit.
"""

from __future__ import annotations

import tempfile
from array import array
from typing import IO, TYPE_CHECKING

from assay.data.results import passes
from assay.report.model import CohortMetric, Interval, MetricAggregate
from assay.report.spilled import ScoreSummary, spill, summary_of_file
from assay.report.statistics import (
    buckets_of,
    histogram_counts,
    percentile,
    t_interval,
    wilson_interval,
)

if TYPE_CHECKING:  # numpy loads where first used: a run's first requests do not wait for it
    import numpy as np
    import numpy.typing as npt

SPILL_CAP = 1 << 17  # values a slice keeps in memory (and then writes out at a time)


class SliceScores:
    """Scores of one metric within one slice (overall or a cohort); past ``cap`` values in
    memory, they go to a temporary file (deleted when the slice is)."""

    __slots__ = ("_file", "_spilled", "cap", "errored", "skipped", "values")

    def __init__(self, cap: int = SPILL_CAP) -> None:
        self.values = array("d")
        self.cap = max(1, cap)
        self.errored = 0  # executions the metric could not score
        self.skipped = 0  # executions it applied to whose system under test failed
        self._file: IO[bytes] | None = None
        self._spilled = 0  # values written to the file

    @property
    def scored(self) -> int:
        """How many values the slice has, in memory and spilled."""
        return self._spilled + len(self.values)

    def append(self, value: float) -> None:
        """Add one score (written out with the others once they pass the cap)."""
        self.values.append(value)
        if len(self.values) > self.cap:
            self._spill()

    def extend(self, values: npt.NDArray[np.float64]) -> None:
        """Add a column's scores (written out with the others once they pass the cap)."""
        self.values.frombytes(values.tobytes())
        if len(self.values) > self.cap:
            self._spill()

    def _spill(self) -> None:
        """Move the values held in memory to the file (made at the first spill)."""
        if self._file is None:
            # Open as long as the slice lives (closed, and so deleted, with it).
            self._file = tempfile.TemporaryFile(prefix="assay-scores-")  # noqa: SIM115
        spill(self._file, self.values)
        self._spilled += len(self.values)
        self.values = array("d")

    def sorted_values(self) -> npt.NDArray[np.float64]:
        """The values held in memory, sorted (all of them unless the slice spilled)."""
        import numpy as np

        if not self.values:
            return np.empty(0)
        return np.sort(np.frombuffer(self.values, dtype=np.float64))

    def summary(self, threshold: float) -> ScoreSummary | None:
        """The statistics of the slice's values; None when it has none."""
        if self._file is not None:
            if self.values:
                self._spill()
            return summary_of_file(self._file, self._spilled, threshold)
        return _summary_in_memory(self.sorted_values(), threshold) if self.values else None


def _summary_in_memory(values: npt.NDArray[np.float64], threshold: float) -> ScoreSummary:
    """The statistics of sorted values held in memory, with numpy over the whole array."""
    good = passes(values, threshold)
    return ScoreSummary(
        scored=int(values.size),
        failed=int((~good).sum()),
        passed=int(good.sum()),
        mean=float(values.mean()),
        std=float(values.std(ddof=1)) if values.size >= 2 else None,
        p50=percentile(values, 50),
        p95=percentile(values, 95),
        low=float(values[0]),
        high=float(values[-1]),
        counts=histogram_counts(values),
    )


def extend_slice(scores: SliceScores, values: npt.NDArray[np.float64], errored: int) -> None:
    """Append a column's scored values to a slice and count its errored rows."""
    scores.extend(values)
    scores.errored += errored


def metric_aggregate(name: str, scores: SliceScores, threshold: float) -> MetricAggregate:
    """The report's aggregate of one metric over every execution."""
    found = scores.summary(threshold)
    scored = found.scored if found else 0
    attempted = scored + scores.errored + scores.skipped
    return MetricAggregate(
        name=name,
        attempted=attempted,
        scored=scored,
        failed=found.failed if found else 0,
        errored=scores.errored,
        threshold=threshold,
        skipped=scores.skipped,
        coverage=scored / attempted if attempted else None,
        mean=found.mean if found else None,
        p50=found.p50 if found else None,
        p95=found.p95 if found else None,
        min=found.low if found else None,
        max=found.high if found else None,
        pass_rate=found.passed / scored if found else None,
        pass_rate_ci=wilson_interval(found.passed, scored) if found else None,
        mean_ci=_mean_interval(found),
        histogram=buckets_of(found.counts if found else histogram_counts(_nothing())),
    )


def cohort_metric(name: str, scores: SliceScores, threshold: float) -> CohortMetric:
    """One metric's statistics within a cohort."""
    found = scores.summary(threshold)
    return CohortMetric(
        name=name,
        scored=found.scored if found else 0,
        failed=found.failed if found else 0,
        errored=scores.errored,
        mean=found.mean if found else None,
        p50=found.p50 if found else None,
        p95=found.p95 if found else None,
        pass_rate=found.passed / found.scored if found else None,
        pass_rate_ci=wilson_interval(found.passed, found.scored) if found else None,
        mean_ci=_mean_interval(found),
    )


def _mean_interval(found: ScoreSummary | None) -> Interval | None:
    """The mean's Student-t interval; None below two values."""
    if found is None or found.std is None or found.mean is None:
        return None
    return t_interval(found.scored, found.mean, found.std)


def _nothing() -> npt.NDArray[np.float64]:
    """No values (the histogram of a metric that scored none: every bucket empty)."""
    import numpy as np

    return np.empty(0)
