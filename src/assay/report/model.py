"""The report contract (``assay.report.v2``): pydantic models for every key a report holds.

The JSON Schema shipped in ``assay/schemas/report.v2.json`` is generated from these models;
evolve them additively (new optional keys only) so dashboards and gates keep working.
Undefined statistics are ``None`` (``n/a`` in text), never a made-up 0.

v2 gives every count one word: *failed* counts scored rows below their threshold and nothing
else, *errored* counts rows that could not be scored. A v1 document (where ``failed`` counted
errored rows) is upgraded when read (:mod:`assay.report.upgrade`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

from pydantic import BaseModel, Field, model_validator

from assay.report.compliance_model import Compliance
from assay.report.judge_model import JudgeCalibration
from assay.report.strict import StrictModel
from assay.report.system_info import SystemUnderTestInfo as SystemUnderTestInfo
from assay.report.upgrade import upgrade_report

if TYPE_CHECKING:
    import pandas

REPORT_SCHEMA: Final = "assay.report.v2"
REPORT_SCHEMA_V1: Final = "assay.report.v1"  # read (upgraded), never written
COMPARISON_SCHEMA: Final = "assay.comparison.v1"
UNTAGGED_LABEL: Final = "(untagged)"  # the cohort of samples without tags
_M = TypeVar("_M", bound=BaseModel)


_FIELDS_SET: dict[type, set[str]] = {}


def trusted(cls: type[_M], fields: dict[str, Any]) -> _M:
    """Build a model from values assay itself produced, skipping validation.

    What ``model_construct`` does minus its per-field bookkeeping; used for the one row per
    execution (100,000+ per run), where validation would dominate the run time.
    """
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", fields)
    # One shared fields-set per class: these models are never mutated after construction.
    shared = _FIELDS_SET.get(cls)
    if shared is None or len(shared) != len(fields):
        shared = _FIELDS_SET.setdefault(cls, set(fields))
    object.__setattr__(obj, "__pydantic_fields_set__", shared)
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj


class Interval(StrictModel):
    low: float
    high: float
    confidence: float


class Bucket(StrictModel):
    """One histogram bucket; the last one is closed on the right so 1.0 lands in it."""

    lower: float
    upper: float
    count: int


class MetricAggregate(StrictModel):
    """Aggregates of one metric over every scored execution."""

    name: str
    attempted: int = Field(description="executions the metric was asked to score")
    scored: int
    failed: int = Field(description="scored executions below the metric's threshold")
    errored: int = Field(description="executions the metric could not score")
    skipped: int = Field(description="executions not scored because the system under test failed")
    coverage: float | None = Field(description="scored / attempted")
    mean: float | None
    p50: float | None
    p95: float | None
    min: float | None
    max: float | None
    pass_rate: float | None = Field(
        description="share of scored executions with score >= the metric's threshold"
    )
    pass_rate_ci: Interval | None = Field(
        default=None, description="Wilson 95% interval of the pass-rate"
    )
    mean_ci: Interval | None = Field(
        default=None, description="t-based 95% interval of the mean (n >= 2)"
    )
    histogram: list[Bucket]
    threshold: float = Field(default=0.5, description="the pass threshold: score >= threshold")


class CohortMetric(StrictModel):
    name: str
    scored: int
    failed: int = Field(description="scored executions below the metric's threshold")
    errored: int = Field(description="executions the metric could not score")
    mean: float | None
    p50: float | None
    p95: float | None
    pass_rate: float | None
    pass_rate_ci: Interval | None = None
    mean_ci: Interval | None = None


class Cohort(StrictModel):
    """Aggregates over the executions whose sample carries one tag (or no tag at all)."""

    name: str | None = Field(description="the tag; null for the untagged bucket")
    label: str
    is_untagged: bool
    samples: int = Field(description="executions in the cohort")
    metrics: list[CohortMetric]


CostSourceName = Literal["reported", "estimated", "mixed"]


class ModelUsage(StrictModel):
    model: str
    calls: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost_usd: float | None = Field(description="null when the model has no price")
    priced: bool
    cost_source: CostSourceName | None = Field(
        default=None,
        description="reported (the provider stated it), estimated (price table) or mixed",
    )


class UsageBlock(StrictModel):
    """Provider accounting: tokens, locally measured latency and cost."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    latency_ms_total: float = 0.0
    latency_ms_mean: float | None = None
    latency_ms_max: float | None = None
    cost_usd: float | None = Field(
        default=None, description="priced spend; null when nothing was priced"
    )
    complete: bool = Field(default=True, description="false when some calls used an unpriced model")
    cost_source: CostSourceName | None = Field(
        default=None,
        description="reported: every paid call's cost was stated by the provider; estimated: "
        "derived from the price table; mixed: some of each; null: nothing paid was priced",
    )
    reported_cost_usd: float | None = Field(
        default=None, description="the part of cost_usd the provider stated in its replies"
    )
    unpriced_models: list[str] = Field(default_factory=list)
    models: list[ModelUsage] = Field(default_factory=list)


