"""Gate rules on the judge itself: ``min_judge_agreement`` and ``require_calibration``.

``min_judge_agreement`` (a number for every judge metric, or ``{metric: number}``) fails the
gate when the lowest bound of a judge's agreement interval over its criteria is below it: a
judge is trusted only as far as its worst-measured criterion, at the low end of what the
calibration set allows. A judge metric without a measured calibration fails it too (the
agreement is n/a). ``require_calibration`` (true, or a list of metrics) fails the gate for a
judge metric whose calibration is missing, could not be measured, or is stale (an earlier
measurement by another judge or on other labels, shown but never trusted by the gate).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from assay.errors import UsageError

if TYPE_CHECKING:
    from assay.compare.gate import RuleFailure
    from assay.report.judge_model import JudgeCalibration
    from assay.report.model import Report

__all__ = ["EVERY_JUDGE", "judge_checks", "parse_agreement", "parse_required"]

EVERY_JUDGE = "*"
_UNMEASURED = ("missing", "errored", "stale")


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{where} must be a number between -1 and 1; got {value!r}")
    number = float(value)
    if not -1.0 <= number <= 1.0:  # kappa lies in [-1, 1]; NaN fails this too
        raise UsageError(f"{where} must be a number between -1 and 1; got {value!r}")
    return number


def parse_agreement(raw: object, source: str) -> dict[str, float]:
    """``min_judge_agreement``: a number (every judge metric) or ``{metric: number}``."""
    where = f"{source}.min_judge_agreement"
    if isinstance(raw, Mapping):
        return {str(name): _number(value, f"{where}.{name}") for name, value in raw.items()}
    return {EVERY_JUDGE: _number(raw, where)}


def parse_required(raw: object, source: str) -> list[str]:
    """``require_calibration``: true (every judge metric), false, or a list of metric names."""
    if isinstance(raw, bool):
        return [EVERY_JUDGE] if raw else []
    if isinstance(raw, list) and all(isinstance(name, str) and name for name in raw):
        return list(raw)
    raise UsageError(
        f"{source}.require_calibration must be true, false or a list of metric names; got {raw!r}"
    )


def _blocks(report: Report, name: str) -> list[JudgeCalibration]:
    blocks = report.judges or []
    return list(blocks) if name == EVERY_JUDGE else [b for b in blocks if b.metric == name]


def _agreement_failure(
    block: JudgeCalibration | None, name: str, floor: float
) -> RuleFailure | None:
    from assay.compare.gate import RuleFailure

    actual = None if block is None else block.lowest_bound
    if actual is not None and actual >= floor - 1e-9:
        return None
    why = (
        "metric has no judge in the report"
        if block is None
        else f"calibration {block.status}"
        if actual is None
        else "lowest interval bound"
    )
    shown = "n/a" if actual is None else f"{actual:.4f}"
    return RuleFailure(
        rule="min_judge_agreement",
        subject=name,
        actual=actual,
        threshold=floor,
        message=f"{name} judge agreement {shown} ({why}) is below the minimum {floor:.4f}",
    )


def _required_failure(block: JudgeCalibration) -> RuleFailure | None:
    from assay.compare.gate import RuleFailure

    if block.status not in _UNMEASURED:
        return None
    return RuleFailure(
        rule="require_calibration",
        subject=block.metric,
        actual=None,
        threshold=1.0,
        message=f"{block.metric}: the judge has no measured calibration ({block.note})",
    )


def judge_checks(
    report: Report, agreement: Mapping[str, float], required: list[str]
) -> list[RuleFailure | None]:
    """One entry per judge rule checked (None: it held)."""
    checks: list[RuleFailure | None] = []
    for name, floor in agreement.items():
        blocks = _blocks(report, name)
        if not blocks and name != EVERY_JUDGE:
            checks.append(_agreement_failure(None, name, floor))
        checks += [_agreement_failure(b, b.metric, floor) for b in blocks]
    for name in required:
        checks += [_required_failure(b) for b in _blocks(report, name)]
    return checks
