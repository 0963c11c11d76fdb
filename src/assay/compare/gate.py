"""The merge gate: how a report is judged against its rules (:mod:`assay.compare.gate_rules`), and
exit
codes.

Every rule that
fails is listed with its actual value and threshold; an undefined actual (``None``) fails a
floor and prints ``n/a``. Regressions come from a paired
:class:`~assay.compare.comparison.Comparison`
and count only beyond noise; without a comparison the regression rule is skipped with a
warning, so a missing baseline never turns a green run red.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.compare.gate_rules import FLOOR_KEYS, FLOOR_STAT, GateRules, MetricFloors
from assay.compare.judge_gate import judge_checks

if TYPE_CHECKING:
    from assay.report.comparison_model import Comparison
    from assay.report.model import Report

GATE_SCHEMA: Final = "assay.gate.v1"

# The exit-code table (docs/gating.md); the same values as assay.cli.
EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2

_EPSILON = 1e-9  # float noise: a mean of 0.6499999999 meets a 0.65 floor


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RuleFailure(_Model):
    """One rule the report broke."""

    rule: str = Field(description="e.g. 'min_pass_rate', 'max_regressions'")
    subject: str = Field(
        description="what was measured, e.g. 'exact-match' or 'policy/exact-match'"
    )
    actual: float | None = Field(description="null when the statistic is undefined (n/a)")
    threshold: float
    message: str


class GateResult(_Model):
    """The gate's verdict (``assay.gate.v1``); safe to embed in a report's ``gate`` key."""

    schema_version: Literal["assay.gate.v1"] = GATE_SCHEMA
    passed: bool
    checked: int = Field(default=0, description="number of rules evaluated")
    failures: list[RuleFailure] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.passed else EXIT_GATE_FAILED


def _show(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _floor_failure(
    rule: str, subject: str, label: str, actual: float | None, threshold: float
) -> RuleFailure | None:
    if actual is not None and actual >= threshold - _EPSILON:
        return None
    return RuleFailure(
        rule=rule,
        subject=subject,
        actual=actual,
        threshold=threshold,
        message=f"{label} {_show(actual)} is below the minimum {threshold:.4f}",
    )


def _cohort(report: Report, tag: str) -> Any:
    for cohort in report.cohorts:
        if cohort.name == tag or (cohort.is_untagged and tag == cohort.label):
            return cohort
    return None


def check_gate(
    report: Report, rules: GateRules, comparison: Comparison | None = None
) -> GateResult:
    """Check every rule against ``report`` (and ``comparison`` for regressions)."""
    checks: list[RuleFailure | None] = []  # one entry per rule checked; None: it held
    warnings: list[str] = []
    if rules.min_macro_f1 is not None:
        checks.append(
            _floor_failure(
                "min_macro_f1", "macro-F1", "macro-F1", report.summary.macro_f1, rules.min_macro_f1
            )
        )
    checks += _metric_floor_checks(report, rules)
    checks += _cohort_floor_checks(report, rules)
    checks.append(_failures_check(report, rules))
    checks += judge_checks(report, rules.min_judge_agreement, rules.require_calibration)
    checks += _comparison_checks(report, rules, comparison, warnings)
    failures = [failure for failure in checks if failure is not None]
    return GateResult(
        passed=not failures, checked=len(checks), failures=failures, warnings=warnings
    )


def _metric_floor_checks(report: Report, rules: GateRules) -> list[RuleFailure | None]:
    aggregates = {item.name: item for item in report.metrics}
    checks: list[RuleFailure | None] = []
    for name, floors in rules.metrics.items():
        aggregate = aggregates.get(name)
        for key, threshold in _set_floors(floors):
            stat = FLOOR_STAT[key]
            actual = getattr(aggregate, stat) if aggregate is not None else None
            label = f"{name} {stat.replace('_', '-')}"
            if aggregate is None:
                label = f"{name} {stat.replace('_', '-')} (metric not in the report)"
            checks.append(_floor_failure(key, name, label, actual, threshold))
    return checks


def _cohort_floor_checks(report: Report, rules: GateRules) -> list[RuleFailure | None]:
    checks: list[RuleFailure | None] = []
    for tag, per_metric in rules.cohorts.items():
        cohort = _cohort(report, tag)
        for name, floors in per_metric.items():
            metric = None
            if cohort is not None:
                metric = next((item for item in cohort.metrics if item.name == name), None)
            for key, threshold in _set_floors(floors):
                stat = FLOOR_STAT[key]
                label = f"cohort '{tag}' {name} {stat.replace('_', '-')}"
                if key == "min_coverage":
                    actual = None
                    if metric is not None and cohort.samples > 0:
                        actual = metric.scored / cohort.samples
                else:
                    actual = getattr(metric, stat) if metric is not None else None
                if cohort is None:
                    label += " (cohort not in the report)"
                elif metric is None:
                    label += " (metric not in the cohort)"
                checks.append(_floor_failure(key, f"{tag}/{name}", label, actual, threshold))
    return checks


def _set_floors(floors: MetricFloors) -> list[tuple[str, float]]:
    """The floors a rule sets, in FLOOR_KEYS order."""
    found = [(key, getattr(floors, key)) for key in FLOOR_KEYS]
    return [(key, threshold) for key, threshold in found if threshold is not None]


def _failures_check(report: Report, rules: GateRules) -> RuleFailure | None:
    allowed = 0 if rules.max_failures is None else rules.max_failures
    total = report.summary.sut_errors + report.summary.metric_errors
    if total <= allowed:
        return None
    return RuleFailure(
        rule="max_failures",
        subject="failures",
        actual=float(total),
        threshold=float(allowed),
        message=(
            f"{total} error{'s' if total != 1 else ''} recorded: the system under test or a "
            f"metric could not answer or score (allowed: {allowed})"
        ),
    )


def _comparison_checks(
    report: Report, rules: GateRules, comparison: Comparison | None, warnings: list[str]
) -> list[RuleFailure | None]:
    """Regressions, flips and drops against the baseline; skipped (with a warning) without one."""
    if comparison is None:
        if rules.max_regressions is not None:
            warnings.append("no baseline to compare against: the regression rule was skipped")
        if rules.max_flips is not None or rules.max_drop:
            warnings.append("no baseline to compare against: the flip and drop rules were skipped")
        return []
    if not comparison.comparable:
        warnings.append(
            f"the comparison is not usable ({comparison.incomparable_reason}): "
            "regressions not gated"
        )
        return []
    checks = [_regression_failure(comparison, rules.max_regressions or 0)]
    allowed_flips = _allowed_flips(rules, comparison)
    if allowed_flips is not None:
        checks.append(_flip_failure(comparison, allowed_flips))
    for target, allowed_drop in rules.max_drop.items():
        checks.append(_drop_failure(report, comparison, target, allowed_drop))
    warnings.extend(comparison.warnings)
    return checks


def _regression_failure(comparison: Comparison, allowed: int) -> RuleFailure | None:
    """Regressions beyond noise (distinct metric and cohort pairs) above ``allowed``."""
    count = comparison.regression_count
    if count <= allowed:
        return None
    labels = dict.fromkeys(
        item.metric
        if item.cohort_label is None
        else f"{item.metric} in cohort '{item.cohort_label}'"
        for item in comparison.regressions
    )
    return RuleFailure(
        rule="max_regressions",
        subject=f"baseline {comparison.reference.run_id}",
        actual=float(count),
        threshold=float(allowed),
        message=(
            f"{count} regression{'s' if count != 1 else ''} beyond noise against "
            f"{comparison.reference.run_id} (allowed: {allowed}): {', '.join(labels)}"
        ),
    )


def _allowed_flips(rules: GateRules, comparison: Comparison) -> int | None:
    """``max_flips`` when set; else 0 for single-repetition runs, and no flip rule for runs with
    repetitions (a stochastic system: its rows are judged by the statistical rule)."""
    if rules.max_flips is not None:
        return rules.max_flips
    single = comparison.current.repetitions == 1 and comparison.reference.repetitions == 1
    return 0 if single else None


def _flip_failure(comparison: Comparison, allowed: int) -> RuleFailure | None:
    """Rows that went from pass to fail (or error): counted exactly, no test needed."""
    rows = comparison.pass_to_fail_rows()
    if len(rows) <= allowed:
        return None
    shown = ", ".join(rows[:10]) + (f", … and {len(rows) - 10} more" if len(rows) > 10 else "")
    return RuleFailure(
        rule="max_flips",
        subject=f"baseline {comparison.reference.run_id}",
        actual=float(len(rows)),
        threshold=float(allowed),
        message=f"{len(rows)} row(s) went from pass to fail (allowed: {allowed}): {shown}",
    )


def _drop_failure(
    report: Report, comparison: Comparison, target: str, allowed: float
) -> RuleFailure | None:
    """drop = max(0, baseline - current); fails above ``allowed``; a missing value fails."""
    if target == "macro_f1":
        before, after = comparison.reference.macro_f1, report.summary.macro_f1
    else:
        metric, _, stat = target.partition(":")
        before = comparison.reference_aggregates.get(metric, {}).get(stat)
        after = comparison.current_aggregates.get(metric, {}).get(stat)
    if before is None or after is None:
        return RuleFailure(
            rule="max_drop",
            subject=target,
            actual=None,
            threshold=allowed,
            message=f"{target}: no value in the {'baseline' if before is None else 'current run'}",
        )
    drop = max(0.0, before - after)
    if drop <= allowed + 1e-9:
        return None
    return RuleFailure(
        rule="max_drop",
        subject=target,
        actual=drop,
        threshold=allowed,
        message=f"{target} dropped {before:.4f} -> {after:.4f} ({drop:.4f} > allowed {allowed:g})",
    )


def exit_code(result: GateResult | None) -> int:
    """0 when there was no gate or it passed; 1 when a rule failed."""
    return EXIT_OK if result is None else result.exit_code


def render_text(result: GateResult) -> str:
    """Human lines: one per failed rule, then warnings; ends with the verdict."""
    lines = [f"gate: FAIL {item.rule} [{item.subject}]: {item.message}" for item in result.failures]
    lines += [f"gate: warning: {warning}" for warning in result.warnings]
    verdict = (
        "passed" if result.passed else f"failed ({len(result.failures)} of {result.checked} rules)"
    )
    lines.append(f"gate: {verdict}")
    return "\n".join(lines)
