"""``goal-accuracy``: did the agent achieve the user's goal? (judge-based)

The judge sees the goal, the expected outcome when the sample gives one, the tool calls of the
trajectory when one was recorded, and the final answer, and returns ``achieved`` (1.0),
``partial`` (0.5) or ``not_achieved`` (0.0) through the one judge stack
(:mod:`assay.judging`). A sample with no goal is an errored row, as is a reply that stays
malformed after the re-ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from assay.data.trajectory import ToolCall, parse_trajectory
from assay.errors import MetricConfigError, MetricError
from assay.judging.client import Judge, ask, compact_json, fill, template_version
from assay.judging.prompts import GOAL
from assay.judging.replies import GOAL_VERDICTS, parse_goal
from assay.metrics.base import MetricScore, check_bool_option, environment_settings
from assay.metrics.judge import judge_use, scored_verdict
from assay.metrics.rag import question_text
from assay.providers.settings import ProviderSettings

if TYPE_CHECKING:
    from assay.data.dataset import Sample
    from assay.data.outputs import Output

MAX_CALLS_SHOWN = 50
MAX_ARGUMENT_CHARS = 300


def goal_of(sample: Sample) -> str:
    """``metadata.goal``, else ``input.question``, else the input's only string value."""
    goal = sample.metadata.get("goal")
    if isinstance(goal, str) and goal.strip():
        return goal
    try:
        return question_text("goal-accuracy", sample)
    except MetricError:
        raise MetricError(
            "metric 'goal-accuracy' needs the goal in metadata.goal or input.question "
            "(a non-empty string)"
        ) from None


def expected_outcome(sample: Sample) -> str:
    value = sample.expected_output
    if value is None or (isinstance(value, (str, list, dict)) and not value):
        return "(not given)"
    return value if isinstance(value, str) else compact_json(value, "expected_output")


def _call_line(call: ToolCall) -> str:
    arguments = compact_json(dict(call.arguments), "a tool call's arguments")
    if len(arguments) > MAX_ARGUMENT_CHARS:
        arguments = arguments[:MAX_ARGUMENT_CHARS] + " [...]"
    return f"- {call.name} {arguments}" + (" (failed)" if call.error is not None else "")


def tool_lines(calls: Sequence[ToolCall]) -> str:
    """The tool calls as prompt lines (names, arguments clipped, failures marked)."""
    if not calls:
        return "(none)"
    lines = [_call_line(call) for call in calls[:MAX_CALLS_SHOWN]]
    if len(calls) > MAX_CALLS_SHOWN:
        lines.append(f"- ... and {len(calls) - MAX_CALLS_SHOWN} more")
    return "\n" + "\n".join(lines)


@dataclass(frozen=True)
class GoalAccuracy:
    """Options: ``model`` (judge model; default from settings), ``reask`` (default true)."""

    name: str = "goal-accuracy"
    model: str | None = None
    reask: bool = True
    method: str = "judge"
    settings: ProviderSettings = field(
        default_factory=environment_settings, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        check_bool_option(self.reask, self.name, "reask")
        if self.method != "judge":
            raise MetricConfigError(f"{self.name}: method must be judge; got {self.method!r}")

    def used(self, settings: ProviderSettings) -> dict[str, str]:
        """The judge this metric calls: its own ``model`` option, else the settings' one."""
        return judge_use(self.model, settings)

    def prompt(self, sample: Sample, output: Output) -> tuple[str, int | None]:
        calls = None if output.trajectory is None else parse_trajectory(output.trajectory)
        values = {
            "goal": goal_of(sample),
            "expected": expected_outcome(sample),
            "tools": "(not recorded)" if calls is None else tool_lines(calls.tool_calls),
            "actual": output.text if output.text.strip() else "(empty)",
        }
        return fill(GOAL, values), None if calls is None else len(calls.tool_calls)

    async def score(self, sample: Sample, output: Output) -> MetricScore:
        prompt, n_calls = self.prompt(sample, output)
        version = template_version(self.name, GOAL)
        verdict = await ask(
            Judge(self.model, reask=self.reask, settings=self.settings),
            prompt,
            parse_goal,
            version=version,
        )
        label, reason = verdict.value
        value = GOAL_VERDICTS[label]
        scored = scored_verdict(
            verdict, value, reason, model=self.model, version=version, prompt=prompt
        )
        details = {"method": "judge", "verdict": label, "tool_calls": n_calls, **scored.details}
        return MetricScore(value, details, usage=scored.usage)
