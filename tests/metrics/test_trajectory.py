"""Agent trajectory metrics against the semantics padosoft documents (reference §2.17).

Every expected number is worked by hand from the written rule (fraction rounded to 6 places,
empty expectation 1.0, subsequence with gaps, numeric arguments compared as floats).
"""

from __future__ import annotations

from typing import Any

import pytest

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.data.trajectory import TrajectoryRecorder, parse_trajectory
from assay.errors import MetricConfigError, MetricError
from assay.metrics.registry import resolve
from assay.metrics.trajectory import (
    ApprovalGated,
    NoPendingApprovals,
    StepsBelow,
    ToolCalled,
    ToolCalledWith,
    ToolCallOrder,
    ToolNotCalled,
    matches,
)

CALLS: list[Any] = [
    {"name": "search", "arguments": {"q": "refund policy", "limit": 7}},
    "lookup_order",
    {"tool": "send_email", "args": {"to": "a@example.com", "meta": {"urgent": True, "n": 2}}},
    "search",
]


def sample(**expect: Any) -> Sample:
    return Sample(id="s1", input={}, expected_output="", metadata={"trajectory": expect})


def out(**trajectory: Any) -> Output:
    return Output("done", trajectory={"tool_calls": CALLS, **trajectory})


# --------------------------------------------------------------------------- missing trajectory

ALL = [
    ToolCalled(),
    ToolNotCalled(),
    ToolCalledWith(),
    ToolCallOrder(),
    StepsBelow(),
    NoPendingApprovals(),
    ApprovalGated(),
]


@pytest.mark.parametrize("metric", ALL, ids=lambda m: m.name)
def test_a_missing_trajectory_is_an_error_never_a_score(metric: Any) -> None:
    with pytest.raises(MetricError, match=r"needs a trajectory for sample 's1'"):
        metric.score(sample(tools=["search"]), Output("done"))


def test_a_tool_call_without_a_name_is_an_error() -> None:
    bad = Output("x", trajectory={"tool_calls": [{"arguments": {}}]})
    with pytest.raises(MetricError, match=r"tool_calls\[0\] must carry a non-empty 'name'"):
        ToolCalled().score(sample(tools="a"), bad)


# --------------------------------------------------------------------------- tool-called


def test_tool_called_fraction_of_expected_tools() -> None:
    score = ToolCalled().score(sample(tools=["search", "refund", "lookup_order"]), out())
    assert score.value == 0.666667  # 2 of 3, rounded to 6 places
    assert score.details["missing"] == ["refund"]
    assert score.details["called"] == ["search", "lookup_order", "send_email", "search"]


def test_tool_called_accepts_a_string_and_falls_back_to_options() -> None:
    assert ToolCalled().score(sample(tools="refund"), out()).value == 0.0
    assert ToolCalled(tools=("search",)).score(sample(tools=[""]), out()).value == 1.0
    none = ToolCalled().score(sample(), out())
    assert none.value == 1.0 and "note" in none.details


def test_tool_not_called() -> None:
    score = ToolNotCalled().score(sample(forbidden_tools=["send_email", "delete", "x"]), out())
    assert score.value == 0.666667
    assert score.details["violations"] == ["send_email"]
    assert ToolNotCalled().score(sample(), out()).value == 1.0


# --------------------------------------------------------------------------- tool-called-with


def test_tool_called_with_recursive_subset_and_numeric_strings() -> None:
    expect = [
        {"tool": "search", "arguments": {"limit": "7"}},  # "7" == 7
        {"name": "send_email", "args": {"meta": {"urgent": True}}},  # nested subset
        {"tool": "search", "arguments": {"q": "shipping"}},  # no such call
        {"tool": "lookup_order", "arguments": {}},  # empty subset: any call of that name
        "not-a-mapping",  # malformed: skipped
        {"tool": "", "arguments": {}},  # malformed: skipped
    ]
    score = ToolCalledWith().score(sample(tool_arguments=expect), out())
    assert score.value == 0.75
    assert score.details["unmet"] == [{"tool": "search", "arguments": {"q": "shipping"}}]


def test_tool_called_with_nothing_usable_is_one_with_a_note() -> None:
    score = ToolCalledWith().score(sample(tool_arguments=[{"arguments": {}}]), out())
    assert score.value == 1.0 and "note" in score.details


