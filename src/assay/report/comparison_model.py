"""The paired comparison document (``assay.comparison.v1``): two runs, what changed, and whether
it is beyond noise. Built by :func:`assay.compare.comparison.compare_reports`; read by the gate and
the
renderers. A report embeds only its digest (:class:`assay.report.model.ComparisonSummary`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import Field

from assay.report.judge_model import JudgeChange
from assay.report.model import (
    COMPARISON_SCHEMA,
    ComparisonSummary,
    Counts,
    Interval,
    Regression,
)
from assay.report.strict import StrictModel

# "no-change" is only read (documents written before the labels below); never written.
Verdict = Literal[
    "regressed", "improved", "no-detectable-change", "too-few-pairs", "incomparable", "no-change"
]


class Side(StrictModel):
    """Which run one side of the comparison is."""

    run_id: str
    dataset: str
    finished_at: str
    samples: int
    executions: int
    repetitions: int
    macro_f1: float | None
    pass_rate: float | None


class StatDelta(StrictModel):
    """One statistic on both sides over the paired samples, its change and its test."""

    reference: float | None
    current: float | None
    delta: float | None = Field(description="current - reference")
    interval: Interval | None = Field(description="paired-bootstrap interval of delta")
    test: Literal["paired-bootstrap", "mcnemar-exact"] | None
    p_value: float | None
    p_adjusted: float | None = Field(description="Holm-adjusted over every test of the comparison")
    mdd: float | None = Field(
        description="minimum detectable difference: smallest |delta| caught with 80% power at alpha"
    )


class MetricComparison(StrictModel):
    """One metric, overall (cohort null) or within one cohort."""

    metric: str
    scope: Literal["overall", "cohort"]
    cohort: str | None = Field(description="the tag; null overall and for the untagged bucket")
    cohort_label: str | None = Field(description="the tag or '(untagged)'; null overall")
    paired: int = Field(description="samples scored on both sides")
    pass_to_fail: int
    fail_to_pass: int
    mean: StatDelta
    pass_rate: StatDelta
    coverage_reference: float | None = None
    coverage_current: float | None = None
    verdict: Verdict

    def label(self) -> str:
        """The verdict in words: 'regressed', 'no detectable change (MDD 0.400)', ..."""
        if self.verdict in ("no-detectable-change", "no-change"):
            mdd = self.mean.mdd if self.mean.mdd is not None else self.pass_rate.mdd
            return f"no detectable change (MDD {'n/a' if mdd is None else f'{mdd:.3f}'})"
        if self.verdict == "too-few-pairs":
            return "too few pairs to tell"
        return self.verdict

    def why(self) -> str:
        """Which statistic decided the verdict, when the interval and the test disagree."""
        for name, stat in (("mean", self.mean), ("pass-rate", self.pass_rate)):
            interval = stat.interval
            if interval is None or stat.p_adjusted is None:
                continue
            excludes = interval.high < 0 or interval.low > 0
            if excludes and self.verdict not in ("regressed", "improved"):
                return (
                    f"{name} interval [{interval.low:.3f}, {interval.high:.3f}] excludes zero "
                    f"but the Holm-adjusted test (p {stat.p_adjusted:.3f}) decides: "
                    f"{self.paired} pairs are too few to call it"
                )
        return ""


class SampleRef(StrictModel):
    key: str
    sample_id: str


class Flip(StrictModel):
    """A sample whose pass/fail outcome on one metric changed."""

    key: str
    sample_id: str
    metric: str
    direction: Literal["pass-to-fail", "fail-to-pass"]
    before: float
    after: float


class NewFailure(StrictModel):
    """A sample that passed everything in the reference and now fails or errors."""

    key: str
    sample_id: str
    failed_metrics: list[str]
    errored: list[str] = Field(description="metrics (or 'system-under-test') that raised")


class Comparison(StrictModel):
    """Paired comparison of a current report against a reference (baseline) report."""

    schema_version: Literal["assay.comparison.v1"] = COMPARISON_SCHEMA
    dataset: str
    current: Side
    reference: Side
    join_key: Literal["row_hash", "id"]
    alpha: float
    seed: int
    resamples: int
    correction: Literal["holm"] = "holm"
    comparable: bool
    incomparable_reason: str | None = None
    counts: Counts
    macro_f1_delta: float | None
    pass_rate_delta: float | None
    metrics: list[MetricComparison]
    cohorts: list[MetricComparison]
    regressions: list[Regression]
    flips: list[Flip]
    new_failures: list[NewFailure]
    added: list[SampleRef]
    removed: list[SampleRef]
    warnings: list[str] = Field(default_factory=list)
    reference_aggregates: dict[str, dict[str, float | None]] = Field(
        default_factory=dict,
        description="the reference run's mean, p50, p95 and pass_rate per metric (for max_drop)",
    )
    current_aggregates: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    judge_changes: list[JudgeChange] = Field(
        default_factory=list, description="judge metrics scored by different judges"
    )
    judge_change_allowed: bool = Field(
        default=False, description="the judges' changes count against the system"
    )

    def unattributed(self) -> set[str]:
        """Metrics whose flips and regressions are the judge's change, not the system's."""
        return set() if self.judge_change_allowed else {c.metric for c in self.judge_changes}

    def pass_to_fail_rows(self) -> list[str]:
        """Every (sample, metric) that passed in the reference and now fails or errors (a
        metric whose judge changed left out, unless the change is allowed)."""
        skip = self.unattributed()
        found = [
            f"{f.sample_id}/{f.metric}"
            for f in self.flips
            if f.direction == "pass-to-fail" and f.metric not in skip
        ]
        for item in self.new_failures:
            found.extend(
                f"{item.sample_id}/{where} (errored)" for where in item.errored if where not in skip
            )
        return list(dict.fromkeys(found))

    @property
    def regression_count(self) -> int:
        """Distinct (metric, scope) pairs with at least one statistic regressed (a metric whose
        judge changed left out, unless the change is allowed)."""
        skip = self.unattributed()
        return distinct_regressions(r for r in self.regressions if r.metric not in skip)

    def summary(self) -> ComparisonSummary:
        """The compact digest a report embeds under ``comparison``."""
        return ComparisonSummary(
            reference_run_id=self.reference.run_id,
            join_key=self.join_key,
            comparable=self.comparable,
            alpha=self.alpha,
            macro_f1_delta=self.macro_f1_delta,
            pass_rate_delta=self.pass_rate_delta,
            counts=self.counts,
            regressions=self.regressions,
        )


def distinct_regressions(regressions: Iterable[Regression]) -> int:
    """Distinct (metric, scope, cohort) triples among regressed statistics."""
    return len({(item.metric, item.scope, item.cohort_label) for item in regressions})


def no_regression_line(metrics: Iterable[MetricComparison], pass_to_fail: int) -> str:
    """What 'no regression' means here: the tests confirmed none, which metrics could not tell,
    and how many rows still went from pass to fail."""
    unsure = [m.metric for m in metrics if m.verdict == "too-few-pairs" and m.scope == "overall"]
    line = "no regression the paired tests can confirm"
    if unsure:
        line += f"; too few pairs to tell for {', '.join(unsure)}"
    if pass_to_fail:
        line += f"; {pass_to_fail} row(s) went from pass to fail"
    return line
