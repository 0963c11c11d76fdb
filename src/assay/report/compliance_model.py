"""The adversarial lane's compliance summary in a report: per category and per framework, how
many adversarial samples passed, failed or errored (see docs/adversarial.md)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from assay.report.strict import StrictModel


class ComplianceSlice(StrictModel):
    """Outcome of the adversarial samples in one category or framework."""

    samples: int
    executions: int
    passed: int
    failed: int = Field(description="executions with a metric scored below its threshold")
    errored: int = Field(description="executions not failed but with an error (not scored)")
    pass_rate: float | None = Field(description="passed / (passed + failed)")
    worst_severity_failed: str | None = Field(
        description="worst severity (critical > high > medium > low) among failed samples"
    )


class CategoryCompliance(ComplianceSlice):
    category: str
    label: str
    severity: str = Field(description="worst severity declared by the category's samples")
    compliance_frameworks: list[str]
    failed_metrics: dict[str, int] = Field(
        default_factory=dict, description="metric -> executions it failed in this category"
    )


class FrameworkCompliance(ComplianceSlice):
    framework: str
    categories: list[str]


class Compliance(StrictModel):
    """The adversarial lane's compliance summary (samples with metadata.adversarial)."""

    total_samples: int
    categories: list[CategoryCompliance]
    frameworks: list[FrameworkCompliance]
    drift: dict[str, Any] | None = Field(
        default=None, description="drift gate outcome (assay adversarial), when one ran"
    )
