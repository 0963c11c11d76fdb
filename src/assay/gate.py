"""The merge gate: rules, where they come from, how a report is judged, and exit codes.

Rules come from three places, later ones overriding earlier ones key by key:
``assay.toml`` ``[gate]`` < the dataset's ``gate:`` block < command-line flags. Every rule that
fails is listed with its actual value and threshold; an undefined actual (``None``) fails a
floor and prints ``n/a``. Regressions come from a paired :class:`~assay.comparison.Comparison`
and count only beyond noise; without a comparison the regression rule is skipped with a
warning, so a missing baseline never turns a green run red.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.errors import UsageError

if TYPE_CHECKING:
    from assay.report.comparison_model import Comparison
    from assay.report.model import Report

GATE_SCHEMA: Final = "assay.gate.v1"

# The exit-code table (docs/gating.md); the same values as assay.cli.
EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2

_EPSILON = 1e-9  # float noise: a mean of 0.6499999999 meets a 0.65 floor
FLOOR_KEYS = ("min_mean", "min_pass_rate", "min_p50", "min_p95", "min_coverage")
_FLOOR_STAT = {
    "min_mean": "mean",
    "min_pass_rate": "pass_rate",
    "min_p50": "p50",
    "min_p95": "p95",
    "min_coverage": "coverage",
}
_TOP_KEYS = {
    "min_macro_f1",
    "max_failures",
    "max_regressions",
    "max_flips",
    "max_drop",
    "metrics",
    "cohorts",
    *FLOOR_KEYS,
}
DROP_STATS = ("mean", "p50", "p95", "pass_rate")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MetricFloors(_Model):
    """Lower bounds on one metric's aggregates (each in [0, 1]; None = not checked)."""

    min_mean: float | None = None
    min_pass_rate: float | None = None
    min_p50: float | None = None
    min_p95: float | None = None
    min_coverage: float | None = Field(default=None, description="scored / attempted")

    def merged(self, other: MetricFloors) -> MetricFloors:
        """These floors with every floor that ``other`` sets taken from ``other``."""
        return self.model_copy(update=other.model_dump(exclude_none=True))


class GateRules(_Model):
    """What a report must meet to pass.

    Unset rules are not checked, with two defaults: captured failures fail the gate unless
    ``max_failures`` allows them, and when a comparison ran ``max_regressions`` is 0.
    """

    min_macro_f1: float | None = None
    metrics: dict[str, MetricFloors] = Field(default_factory=dict)
    cohorts: dict[str, dict[str, MetricFloors]] = Field(
        default_factory=dict, description="cohort tag (or '(untagged)') -> metric -> floors"
    )
    max_failures: int | None = Field(default=None, description="failures allowed; 0 when unset")
    max_regressions: int | None = Field(
        default=None, description="regressions allowed; 0 when a comparison ran and this is unset"
    )
    max_flips: int | None = Field(
        default=None,
        description="rows allowed to go from pass to fail (or error); 0 when a comparison ran",
    )
    max_drop: dict[str, float] = Field(
        default_factory=dict,
        description="target ('macro_f1' or 'metric[:mean|p50|p95|pass_rate]') -> largest drop",
    )

    def merged(self, other: GateRules) -> GateRules:
        """Overlay ``other`` on these rules, key by key (``other`` wins where it says something)."""
        metrics = dict(self.metrics)
        for name, floors in other.metrics.items():
            metrics[name] = metrics[name].merged(floors) if name in metrics else floors
        cohorts = {tag: dict(per_metric) for tag, per_metric in self.cohorts.items()}
        for tag, per_metric in other.cohorts.items():
            target = cohorts.setdefault(tag, {})
            for name, floors in per_metric.items():
                target[name] = target[name].merged(floors) if name in target else floors
        scalars = other.model_dump(
            include={"min_macro_f1", "max_failures", "max_regressions", "max_flips"},
            exclude_none=True,
        )
        drops = {**self.max_drop, **other.max_drop}
        return self.model_copy(
            update={**scalars, "metrics": metrics, "cohorts": cohorts, "max_drop": drops}
        )


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


# --------------------------------------------------------------------------- loading rules


