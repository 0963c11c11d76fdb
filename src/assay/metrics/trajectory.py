"""Agent trajectory metrics: which tools an agent called, in what order, and with what approvals.

Semantics follow padosoft's trajectory family. Expectations come from
``metadata.trajectory.*`` (falling back to the metric's options); a missing trajectory is an
errored row, never a 0.0 or a 1.0, because without it the run cannot know what the agent did.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.data.trajectory import ToolCall, Trajectory, parse_trajectory
from assay.errors import MetricConfigError, MetricError
from assay.metrics.base import type_name
from assay.metrics.batch import Row, RowScored, same_items
from assay.metrics.memo import LastParsed

if TYPE_CHECKING:
    from assay.data.dataset import Sample
    from assay.data.outputs import Output

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


def missing_trajectory(metric: str, sample: Sample) -> MetricError:
    return MetricError(
        f"metric '{metric}' needs a trajectory for sample '{sample.id}' and none was "
        "recorded; have the system under test call its recorder or return 'trajectory', "
        "or supply a 'trajectory' block in the saved outputs file"
    )


def trajectory_of(metric: str, sample: Sample, output: Output) -> Trajectory:
    """The answer's parsed trajectory; none recorded is an error for this row."""
    if output.trajectory is None:
        raise missing_trajectory(metric, sample)
    return parse_trajectory(output.trajectory)


Parsed = Trajectory | str | None  # a trajectory, why it cannot be read, or none recorded
_LAST_BATCH: LastParsed[tuple[Sequence[Output], list[Parsed]]] = LastParsed()


def parsed_trajectories(outputs: Sequence[Output]) -> list[Parsed]:
    """Each output's parsed trajectory, read once for all the trajectory metrics of a batch
    (a per-thread memo keyed on the identity of the outputs, element by element)."""
    memo = _LAST_BATCH.value
    if memo is not None and same_items(memo[0], outputs):
        return memo[1]
    parsed: list[Parsed] = []
    for output in outputs:
        try:
            raw = output.trajectory
            parsed.append(None if raw is None else parse_trajectory(raw))
        except MetricError as exc:
            parsed.append(str(exc))
    return _LAST_BATCH.remember(outputs, (outputs, parsed))[1]


class _OnTrajectory(RowScored):
    """A trajectory metric: ``expected(sample)`` reads what the sample asks for (first, as its
    errors come first) and ``judge`` scores the trajectory against it."""

    name: str

    def expected(self, sample: Sample) -> Any:
        return None

    def judge(self, expected: Any, trajectory: Trajectory) -> Row:
        raise NotImplementedError

    def row(self, sample: Sample, output: Output) -> Row:
        expected = self.expected(sample)
        return self.judge(expected, trajectory_of(self.name, sample, output))

    def batch_kernel(
        self, samples: Sequence[Sample], outputs: Sequence[Output]
    ) -> Callable[[int], Row]:
        parsed = parsed_trajectories(outputs)

        def kernel(index: int) -> Row:
            sample = samples[index]
            expected = self.expected(sample)
            trajectory = parsed[index]
            if trajectory is None:
                raise missing_trajectory(self.name, sample)
            if isinstance(trajectory, str):
                raise MetricError(trajectory)
            return self.judge(expected, trajectory)

        return kernel


@dataclass(frozen=True)
class ToolCalled(_OnTrajectory):
    name: str = "tool-called"
    tools: Sequence[str] = ()

    def expected(self, sample: Sample) -> list[str]:
        return string_list(expectations(sample).get("tools"), self.tools)

    def judge(self, expected: list[str], trajectory: Trajectory) -> Row:
        called = trajectory.tool_names
        missing = [tool for tool in expected if tool not in called]
        details: dict[str, Any] = {"expected": expected, "called": called, "missing": missing}
        if not expected:
            details["note"] = "no expected tools declared"
        return fraction([tool in called for tool in expected]), details