@pytest.mark.parametrize(
    ("expected", "actual", "result"),
    [
        (7, "7", True),
        ("7.0", 7, True),
        (True, 1, False),  # booleans are not numbers
        ("a", "a", True),
        ("a", "A", False),
        ({"a": {"b": 1}}, {"a": {"b": 1.0, "c": 2}}, True),
        ({"a": 1}, {"b": 1}, False),
        ([1, "x"], ["1", "x"], True),
        ([1], [1, 2], False),
        (None, None, True),
    ],
)
def test_argument_matching(expected: Any, actual: Any, result: bool) -> None:
    assert matches(expected, actual) is result


# --------------------------------------------------------------------------- tool-call-order


@pytest.mark.parametrize(
    ("mode", "order", "value"),
    [
        ("subsequence", ["search", "send_email"], 1.0),  # gaps allowed
        ("subsequence", ["send_email", "lookup_order"], 0.0),  # wrong order
        ("subsequence", ["search", "search"], 1.0),
        ("subsequence", [], 1.0),
        ("exact", ["search", "lookup_order", "send_email", "search"], 1.0),
        ("exact", ["search", "send_email"], 0.0),
        ("any-order", ["send_email", "search", "search"], 1.0),
        ("any-order", ["send_email", "send_email"], 0.0),  # called once only
    ],
)
def test_tool_call_order_modes(mode: str, order: list[str], value: float) -> None:
    score = ToolCallOrder(mode=mode).score(sample(order=order), out())
    assert score.value == value
    assert score.details["mode"] == mode


def test_tool_call_order_rejects_an_unknown_mode() -> None:
    with pytest.raises(MetricConfigError, match="mode must be one of"):
        resolve({"name": "tool-call-order", "mode": "sorted"})


# --------------------------------------------------------------------------- steps and approvals


@pytest.mark.parametrize(
    ("limit", "steps", "value", "over_by"),
    [(4, None, 1.0, 0), (3, None, 0.0, 1), ("5", 6, 0.0, 1), (10, 6, 1.0, 0)],
)
def test_steps_below(limit: Any, steps: int | None, value: float, over_by: int) -> None:
    trajectory = {} if steps is None else {"steps": steps}
    score = StepsBelow().score(sample(max_steps=limit), out(**trajectory))
    assert (score.value, score.details["over_by"]) == (value, over_by)


@pytest.mark.parametrize("limit", [None, 0, -2, "many"])
def test_steps_below_without_a_usable_limit_is_one(limit: Any) -> None:
    score = StepsBelow().score(sample(max_steps=limit), out(steps=99))
    assert score.value == 1.0 and score.details["max_steps"] is None


def test_steps_below_option_is_the_default_limit() -> None:
    assert StepsBelow(max_steps=3).score(sample(), out()).value == 0.0


def test_no_pending_approvals() -> None:
    assert NoPendingApprovals().score(sample(), out()).value == 1.0
    waiting = NoPendingApprovals().score(sample(), out(pending_approvals=2, finish_reason="hold"))
    assert waiting.value == 0.0
    assert waiting.details == {"pending_approvals": 2, "finish_reason": "hold"}


def test_approval_gated() -> None:
    traj = out(approvals=["refund-42", 7, "email-1"])  # non-strings dropped
    score = ApprovalGated().score(sample(requires_approval=["refund-42", "wire-9"]), traj)
    assert score.value == 0.5
    assert score.details["ungated"] == ["wire-9"]
    assert ApprovalGated().score(sample(), traj).value == 1.0


# --------------------------------------------------------------------------- recorder


def test_recorder_builds_the_same_trajectory_as_a_block() -> None:
    recorder = TrajectoryRecorder()
    recorder.record("search", {"q": "x"})
    recorder.record("lookup_order")
    recorder.approve("refund-42")
    recorder.finish("stop", pending_approvals=1)
    parsed = parse_trajectory(recorder.trajectory().to_json())
    assert parsed.tool_names == ["search", "lookup_order"]
    assert (parsed.step_count, parsed.pending_approvals, parsed.approvals) == (2, 1, ("refund-42",))
    with pytest.raises(ValueError, match="non-empty name"):
        recorder.record(" ")


@pytest.mark.parametrize("bad", [{"steps": -1}, {"pending_approvals": "x"}, {"tool_calls": 3}])
def test_malformed_trajectory_fields_are_errors(bad: dict[str, Any]) -> None:
    with pytest.raises(MetricError):
        StepsBelow().score(sample(max_steps=3), Output("x", trajectory=bad))
