"""Agent trajectory metrics: which tools an agent called, in what order, and with what approvals.

Semantics follow padosoft's trajectory family. Expectations come from
``metadata.trajectory.*`` (falling back to the metric's options); a missing trajectory is an
errored row, never a 0.0 or a 1.0, because without it the run cannot know what the agent did.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.errors import MetricConfigError, MetricError
from assay.metrics.base import MetricScore, type_name
from assay.trajectory import ToolCall, Trajectory, parse_trajectory

if TYPE_CHECKING:
    from assay.dataset import Sample
    from assay.outputs import Output

ORDER_MODES = ("subsequence", "exact", "any-order")


def fraction(satisfied: Sequence[bool]) -> float:
    """Share of true entries, rounded to 6 places; an empty list scores 1.0."""
    return round(sum(satisfied) / len(satisfied), 6) if satisfied else 1.0


def expectations(sample: Sample) -> Mapping[str, Any]:
    """``metadata.trajectory`` as a mapping (empty when absent)."""
    raw = sample.metadata.get("trajectory")
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise MetricError(f"metadata.trajectory must be a mapping; got {type_name(raw)}")
    return raw


def string_list(raw: Any, default: Sequence[str]) -> list[str]:
    """A string (one item) or a list (non-empty strings kept); nothing usable -> ``default``."""
    items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    kept = [item.strip() for item in items if isinstance(item, str) and item.strip()]
    return kept or list(default)


def trajectory_of(metric: str, sample: Sample, output: Output) -> Trajectory:
    """The answer's parsed trajectory; none recorded is an error for this row."""
    if output.trajectory is None:
        raise MetricError(
            f"metric '{metric}' needs a trajectory for sample '{sample.id}' and none was "
            "recorded; have the system under test call its recorder or return 'trajectory', "
            "or supply a 'trajectory' block in the saved outputs file"
        )
    return parse_trajectory(output.trajectory)


@dataclass(frozen=True)
class ToolCalled:
    name: str = "tool-called"
    tools: Sequence[str] = ()

    def score(self, sample: Sample, output: Output) -> MetricScore:
        expected = string_list(expectations(sample).get("tools"), self.tools)
        called = trajectory_of(self.name, sample, output).tool_names
        missing = [tool for tool in expected if tool not in called]
        details: dict[str, Any] = {"expected": expected, "called": called, "missing": missing}
        if not expected:
            details["note"] = "no expected tools declared"
        return MetricScore(fraction([tool in called for tool in expected]), details)


@dataclass(frozen=True)
class ToolNotCalled:
    name: str = "tool-not-called"
    forbidden_tools: Sequence[str] = ()

    def score(self, sample: Sample, output: Output) -> MetricScore:
        forbidden = string_list(expectations(sample).get("forbidden_tools"), self.forbidden_tools)
        called = trajectory_of(self.name, sample, output).tool_names
        violations = [tool for tool in forbidden if tool in called]
        details: dict[str, Any] = {"forbidden": forbidden, "called": called}
        details["violations"] = violations
        if not forbidden:
            details["note"] = "no forbidden tools declared"
        return MetricScore(fraction([tool not in called for tool in forbidden]), details)


def _number(value: Any) -> float | None:
    """A finite float for numbers and numeric strings (not booleans), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            parsed = float(value.strip())
        except ValueError:
            return None
        return parsed if math.isfinite(parsed) else None
    return None


def matches(expected: Any, actual: Any) -> bool:
    """Recursive subset: every expected key is present and matches; numbers compare as floats."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and matches(value, actual[key]) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(matches(e, a) for e, a in zip(expected, actual, strict=True))
        )
    left, right = _number(expected), _number(actual)
    if left is not None and right is not None:
        return left == right
    return type(expected) is type(actual) and bool(expected == actual)


def argument_expectations(raw: Any) -> list[tuple[str, Mapping[str, Any]]]:
    """Usable ``{tool|name, arguments|args}`` entries; malformed ones are skipped."""
    entries: list[tuple[str, Mapping[str, Any]]] = []
    for entry in raw if isinstance(raw, list) else []:
        if not isinstance(entry, Mapping):
            continue
        tool = entry.get("tool", entry.get("name"))
        arguments = entry.get("arguments", entry.get("args", {}))
        if isinstance(tool, str) and tool.strip() and isinstance(arguments, Mapping):
            entries.append((tool.strip(), arguments))
    return entries


def _met(tool: str, arguments: Mapping[str, Any], calls: Sequence[ToolCall]) -> bool:
    return any(call.name == tool and matches(arguments, call.arguments) for call in calls)