class Usage(UsageBlock):
    per_metric: dict[str, UsageBlock] = Field(default_factory=dict)


class RowScore(StrictModel):
    score: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)  # as MetricScore: never NaN
    passed: bool
    details: dict[str, Any] = Field(default_factory=dict)


class Row(StrictModel):
    """One execution of one sample: its scores and errors; no input, expected or metadata."""

    id: str
    row_hash: str
    repetition: int
    tags: list[str]
    passed: bool = Field(description="no failure and every metric scored >= 0.5")
    scores: dict[str, RowScore]
    errors: dict[str, str] = Field(
        default_factory=dict, description="metric name (or 'system-under-test') -> message"
    )


class Failure(StrictModel):
    sample_id: str
    repetition: int
    stage: Literal["system-under-test", "metric"]
    metric: str | None
    message: str


class SampleAggregate(StrictModel):
    """Per-sample view across repetitions (present when a run has more than one)."""

    id: str
    row_hash: str
    repetitions: int
    passed: int
    errored: int
    pass_rate: float
    pass_rate_ci: Interval
    unstable: bool
    score_mean: float | None
    score_stddev: float | None


class Repetitions(StrictModel):
    count: int
    unstable_samples: list[str]
    samples: list[SampleAggregate]


class Budget(StrictModel):
    limit_usd: float
    spent_usd: float
    halted: bool
    completed_executions: int
    reason: str | None = None


class RunInfo(StrictModel):
    run_id: str
    assay_version: str
    started_at: str
    finished_at: str
    duration_seconds: float
    system_under_test: SystemUnderTestInfo
    repetitions: int
    halted: bool = False
    halt_reason: str | None = None
    embedding_provider: str | None = Field(default=None, description="e.g. 'hashing (test only)'")
    judge_model: str | None = None


class DatasetInfo(StrictModel):
    name: str
    schema_version: str
    path: str | None = None
    samples: int


class Summary(StrictModel):
    total_samples: int
    total_executions: int
    failed_rows: int = Field(description="executions with a score below its threshold and no error")
    errored_rows: int = Field(
        description="executions where the system under test or a metric errored"
    )
    sut_errors: int = Field(description="executions the system under test could not answer")
    metric_errors: int = Field(description="(execution, metric) pairs that could not be scored")
    pass_rate: float | None = Field(
        description="share of executions that passed every metric with no failure"
    )
    macro_f1: float | None = Field(
        description="mean pass-rate over metrics with at least one score"
    )
    macro_f1_excluded: list[str] = Field(
        default_factory=list, description="metrics left out of macro-F1: no score at all"
    )


class FailingRow(StrictModel):
    """One (execution, metric) that failed or errored, with the texts a person needs to fix it.

    Texts are truncated to the run's text limit; ``--redact`` leaves them ``None``.
    """

    sample_id: str
    repetition: int
    tags: list[str]
    metric: str = Field(description="the metric, or 'system-under-test'")
    status: Literal["failed", "errored"]
    score: float | None
    threshold: float | None
    reason: str
    input: str | None = None
    expected: str | None = None
    actual: str | None = None
    tools: list[str] | None = Field(
        default=None, description="tool names the agent called, in order (when recorded)"
    )


class Counts(StrictModel):
    """How many samples a paired comparison joined, added, removed, flipped and regressed."""

    compared: int
    added: int
    removed: int
    pass_to_fail: int
    fail_to_pass: int
    new_failures: int
    regressions: int


