"""The judge block of a report: how far each judge metric's judge can be trusted.

For every metric scored by an LLM judge the report names the judge (model, prompt, options,
and a key over the three), and, when the metric names a calibration set, the judge's measured
agreement with people on it (Cohen's kappa, or quadratic-weighted kappa for an ordinal
criterion, with a bootstrap interval and n), its sensitivity and specificity on the pass
decision, and the run's pass rate corrected for them (Rogan-Gladen). A judge metric with no
calibration, or one that could not be measured, says so in ``note``: one line.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from assay.report.strict import StrictModel

CalibrationStatus = Literal["measured", "cached", "missing", "errored", "stale"]


class JudgeIdentity(StrictModel):
    """What decides a judge's verdicts: its model, prompt template and options."""

    model: str
    prompt: str = Field(description="the prompt template's version tag (name and hash)")
    options: str = Field(description="hash of the metric's other options")
    key: str = Field(description="hash over model, prompt and options: equal keys, same judge")


class JudgeAgreement(StrictModel):
    """The judge against people on one criterion of the calibration set."""

    criterion: str
    kind: Literal["binary", "ordinal", "nominal"]
    statistic: Literal["kappa", "quadratic-weighted kappa"]
    value: float | None
    low: float | None = Field(description="bootstrap percentile interval; null when undefined")
    high: float | None
    confidence: float
    n: int = Field(description="labelled items the statistic used")


class PassAgreement(StrictModel):
    """The judge's pass decision (score >= threshold) against the humans' on the set."""

    true_pass: int = Field(description="people pass, judge passes")
    false_fail: int = Field(description="people pass, judge fails")
    false_pass: int = Field(description="people fail, judge passes")
    true_fail: int = Field(description="people fail, judge fails")
    sensitivity: float | None
    specificity: float | None


class CorrectedPassRate(StrictModel):
    """The run's pass rate, raw and corrected for the judge's measured errors."""

    raw: float | None
    n: int = Field(description="scored executions of the run")
    corrected: float | None = Field(description="Rogan-Gladen; null when Se + Sp <= 1")
    low: float | None = Field(description="interval with the calibration's uncertainty in it")
    high: float | None
    confidence: float
    method: str = "Rogan-Gladen, delta-method interval (Agresti-Coull adjusted)"


class JudgeCalibration(StrictModel):
    """One judge metric: its judge, its calibration and what that does to its pass rate."""

    metric: str
    judge: JudgeIdentity
    status: CalibrationStatus
    note: str = Field(description="one line a person reads first")
    calibration: str | None = Field(default=None, description="the calibration set")
    labels_hash: str | None = None
    n_labelled: int = 0
    n_judged: int = Field(default=0, description="labelled items the judge scored")
    agreement: list[JudgeAgreement] = Field(default_factory=list)
    lowest_bound: float | None = Field(
        default=None,
        description="the lowest interval bound over the criteria: what min_judge_agreement checks",
    )
    pass_agreement: PassAgreement | None = None
    pass_rate: CorrectedPassRate | None = None
    measured_at: str | None = None


class JudgeChange(StrictModel):
    """A judge metric scored by different judges in the two runs of a comparison."""

    metric: str
    reference: JudgeIdentity | None = Field(description="null: the reference names no judge")
    current: JudgeIdentity | None
    changed: list[Literal["model", "prompt", "options"]] = Field(
        description="what differs; empty when one side does not name its judge"
    )