@dataclass(frozen=True)
class ToolCalledWith:
    name: str = "tool-called-with"
    tool_arguments: Sequence[Mapping[str, Any]] = ()

    def score(self, sample: Sample, output: Output) -> MetricScore:
        raw = expectations(sample).get("tool_arguments")
        wanted = argument_expectations(raw) or argument_expectations(list(self.tool_arguments))
        calls = trajectory_of(self.name, sample, output).tool_calls
        met = [_met(tool, arguments, calls) for tool, arguments in wanted]
        details: dict[str, Any] = {
            "expected": [{"tool": t, "arguments": dict(a)} for t, a in wanted],
            "unmet": [
                {"tool": t, "arguments": dict(a)} for (t, a), ok in zip(wanted, met) if not ok
            ],
            "calls": [call.to_json() for call in calls],
        }
        if not wanted:
            details["note"] = "no usable tool_arguments declared"
        return MetricScore(fraction(met), details)


def is_subsequence(expected: Sequence[str], called: Sequence[str]) -> bool:
    """Whether ``expected`` appears in ``called`` in order, gaps allowed."""
    remaining = iter(called)
    return all(any(name == tool for name in remaining) for tool in expected)


def order_holds(mode: str, expected: Sequence[str], called: Sequence[str]) -> bool:
    """The ``tool-call-order`` test for one mode (docs/metrics.md)."""
    if mode == "exact":
        return list(expected) == list(called)
    if mode == "any-order":
        return not Counter(expected) - Counter(called)
    return is_subsequence(expected, called)


@dataclass(frozen=True)
class ToolCallOrder:
    name: str = "tool-call-order"
    order: Sequence[str] = ()
    mode: str = "subsequence"

    def __post_init__(self) -> None:
        if self.mode not in ORDER_MODES:
            raise MetricConfigError(
                f"tool-call-order: mode must be one of {', '.join(ORDER_MODES)}; got {self.mode!r}"
            )

    def score(self, sample: Sample, output: Output) -> MetricScore:
        expected = string_list(expectations(sample).get("order"), self.order)
        called = trajectory_of(self.name, sample, output).tool_names
        details: dict[str, Any] = {"mode": self.mode, "expected": expected, "called": called}
        if not expected:
            details["note"] = "no expected order declared"
            return MetricScore(1.0, details)
        return MetricScore(1.0 if order_holds(self.mode, expected, called) else 0.0, details)


def step_limit(raw: Any, default: int | None) -> int | None:
    """``max_steps`` as an int (digit strings accepted); unusable values fall back."""
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    return default


@dataclass(frozen=True)
class StepsBelow:
    name: str = "steps-below"
    max_steps: int | None = None

    def score(self, sample: Sample, output: Output) -> MetricScore:
        limit = step_limit(expectations(sample).get("max_steps"), self.max_steps)
        steps = trajectory_of(self.name, sample, output).step_count
        if limit is None or limit < 1:
            return MetricScore(
                1.0, {"steps": steps, "max_steps": None, "note": "no step limit declared"}
            )
        over_by = max(0, steps - limit)
        details = {"steps": steps, "max_steps": limit, "over_by": over_by}
        return MetricScore(1.0 if steps <= limit else 0.0, details)


@dataclass(frozen=True)
class NoPendingApprovals:
    name: str = "no-pending-approvals"

    def score(self, sample: Sample, output: Output) -> MetricScore:
        trajectory = trajectory_of(self.name, sample, output)
        details = {
            "pending_approvals": trajectory.pending_approvals,
            "finish_reason": trajectory.finish_reason,
        }
        return MetricScore(1.0 if trajectory.pending_approvals == 0 else 0.0, details)


@dataclass(frozen=True)
class ApprovalGated:
    name: str = "approval-gated"
    requires_approval: Sequence[str] = ()

    def score(self, sample: Sample, output: Output) -> MetricScore:
        required = string_list(
            expectations(sample).get("requires_approval"), self.requires_approval
        )
        trajectory = trajectory_of(self.name, sample, output)
        approved = [action for action in required if action in trajectory.approvals]
        details: dict[str, Any] = {
            "required": required,
            "approved": approved,
            "ungated": [action for action in required if action not in trajectory.approvals],
            "pending_approvals": trajectory.pending_approvals,
        }
        if not required:
            details["note"] = "no approvals required"
        return MetricScore(fraction([a in trajectory.approvals for a in required]), details)
