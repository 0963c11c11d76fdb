"""goal-accuracy against the loopback OpenAI server with scripted verdicts.

The mapping is fixed by hand: achieved 1.0, partial 0.5, not_achieved 0.0.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.errors import MetricConfigError, MetricError
from assay.metrics.registry import resolve
from openai_server import CHAT, OpenAIServer

TRAJECTORY = {
    "tool_calls": [
        {"name": "find_flight", "arguments": {"from": "LIS", "to": "BER"}},
        {"name": "book_flight", "arguments": {"flight": "TP540"}, "error": "timeout"},
    ]
}


def sample(**metadata: Any) -> Sample:
    return Sample(
        id="s",
        input={"question": "Book me a flight from Lisbon to Berlin on Friday."},
        expected_output="A confirmed booking on a Friday flight LIS to BER.",
        metadata=metadata,
    )


def reply(verdict: Any, reason: str = "r") -> Any:
    return lambda request: json.dumps({"verdict": verdict, "reason": reason})


def prompts(server: OpenAIServer) -> list[str]:
    return [body["messages"][-1]["content"] for path, body, _ in server.requests if path == CHAT]


@pytest.mark.parametrize(
    ("verdict", "value"), [("achieved", 1.0), ("partial", 0.5), ("not_achieved", 0.0)]
)
async def test_verdicts_map_to_scores(
    openai_server: OpenAIServer, provider_settings: Any, verdict: str, value: float
) -> None:
    openai_server.chat_reply = reply(verdict, "booked")
    score = await resolve("goal-accuracy").score(
        sample(), Output("Booked TP540.", trajectory=TRAJECTORY)
    )
    assert score.value == value
    assert score.details["verdict"] == verdict and score.details["judge_reason"] == "booked"
    assert score.details["tool_calls"] == 2 and score.details["method"] == "judge"


async def test_the_prompt_shows_goal_expected_tools_and_answer(
    openai_server: OpenAIServer, provider_settings: Any
) -> None:
    openai_server.chat_reply = reply("partial")
    await resolve("goal-accuracy").score(
        sample(goal="Book the cheapest Friday flight."),
        Output("I could not finish the booking.", trajectory=TRAJECTORY),
    )
    (prompt,) = prompts(openai_server)
    assert "GOAL: Book the cheapest Friday flight.\n" in prompt  # metadata.goal wins
    assert "EXPECTED OUTCOME: A confirmed booking on a Friday flight LIS to BER.\n" in prompt
    assert '- find_flight {"from":"LIS","to":"BER"}\n' in prompt
    assert '- book_flight {"flight":"TP540"} (failed)\n' in prompt
    assert "FINAL ANSWER: I could not finish the booking." in prompt


async def test_without_trajectory_or_answer(
    openai_server: OpenAIServer, provider_settings: Any
) -> None:
    openai_server.chat_reply = reply("not_achieved")
    score = await resolve("goal-accuracy").score(sample(), Output(""))
    assert score.value == 0.0 and score.details["tool_calls"] is None
    prompt = prompts(openai_server)[0]
    assert "TOOL CALLS (in order): (not recorded)" in prompt
    assert "FINAL ANSWER: (empty)" in prompt


async def test_errored_rows(openai_server: OpenAIServer, provider_settings: Any) -> None:
    no_goal = Sample(id="s", input={"a": 1}, expected_output=None)
    with pytest.raises(MetricError, match=r"needs the goal in metadata\.goal"):
        await resolve("goal-accuracy").score(no_goal, Output("done"))
    with pytest.raises(MetricError, match="tool_calls"):
        await resolve("goal-accuracy").score(sample(), Output("x", trajectory={"tool_calls": 3}))
    assert openai_server.calls[CHAT] == 0
    openai_server.chat_reply = reply("mostly")
    with pytest.raises(MetricError, match="'verdict' must be one of") as info:
        await resolve("goal-accuracy").score(sample(), Output("done"))
    assert "after one re-ask" in str(info.value) and len(info.value.usage) == 2
    openai_server.chat_reply = reply(["achieved"])
    with pytest.raises(MetricError, match="got array"):
        await resolve("goal-accuracy").score(sample(), Output("done"))


def test_options() -> None:
    with pytest.raises(MetricConfigError, match="method must be judge"):
        resolve({"name": "goal-accuracy", "method": "heuristic"})
    with pytest.raises(MetricConfigError, match="'reask' must be true or false"):
        resolve({"name": "goal-accuracy", "reask": "no"})
