"""Gate rules and where they come from.

Rules come from three places, later ones overriding earlier ones key by key:
``assay.toml`` ``[gate]`` < the dataset's ``gate:`` block < command-line flags
(:func:`load_rules`). How a report is judged against them: :mod:`assay.compare.gate`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.compare.judge_gate import parse_agreement, parse_required
from assay.errors import UsageError
from assay.store.project import read_toml

FLOOR_KEYS = ("min_mean", "min_pass_rate", "min_p50", "min_p95", "min_coverage")
FLOOR_STAT = {  # the aggregate each floor bounds
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
    "min_judge_agreement",
    "require_calibration",
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
    min_judge_agreement: dict[str, float] = Field(
        default_factory=dict,
        description="judge metric ('*': every one) -> least lowest bound of its agreement",
    )
    require_calibration: list[str] = Field(
        default_factory=list, description="judge metrics ('*': every one) that need a calibration"
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
        judges = {
            "min_judge_agreement": {**self.min_judge_agreement, **other.min_judge_agreement},
            "require_calibration": other.require_calibration or self.require_calibration,
        }
        return self.model_copy(
            update={**scalars, "metrics": metrics, "cohorts": cohorts, "max_drop": drops, **judges}
        )


def _fraction(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise UsageError(f"{where} must be a number between 0 and 1; got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f"{where} must be a number between 0 and 1; got {value!r}") from None
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise UsageError(f"{where} must be a number between 0 and 1; got {value!r}")
    return number


def _count(value: object, where: str) -> int:
    if isinstance(value, bool):
        raise UsageError(f"{where} must be a whole number >= 0; got {value!r}")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or value < 0:
        raise UsageError(f"{where} must be a whole number >= 0; got {value!r}")
    return value


def _floors(raw: object, where: str) -> MetricFloors:
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
    rules.max_drop = _drops(raw.get("max_drop") or {}, source)
    rules.metrics = _metric_floors(raw, source)
    rules.cohorts = _cohort_floors(raw.get("cohorts") or {}, source)
    if raw.get("min_judge_agreement") is not None:
        rules.min_judge_agreement = parse_agreement(raw["min_judge_agreement"], source)
    if raw.get("require_calibration") is not None:
        rules.require_calibration = parse_required(raw["require_calibration"], source)
    return rules


def _drops(drops: object, source: str) -> dict[str, float]:
    if not isinstance(drops, Mapping):
        raise UsageError(f"{source}.max_drop must map targets to drops, e.g. {{macro_f1: 0.05}}")
    return {
        _drop_target(str(k), f"{source}.max_drop"): _fraction(v, f"{source}.max_drop.{k}")
        for k, v in drops.items()
    }


def _metric_floors(raw: Mapping[str, Any], source: str) -> dict[str, MetricFloors]:
    """``metrics: {name: floors}`` merged with the shorthands ``min_mean: {name: x}``, ..."""
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
    return metrics


def _cohort_floors(raw_cohorts: object, source: str) -> dict[str, dict[str, MetricFloors]]:
    if not isinstance(raw_cohorts, Mapping):
        raise UsageError(f"{source}.cohorts must map cohort tags to metric floors")
    cohorts: dict[str, dict[str, MetricFloors]] = {}
    for tag, per_metric in raw_cohorts.items():
        if not isinstance(per_metric, Mapping):
            raise UsageError(f"{source}.cohorts.{tag} must map metric names to floors")
        cohorts[str(tag)] = {
            str(name): _floors(floors, f"{source}.cohorts.{tag}.{name}")
            for name, floors in per_metric.items()
        }
    return cohorts


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
                f"--{flag.replace('_', '-')} expects METRIC=VALUE (e.g. exact-match=0.8); "
                f"got {item!r}"
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


def load_rules(
    *,
    cli: Mapping[str, Any] | None = None,
    dataset_gate: Mapping[str, Any] | None = None,
    config_path: Path | None = None,
) -> GateRules:
    """Merge ``assay.toml [gate]`` < dataset ``gate:`` < CLI flags into one rule set."""
    rules = GateRules()
    if config_path is not None:
        table = read_toml(Path(config_path)).get("gate")
        rules = rules.merged(rules_from_mapping(table, f"{config_path} [gate]"))
    if dataset_gate is not None:
        rules = rules.merged(rules_from_mapping(dataset_gate, "dataset gate"))
    return rules.merged(rules_from_cli(cli))
