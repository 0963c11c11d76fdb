"""Max-drop rules: how far a report number may fall below a baseline's (padosoft semantics).

A target is ``macro_f1`` or ``metric[:mean|p50|p95|pass_rate]`` (a bare metric means its mean).
``--max-drop TARGET=DROP`` sets the allowed drop as a fraction in [0, 1] (0.05 = five
percentage points of a pass-rate), parsed by the run gate's own parser
(``assay.compare.gate_rules``);
macro-F1 is always checked (default 0.05). A check fails when
``max(0, baseline - current) > max_drop + 1e-9``; a value missing on either side fails as
``missing-value``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from assay.compare.gate_rules import DROP_STATS as AGGREGATES
from assay.compare.gate_rules import rules_from_cli
from assay.report.model import Report

MACRO_F1 = "macro_f1"
DEFAULT_MAX_DROP = 0.05
EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class DropRule:
    """One target and the drop (a ratio in [0, 1]) it may take."""

    target: str
    max_drop: float


def parse_rules(items: Iterable[str]) -> list[DropRule]:
    """Rules from ``--max-drop TARGET=DROP`` values, parsed as ``assay run``'s gate parses them;
    macro-F1 is always checked (default 0.05)."""
    drops = rules_from_cli({"max_drop": list(items)}).max_drop
    rules = {MACRO_F1: DEFAULT_MAX_DROP, **drops}
    return [DropRule(target, drop) for target, drop in rules.items()]


def report_values(report: Report) -> dict[str, float | None]:
    """Every target's value in ``report``: macro-F1 and each metric's four aggregates."""
    values: dict[str, float | None] = {MACRO_F1: report.summary.macro_f1}
    for metric in report.metrics:
        for aggregate in AGGREGATES:
            values[f"{metric.name}:{aggregate}"] = getattr(metric, aggregate)
    return values


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: str
    baseline_score: float | None
    current_score: float | None
    drop: float | None
    max_drop: float
    status: Literal["pass", "fail", "missing-value"]


def check(
    rule: DropRule, baseline: Mapping[str, float | None], current: Mapping[str, float | None]
) -> Check:
    """One rule against a baseline's and this run's values."""
    before, after = baseline.get(rule.target), current.get(rule.target)
    if before is None or after is None:
        return Check(
            target=rule.target,
            baseline_score=before,
            current_score=after,
            drop=None,
            max_drop=rule.max_drop,
            status="missing-value",
        )
    drop = round(max(0.0, before - after), 10)
    status: Literal["pass", "fail"] = "fail" if drop > rule.max_drop + EPSILON else "pass"
    return Check(
        target=rule.target,
        baseline_score=before,
        current_score=after,
        drop=drop,
        max_drop=rule.max_drop,
        status=status,
    )