@dataclass(frozen=True)
class ToolNotCalled(_OnTrajectory):
    """The share of forbidden tools never called (padosoft's score), passing only at 1.0: one
    forbidden call fails the row (a ``threshold:`` option lowers it)."""

    name: str = "tool-not-called"
    forbidden_tools: Sequence[str] = ()
    threshold: float = 1.0  # any violation must fail its row

    def expected(self, sample: Sample) -> list[str]:
        return string_list(expectations(sample).get("forbidden_tools"), self.forbidden_tools)

    def judge(self, expected: list[str], trajectory: Trajectory) -> Row:
        called = trajectory.tool_names
        violations = [tool for tool in expected if tool in called]
        details: dict[str, Any] = {"forbidden": expected, "called": called}
        details["violations"] = violations
        if not expected:
            details["note"] = "no forbidden tools declared"
        return fraction([tool not in called for tool in expected]), details


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
class ToolCalledWith(_OnTrajectory):
    name: str = "tool-called-with"
    tool_arguments: Sequence[Mapping[str, Any]] = ()

    def expected(self, sample: Sample) -> list[tuple[str, Mapping[str, Any]]]:
        raw = expectations(sample).get("tool_arguments")
        return argument_expectations(raw) or argument_expectations(list(self.tool_arguments))

    def judge(self, expected: list[tuple[str, Mapping[str, Any]]], trajectory: Trajectory) -> Row:
        calls = trajectory.tool_calls
        met = [_met(tool, arguments, calls) for tool, arguments in expected]
        details: dict[str, Any] = {
            "expected": [{"tool": t, "arguments": dict(a)} for t, a in expected],
            "unmet": [
                {"tool": t, "arguments": dict(a)} for (t, a), ok in zip(expected, met) if not ok
            ],
            "calls": [call.to_json() for call in calls],
        }
        if not expected:
            details["note"] = "no usable tool_arguments declared"
        return fraction(met), details


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
class ToolCallOrder(_OnTrajectory):
    name: str = "tool-call-order"
    order: Sequence[str] = ()
    mode: str = "subsequence"

    def __post_init__(self) -> None:
        if self.mode not in ORDER_MODES:
            raise MetricConfigError(
                f"tool-call-order: mode must be one of {', '.join(ORDER_MODES)}; got {self.mode!r}"
            )

    def expected(self, sample: Sample) -> list[str]:
        return string_list(expectations(sample).get("order"), self.order)

    def judge(self, expected: list[str], trajectory: Trajectory) -> Row:
        called = trajectory.tool_names
        details: dict[str, Any] = {"mode": self.mode, "expected": expected, "called": called}
        if not expected:
            details["note"] = "no expected order declared"
            return 1.0, details
        return 1.0 if order_holds(self.mode, expected, called) else 0.0, details


def step_limit(raw: Any, default: int | None) -> int | None:
    """``max_steps`` as an int (digit strings accepted); unusable values fall back."""
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    return default


@dataclass(frozen=True)
class StepsBelow(_OnTrajectory):
    name: str = "steps-below"
    max_steps: int | None = None

    def expected(self, sample: Sample) -> int | None:
        return step_limit(expectations(sample).get("max_steps"), self.max_steps)

    def judge(self, expected: int | None, trajectory: Trajectory) -> Row:
        steps = trajectory.step_count
        if expected is None or expected < 1:
            return 1.0, {"steps": steps, "max_steps": None, "note": "no step limit declared"}
        over_by = max(0, steps - expected)
        details = {"steps": steps, "max_steps": expected, "over_by": over_by}
        return 1.0 if steps <= expected else 0.0, details


@dataclass(frozen=True)
class NoPendingApprovals(_OnTrajectory):
    name: str = "no-pending-approvals"

    def judge(self, expected: None, trajectory: Trajectory) -> Row:
        details = {
            "pending_approvals": trajectory.pending_approvals,
            "finish_reason": trajectory.finish_reason,
        }
        return 1.0 if trajectory.pending_approvals == 0 else 0.0, details


@dataclass(frozen=True)
class ApprovalGated(_OnTrajectory):
    name: str = "approval-gated"
    requires_approval: Sequence[str] = ()

    def expected(self, sample: Sample) -> list[str]:
        return string_list(expectations(sample).get("requires_approval"), self.requires_approval)

    def judge(self, expected: list[str], trajectory: Trajectory) -> Row:
        approvals = trajectory.approvals
        details: dict[str, Any] = {
            "required": expected,
            "approved": [action for action in expected if action in approvals],
            "ungated": [action for action in expected if action not in approvals],
            "pending_approvals": trajectory.pending_approvals,
        }
        if not expected:
            details["note"] = "no approvals required"
        return fraction([a in approvals for a in expected]), details