class Regression(StrictModel):
    """A statistic that dropped beyond noise."""

    metric: str
    scope: Literal["overall", "cohort"]
    cohort_label: str | None
    statistic: Literal["mean", "pass_rate"]
    reference: float
    current: float
    delta: float
    p_value: float
    p_adjusted: float
    mdd: float | None
    message: str


class ComparisonSummary(StrictModel):
    """The digest of a baseline comparison that a report embeds; the full document is
    ``assay.comparison.v1`` (:class:`assay.report.comparison_model.Comparison`)."""

    schema_version: Literal["assay.comparison.v1"] = COMPARISON_SCHEMA
    reference_run_id: str
    join_key: Literal["row_hash", "id"]
    comparable: bool
    alpha: float
    macro_f1_delta: float | None
    pass_rate_delta: float | None
    counts: Counts
    regressions: list[Regression]


class ConversationMetric(StrictModel):
    """One metric over the turns of one conversation."""

    name: str
    scored: int = Field(description="turns the metric scored")
    errored: int = Field(description="turns the metric could not score")
    mean: float | None = Field(description="mean over the scored turns; null when none")
    min: float | None = Field(description="lowest scored turn; null when none")


class Conversation(StrictModel):
    """One conversation (one repetition): its turns' scores aggregated per metric."""

    id: str
    repetition: int
    turns: int = Field(description="turns of this conversation in the run")
    passed: bool = Field(description="every turn passed (no error, every metric >= threshold)")
    sut_errors: int = Field(description="turns the system under test failed (or never asked)")
    metrics: list[ConversationMetric]


class Report(StrictModel):
    """A complete evaluation report."""

    schema_version: Literal["assay.report.v2"] = REPORT_SCHEMA
    dataset: DatasetInfo
    run: RunInfo
    summary: Summary
    metrics: list[MetricAggregate]
    cohorts: list[Cohort]
    usage: Usage
    repetitions: Repetitions | None = None
    budget: Budget | None = None
    gate: dict[str, Any] | None = Field(
        default=None, description="gate outcome (assay.compare.gate), when one ran"
    )
    comparison: ComparisonSummary | None = Field(
        default=None, description="baseline comparison summary, when one ran"
    )
    adversarial: Compliance | None = Field(
        default=None, description="compliance summary when the dataset has adversarial samples"
    )
    conversations: list[Conversation] | None = Field(
        default=None,
        description="per conversation: turns' scores per metric (mean and min), in dataset order",
    )
    judges: list[JudgeCalibration] | None = Field(
        default=None,
        description="per judge metric: the judge, its agreement with people on a calibration "
        "set and the pass rate corrected for it",
    )
    warnings: list[str] = Field(default_factory=list)
    failing_rows: list[FailingRow] = Field(
        default_factory=list,
        description=(
            "failed and errored (execution, metric) pairs with their texts, in dataset order"
        ),
    )
    failing_rows_omitted: int = Field(
        default=0, description="failing rows beyond the listing cap (counted, not listed)"
    )
    redacted: bool = Field(default=False, description="texts removed with --redact")
    failures: list[Failure]
    rows: list[Row]

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: object) -> object:
        """A v1 document (where ``failed`` counted errored rows) is read as v2."""
        return upgrade_report(data)

    def metric(self, name: str) -> MetricAggregate:
        for aggregate in self.metrics:
            if aggregate.name == name:
                return aggregate
        raise KeyError(name)

    def to_dataframe(self) -> pandas.DataFrame:
        """One pandas row per (execution, metric): sample, tags, metric, status, score,
        threshold and reason (``pip install 'assay[pandas]'``)."""
        from assay.report.frame import to_dataframe

        return to_dataframe(self)


def build_deferred() -> None:
    """Build every report model's validator and serializer now, not at its first use (they are
    deferred: see :class:`~assay.report.strict.StrictModel`). ``assay run`` calls this in its
    background preload, so the end of a run that waited on replies does not build them."""
    for value in list(globals().values()):
        if isinstance(value, type) and issubclass(value, StrictModel):
            value.model_rebuild()
