"""An agent's trajectory: the tool calls, step count and approvals of one answer.

A system under test hands its trajectory to assay in one of three ways: a ``trajectory`` block
in its returned mapping or saved output, a JSON path in the HTTP reply
(``--sut-trajectory-path``), or a :class:`TrajectoryRecorder` that a Python system under test
receives as its ``recorder`` argument and calls as it works. The accepted shape follows
padosoft's ``Trajectory::fromArray`` (docs/metrics.md, "Agent trajectories").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.errors import MetricError


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call: its name and, when known, its arguments, result and error."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    result: Any = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "arguments": dict(self.arguments)}
        if self.result is not None:
            data["result"] = self.result
        if self.error is not None:
            data["error"] = self.error
        return data


@dataclass(frozen=True, slots=True)
class Trajectory:
    """A parsed trajectory; ``steps`` falls back to the number of tool calls."""

    tool_calls: tuple[ToolCall, ...] = ()
    steps: int | None = None
    finish_reason: str | None = None
    pending_approvals: int = 0
    approvals: tuple[str, ...] = ()

    @property
    def step_count(self) -> int:
        return self.steps if self.steps is not None else len(self.tool_calls)

    @property
    def tool_names(self) -> list[str]:
        return [call.name for call in self.tool_calls]

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "tool_calls": [call.to_json() for call in self.tool_calls],
            "steps": self.step_count,
            "pending_approvals": self.pending_approvals,
        }
        if self.finish_reason is not None:
            data["finish_reason"] = self.finish_reason
        if self.approvals:
            data["approvals"] = list(self.approvals)
        return data


def _call(raw: object, index: int) -> ToolCall:
    """One entry of ``tool_calls``: a name, or ``{name|tool, arguments|args, result, error}``."""
    where = f"trajectory.tool_calls[{index}]"
    if isinstance(raw, str):
        if not raw.strip():
            raise MetricError(f"{where} must carry a non-empty 'name'")
        return ToolCall(raw.strip())
    if not isinstance(raw, Mapping):
        raise MetricError(f"{where} must be a tool name or an object with a 'name'")
    name = raw.get("name", raw.get("tool"))
    if not isinstance(name, str) or not name.strip():
        raise MetricError(f"{where} must carry a non-empty 'name'")
    arguments = raw.get("arguments", raw.get("args"))
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise MetricError(f"{where}.arguments must be an object")
    error = raw.get("error")
    return ToolCall(
        name.strip(), dict(arguments), raw.get("result"), None if error is None else str(error)
    )


def _count(raw: object, where: str, *, default: int | None) -> int | None:
    """A non-negative integer (digit strings accepted), or ``default`` when absent."""
    if raw is None:
        return default
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise MetricError(f"{where} must be a non-negative integer; got {raw!r}")
    return raw


def parse_trajectory(raw: object) -> Trajectory:
    """A :class:`Trajectory` from a mapping (or a :class:`Trajectory`), else a MetricError."""
    if isinstance(raw, Trajectory):
        return raw
    if not isinstance(raw, Mapping):
        raise MetricError(f"trajectory must be an object; got {type(raw).__name__}")
    calls = raw.get("tool_calls", raw.get("tools", []))
    if calls is None:
        calls = []
    if not isinstance(calls, list):
        raise MetricError(f"trajectory.tool_calls must be a list; got {type(calls).__name__}")
    finish = raw.get("finish_reason")
    approvals = raw.get("approvals") or []
    if not isinstance(approvals, list):
        raise MetricError("trajectory.approvals must be a list of action ids")
    return Trajectory(
        tool_calls=tuple(_call(entry, index) for index, entry in enumerate(calls)),
        steps=_count(raw.get("steps"), "trajectory.steps", default=None),
        finish_reason=finish if isinstance(finish, str) else None,
        pending_approvals=_count(
            raw.get("pending_approvals"), "trajectory.pending_approvals", default=0
        )
        or 0,
        approvals=tuple(a for a in approvals if isinstance(a, str)),
    )


class TrajectoryRecorder:
    """What a Python system under test calls while it works; one recorder per execution.

    A callable whose signature has a ``recorder`` parameter receives one; what it records
    becomes the answer's trajectory unless the callable also returns a ``trajectory`` itself.
    """

    def __init__(self) -> None:
        self._calls: list[ToolCall] = []
        self._approvals: list[str] = []
        self._steps: int | None = None
        self._pending = 0
        self._finish: str | None = None

    def record(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        result: object = None,
        error: str | None = None,
    ) -> None:
        """Note one tool call, in the order the agent made it."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError("a recorded tool call must have a non-empty name")
        self._calls.append(ToolCall(name.strip(), dict(arguments or {}), result, error))

    def approve(self, action_id: str) -> None:
        """Note that a person approved the action ``action_id``."""
        self._approvals.append(action_id)

    def finish(self, reason: str, *, steps: int | None = None, pending_approvals: int = 0) -> None:
        """Note why the agent stopped, its step count and the approvals still waiting."""
        self._finish, self._steps, self._pending = reason, steps, pending_approvals

    @property
    def used(self) -> bool:
        return bool(self._calls or self._approvals or self._finish is not None)

    def trajectory(self) -> Trajectory:
        return Trajectory(
            tuple(self._calls), self._steps, self._finish, self._pending, tuple(self._approvals)
        )
