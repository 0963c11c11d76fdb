"""The bootstrap part of the calibration result contract (``assay.calibration.v1``): the
intervals of the aggregates and criteria, the opt-in replicate values, and the paired
judge-vs-judge differences. :mod:`assay.calibration.result` re-exports every model here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Interval(_Model):
    """A bootstrap interval; None where the statistic was undefined in every resample."""

    estimate: float | None
    percentile: tuple[float, float] | None
    bca: tuple[float, float] | None
    standard_error: float | None
    n_defined: int = Field(description="resamples in which the statistic was defined")


class CriterionIntervals(_Model):
    name: str
    accuracy: Interval
    kappa: Interval
    weighted_kappa: Interval | None = None


class BootstrapDistribution(_Model):
    """The raw replicate values (opt-in): one entry per resample, None where undefined."""

    accuracy_micro: list[float | None]
    mean_kappa_macro: list[float | None]
    rmse: list[float | None]


class BootstrapResult(_Model):
    """Item-level (cluster) bootstrap of the consensus block: one index draw per resample."""

    n_resamples: int
    seed: int | None
    confidence_level: float
    accuracy_micro: Interval
    mean_kappa_macro: Interval
    rmse: Interval
    criteria: list[CriterionIntervals]
    bootstrap_distribution: BootstrapDistribution | None = Field(
        default=None, description="every resample's value; only with --bootstrap-distribution"
    )


class JudgeComparison(_Model):
    """Paired bootstrap difference ``judge_a - judge_b`` of one aggregate (same resamples)."""

    judge_a: str
    judge_b: str
    statistic: Literal["accuracy_micro", "mean_kappa_macro"]
    difference: Interval
    excludes_zero: bool | None = Field(
        description="the percentile interval lies entirely above or below 0; None when undefined"
    )