def _fraction(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise UsageError(f"{where} must be a number between 0 and 1; got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f"{where} must be a number between 0 and 1; got {value!r}") from None
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise UsageError(f"{where} must be a number between 0 and 1; got {value!r}")
    return number


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise UsageError(f"{where} must be a whole number >= 0; got {value!r}")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or value < 0:
        raise UsageError(f"{where} must be a whole number >= 0; got {value!r}")
    return value


def _floors(raw: Any, where: str) -> MetricFloors:
    if not isinstance(raw, Mapping):
        raise UsageError(f"{where} must be a mapping of floors ({', '.join(FLOOR_KEYS)})")
    unknown = sorted(str(key) for key in raw if key not in FLOOR_KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown floor '{unknown[0]}' (known: {', '.join(FLOOR_KEYS)})")
    return MetricFloors(
        **{
            key: _fraction(value, f"{where}.{key}")
            for key, value in raw.items()
            if value is not None
        }
    )


def rules_from_mapping(raw: Mapping[str, Any] | None, source: str) -> GateRules:
    """Rules from a ``gate`` mapping (dataset YAML block or ``[gate]`` table).

    Accepted keys: ``min_macro_f1``, ``max_failures``, ``max_regressions``,
    ``metrics: {metric: {min_mean, min_pass_rate, min_p50, min_p95, min_coverage}}``,
    ``cohorts: {tag: {metric: floors}}``, and the shorthand ``min_pass_rate: {metric: x}``
    (likewise for every floor).
    """
    if raw is None:
        return GateRules()
    if not isinstance(raw, Mapping):
        raise UsageError(f"{source} must be a mapping; got {type(raw).__name__}")
    unknown = sorted(str(key) for key in raw if key not in _TOP_KEYS)
    if unknown:
        raise UsageError(
            f"{source}: unknown gate rule '{unknown[0]}' (known: {', '.join(sorted(_TOP_KEYS))})"
        )
    rules = GateRules()
    if raw.get("min_macro_f1") is not None:
        rules.min_macro_f1 = _fraction(raw["min_macro_f1"], f"{source}.min_macro_f1")
    for key in ("max_failures", "max_regressions", "max_flips"):
        if raw.get(key) is not None:
            setattr(rules, key, _count(raw[key], f"{source}.{key}"))
    drops = raw.get("max_drop") or {}
    if not isinstance(drops, Mapping):
        raise UsageError(f"{source}.max_drop must map targets to drops, e.g. {{macro_f1: 0.05}}")
    rules.max_drop = {
        _drop_target(str(k), f"{source}.max_drop"): _fraction(v, f"{source}.max_drop.{k}")
        for k, v in drops.items()
    }
    metrics: dict[str, MetricFloors] = {}
    raw_metrics = raw.get("metrics") or {}
    if not isinstance(raw_metrics, Mapping):
        raise UsageError(f"{source}.metrics must map metric names to floors")
    for name, floors in raw_metrics.items():
        metrics[str(name)] = _floors(floors, f"{source}.metrics.{name}")
    for key in FLOOR_KEYS:
        shorthand = raw.get(key)
        if shorthand is None:
            continue
        if not isinstance(shorthand, Mapping):
            raise UsageError(
                f"{source}.{key} must map metric names to numbers, e.g. {{exact-match: 0.8}}"
            )
        for name, value in shorthand.items():
            floors = MetricFloors(**{key: _fraction(value, f"{source}.{key}.{name}")})
            metrics[str(name)] = (
                metrics[str(name)].merged(floors) if str(name) in metrics else floors
            )
    rules.metrics = metrics
    raw_cohorts = raw.get("cohorts") or {}
    if not isinstance(raw_cohorts, Mapping):
        raise UsageError(f"{source}.cohorts must map cohort tags to metric floors")
    for tag, per_metric in raw_cohorts.items():
        if not isinstance(per_metric, Mapping):
            raise UsageError(f"{source}.cohorts.{tag} must map metric names to floors")
        rules.cohorts[str(tag)] = {
            str(name): _floors(floors, f"{source}.cohorts.{tag}.{name}")
            for name, floors in per_metric.items()
        }
    return rules


def _metric_assignments(values: Any, flag: str) -> dict[str, float]:
    """``["exact-match=0.8", ...]`` -> ``{"exact-match": 0.8}``."""
    if values is None:
        return {}
    if isinstance(values, str):
        values = [values]
    parsed: dict[str, float] = {}
    for item in values:
        name, sep, number = str(item).rpartition("=")
        if not sep or not name.strip():
            raise UsageError(
                f"--{flag.replace('_', '-')} expects METRIC=VALUE (e.g. exact-match=0.8); got {item!r}"
            )
        parsed[name.strip()] = _fraction(
            number.strip(), f"--{flag.replace('_', '-')} {name.strip()}"
        )
    return parsed


def _drop_target(target: str, where: str) -> str:
    """A max_drop target in canonical form: 'macro_f1' or 'metric:stat' (stat defaults to mean)."""
    if target == "macro_f1":
        return target
    metric, _, stat = target.partition(":")
    stat = stat or "mean"
    if not metric or stat not in DROP_STATS:
        raise UsageError(
            f"{where} {target!r}: a target is 'macro_f1' or 'METRIC[:mean|p50|p95|pass_rate]'"
        )
    return f"{metric}:{stat}"


def rules_from_cli(cli: Mapping[str, Any] | None) -> GateRules:
    """Rules from command-line values; unset flags (None / empty) say nothing."""
    if not cli:
        return GateRules()
    known = {"min_macro_f1", "max_failures", "max_regressions", "max_flips", "max_drop"}
    known |= set(FLOOR_KEYS)
    unknown = sorted(key for key in cli if key not in known)
    if unknown:
        raise UsageError(f"unknown gate option '{unknown[0]}'")
    rules = GateRules()
    if cli.get("min_macro_f1") is not None:
        rules.min_macro_f1 = _fraction(cli["min_macro_f1"], "--min-macro-f1")
    for key in ("max_failures", "max_regressions", "max_flips"):
        if cli.get(key) is not None:
            setattr(rules, key, _count(cli[key], f"--{key.replace('_', '-')}"))
    rules.max_drop = {
        _drop_target(target, "--max-drop"): value
        for target, value in _metric_assignments(cli.get("max_drop"), "max_drop").items()
    }
    for key in FLOOR_KEYS:
        for name, value in _metric_assignments(cli.get(key), key).items():
            floors = MetricFloors(**{key: value})
            rules.metrics[name] = (
                rules.metrics[name].merged(floors) if name in rules.metrics else floors
            )
    return rules


def _read_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise UsageError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None


def load_rules(
    *,
    cli: Mapping[str, Any] | None = None,
    dataset_gate: Mapping[str, Any] | None = None,
    config_path: Path | None = None,
) -> GateRules:
    """Merge ``assay.toml [gate]`` < dataset ``gate:`` < CLI flags into one rule set."""
    rules = GateRules()
    if config_path is not None:
        table = _read_toml(Path(config_path)).get("gate")
        rules = rules.merged(rules_from_mapping(table, f"{config_path} [gate]"))
    if dataset_gate is not None:
        rules = rules.merged(rules_from_mapping(dataset_gate, "dataset gate"))
    return rules.merged(rules_from_cli(cli))


def find_config(start: Path | None = None) -> Path | None:
    """The nearest ``assay.toml`` in ``start`` (default: the working directory) or a parent."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "assay.toml"
        if candidate.is_file():
            return candidate
    return None


# --------------------------------------------------------------------------- evaluation


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


def evaluate(report: Report, rules: GateRules, comparison: Comparison | None = None) -> GateResult:
    """Check every rule against ``report`` (and ``comparison`` for regressions)."""
    failures: list[RuleFailure] = []
    warnings: list[str] = []
    checked = 0

    def check(failure: RuleFailure | None) -> None:
        nonlocal checked
        checked += 1
        if failure is not None:
            failures.append(failure)

    if rules.min_macro_f1 is not None:
        check(
            _floor_failure(
                "min_macro_f1", "macro-F1", "macro-F1", report.summary.macro_f1, rules.min_macro_f1
            )
        )

    aggregates = {item.name: item for item in report.metrics}
    for name, floors in rules.metrics.items():
        aggregate = aggregates.get(name)
        for key in FLOOR_KEYS:
            threshold = getattr(floors, key)
            if threshold is None:
                continue
            stat = _FLOOR_STAT[key]
            actual = getattr(aggregate, stat) if aggregate is not None else None
            label = f"{name} {stat.replace('_', '-')}"
            if aggregate is None:
                label = f"{name} {stat.replace('_', '-')} (metric not in the report)"
            check(_floor_failure(key, name, label, actual, threshold))

    for tag, per_metric in rules.cohorts.items():
        cohort = _cohort(report, tag)
        for name, floors in per_metric.items():
            metric = None
            if cohort is not None:
                metric = next((item for item in cohort.metrics if item.name == name), None)
            for key in FLOOR_KEYS:
                threshold = getattr(floors, key)
                if threshold is None:
                    continue
                stat = _FLOOR_STAT[key]
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
                check(_floor_failure(key, f"{tag}/{name}", label, actual, threshold))

    allowed_failures = 0 if rules.max_failures is None else rules.max_failures
    total = report.summary.total_failures
    check(
        RuleFailure(
            rule="max_failures",
            subject="failures",
            actual=float(total),
            threshold=float(allowed_failures),
            message=f"{total} failure{'s' if total != 1 else ''} captured (allowed: {allowed_failures})",
        )
        if total > allowed_failures
        else None
    )

    allowed = rules.max_regressions
    if comparison is None:
        if allowed is not None:
            warnings.append("no baseline to compare against: the regression rule was skipped")
    elif not comparison.comparable:
        warnings.append(
            f"the comparison is not usable ({comparison.incomparable_reason}): regressions not gated"
        )
    else:
        allowed = 0 if allowed is None else allowed
        count = comparison.regression_count
        labels = dict.fromkeys(
            item.metric
            if item.cohort_label is None
            else f"{item.metric} in cohort '{item.cohort_label}'"
            for item in comparison.regressions
        )
        detail = ", ".join(labels)
        check(
            RuleFailure(
                rule="max_regressions",
                subject=f"baseline {comparison.reference.run_id}",
                actual=float(count),
                threshold=float(allowed),
                message=(
                    f"{count} regression{'s' if count != 1 else ''} beyond noise against "
                    f"{comparison.reference.run_id} (allowed: {allowed}): {detail}"
                ),
            )
            if count > allowed
            else None
        )
    if comparison is not None and comparison.comparable:
        allowed_flips = _allowed_flips(rules, comparison)
        if allowed_flips is not None:
            check(_flip_failure(comparison, allowed_flips))
        for target, allowed_drop in rules.max_drop.items():
            check(_drop_failure(report, comparison, target, allowed_drop))
        warnings.extend(comparison.warnings)
    elif comparison is None and (rules.max_flips is not None or rules.max_drop):
        warnings.append("no baseline to compare against: the flip and drop rules were skipped")
    return GateResult(passed=not failures, checked=checked, failures=failures, warnings=warnings)


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
