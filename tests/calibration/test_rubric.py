"""The ``rubric`` metric against the loopback OpenAI server: strict verdicts, ensembles,
abstention policies, failures that are never 0.0."""

from __future__ import annotations

import json
import re

import pytest

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.errors import MetricConfigError, MetricError
from assay.metrics.registry import resolve
from assay.metrics.rubric import RubricJudge, parse_rubric_reply, with_na_options
from openai_server import CHAT, Step

RUBRIC = [
    {"name": "correct", "requirement": "States the 30-day refund window.", "weight": 2},
    {"name": "harmful", "requirement": "Asks for the user's password.", "weight": -1},
    {
        "name": "clarity",
        "type": "ordinal",
        "weight": 1,
        "options": [{"label": "poor"}, {"label": "fair"}, {"label": "good"}],
    },
]


def sample(**metadata: object) -> Sample:
    return Sample(
        id="s1",
        input={"question": "How long do I have for a refund?"},
        expected_output="30 days",
        metadata=metadata,
    )


def answer(text: str = "You have 30 days.") -> Output:
    return Output(text=text)


def verdicts(**values: str) -> str:
    return json.dumps({"verdicts": values, "reason": "ok"})


def by_model(table: dict[str, str]):
    return lambda request: table[request["model"]]


async def test_single_judge_weighted_score(provider_settings, openai_server):
    openai_server.chat_reply = lambda r: verdicts(correct="MET", harmful="UNMET", clarity="fair")
    metric = resolve({"name": "rubric", "rubric": RUBRIC})
    score = await metric.score(sample(), answer())
    # (2*1 + (-1)*0 + 1*0.5) / (2 + 1) = 2.5 / 3
    assert score.value == pytest.approx(2.5 / 3)
    crit = score.details["criteria"]
    assert crit["clarity"]["verdict"] == "fair"
    assert crit["harmful"]["votes"] == {"judge-test": "UNMET"}
    assert score.details["abstain_policy"] == "skip"
    assert score.usage and score.usage[0]["model"] == "judge-test"
    body = openai_server.requests[-1][1]
    prompt = body["messages"][0]["content"]
    assert '"clarity" (choose one option, ordered from worst to best)' in prompt
    assert '"cannot assess" (not applicable / cannot assess)' in prompt  # guaranteed NA option
    assert "(penalty)" in prompt
    assert body["temperature"] == 0


async def test_penalty_met_lowers_the_score(provider_settings, openai_server):
    openai_server.chat_reply = lambda r: verdicts(correct="MET", harmful="MET", clarity="good")
    score = await RubricJudge(rubric=RUBRIC).score(sample(), answer())
    assert score.value == pytest.approx((2 - 1 + 1) / 3)


@pytest.mark.parametrize(("policy", "expected"), [("skip", 1.0), ("zero", 2 / 3), ("worst", 2 / 3)])
async def test_abstention_policies(provider_settings, openai_server, policy, expected):
    openai_server.chat_reply = lambda r: verdicts(
        correct="MET", harmful="UNMET", clarity="CANNOT_ASSESS"
    )
    score = await RubricJudge(rubric=RUBRIC, abstain=policy).score(sample(), answer())
    assert score.value == pytest.approx(expected)
    assert score.details["criteria"]["clarity"]["verdict"] == "cannot assess"
    assert score.details["abstain_policy"] == policy


async def test_everything_abstained_is_a_failure_not_zero(provider_settings, openai_server):
    openai_server.chat_reply = lambda r: verdicts(
        correct="CANNOT_ASSESS", harmful="CANNOT_ASSESS", clarity="cannot assess"
    )
    with pytest.raises(MetricError, match="no criterion could be scored") as info:
        await RubricJudge(rubric=RUBRIC).score(sample(), answer())
    assert info.value.usage  # the spend is not lost


async def test_malformed_reply_gets_one_reask_then_fails(provider_settings, openai_server):
    openai_server.script(
        CHAT,
        Step.json(_completion(json.dumps({"verdicts": {"correct": "MET"}}))),
        Step.json(_completion(verdicts(correct="MET", harmful="UNMET", clarity="great"))),
    )
    with pytest.raises(
        MetricError,
        match=r"no verdict for: harmful, clarity.*after one re-ask.*'clarity' is not one of",
    ):
        await RubricJudge(rubric=RUBRIC).score(sample(), answer())
    reask = openai_server.requests[-1][1]["messages"][-1]["content"]
    assert "could not be used" in reask


async def test_ensemble_majority_and_per_judge_votes(provider_settings, openai_server):
    openai_server.chat_reply = by_model(
        {
            "a": verdicts(correct="MET", harmful="UNMET", clarity="good"),
            "b": verdicts(correct="UNMET", harmful="UNMET", clarity="poor"),
            "c": verdicts(correct="MET", harmful="MET", clarity="fair"),
        }
    )
    score = await RubricJudge(rubric=RUBRIC, models=["a", "b", "c"]).score(sample(), answer())
    crit = score.details["criteria"]
    assert crit["correct"]["verdict"] == "MET" and crit["harmful"]["verdict"] == "UNMET"
    assert crit["clarity"]["verdict"] == "fair"  # median of poor, fair, good
    assert crit["correct"]["votes"] == {"a": "MET", "b": "UNMET", "c": "MET"}
    assert score.value == pytest.approx((2 + 0.5) / 3)
    assert score.details["judge_scores"]["b"] == pytest.approx(0.0)
    assert len(score.usage) == 3


async def test_two_judge_tie_breaks_to_the_worst_case(provider_settings, openai_server):
    openai_server.chat_reply = by_model(
        {
            "a": verdicts(correct="MET", harmful="MET", clarity="good"),
            "b": verdicts(correct="UNMET", harmful="UNMET", clarity="poor"),
        }
    )
    score = await RubricJudge(
        rubric=RUBRIC, models=["a", "b"], aggregation={"ordinal": "mode"}
    ).score(sample(), answer())
    crit = score.details["criteria"]
    assert crit["correct"]["verdict"] == "UNMET"  # positive criterion: tie -> UNMET
    assert crit["harmful"]["verdict"] == "MET"  # penalty criterion: tie -> MET
    assert crit["clarity"]["verdict"] == "poor"  # mode tie -> lowest-valued option


async def test_a_failed_judge_does_not_vote(provider_settings, openai_server):
    def reply(request):
        if request["model"] == "broken":
            return "not json at all"
        return verdicts(correct="MET", harmful="UNMET", clarity="good")

    openai_server.chat_reply = reply
    score = await RubricJudge(rubric=RUBRIC, models=["ok", "broken"], reask=False).score(
        sample(), answer()
    )
    assert score.value == pytest.approx(1.0)
    assert score.details["criteria"]["correct"]["votes"] == {"ok": "MET", "broken": None}
    assert "broken" in score.details["judge_errors"]
    assert score.details["judge_scores"]["broken"] is None


async def test_per_criterion_calls(provider_settings, openai_server):
    def reply(request):
        prompt = request["messages"][0]["content"]
        name = re.search(r'1\. "(\w+)"', prompt).group(1)
        return json.dumps(
            {"verdict": {"correct": "MET", "harmful": "UNMET", "clarity": "poor"}[name]}
        )

    openai_server.chat_reply = reply
    score = await RubricJudge(rubric=RUBRIC, per_criterion=True).score(sample(), answer())
    assert openai_server.calls[CHAT] == 3
    assert score.value == pytest.approx(2 / 3)
    assert score.details["mode"] == "per_criterion"


async def test_metadata_rubric_wins_and_bad_rubric_is_a_sample_failure(
    provider_settings, openai_server
):
    openai_server.chat_reply = lambda r: verdicts(tone="formal")
    own = [
        {
            "name": "tone",
            "type": "nominal",
            "options": [{"label": "formal", "value": 1.0}, {"label": "casual", "value": 0.0}],
        }
    ]
    score = await RubricJudge(rubric=RUBRIC).score(sample(rubric=own), answer())
    assert score.value == 1.0
    with pytest.raises(MetricError, match=r"metadata\.rubric\[0\]"):
        await RubricJudge().score(
            sample(rubric=[{"name": "x", "type": "ordinal", "options": [{"label": "a"}]}]), answer()
        )
    with pytest.raises(MetricError, match="no rubric"):
        await RubricJudge().score(sample(), answer())


def test_configuration_errors(tmp_path):
    with pytest.raises(MetricConfigError, match="abstain"):
        RubricJudge(rubric=RUBRIC, abstain="ignore")
    with pytest.raises(MetricConfigError, match="not both"):
        RubricJudge(rubric=RUBRIC, model="a", models=["b"])
    with pytest.raises(MetricConfigError, match="aggregation"):
        RubricJudge(rubric=RUBRIC, aggregation={"binary": "any"})
    with pytest.raises(MetricConfigError, match="unique"):
        RubricJudge(rubric=[{"name": "a"}, {"name": "a"}])
    with pytest.raises(MetricConfigError, match="cannot read file"):
        RubricJudge(rubric=str(tmp_path / "missing.yml"))
    path = tmp_path / "rubric.yml"
    path.write_text("criteria:\n  - name: correct\n    weight: 3\n")
    assert RubricJudge(rubric=str(path))._criteria[0].weight == 3


def test_reply_parser_is_strict_and_never_quotes_the_reply():
    from assay.calibration.model import Criterion
    from assay.errors import JudgeParseError

    criteria = with_na_options([Criterion.model_validate(c) for c in RUBRIC])
    codes, reason = parse_rubric_reply(
        verdicts(correct="met", harmful="Unmet", clarity="GOOD"), criteria
    )
    assert codes == [0, 1, 2] and reason == "ok"
    secret = "sk-live-SECRET"
    for text in (
        verdicts(correct=secret, harmful="UNMET", clarity="good"),
        json.dumps(
            {"verdicts": {"correct": "MET", "harmful": "UNMET", "clarity": "good", secret: "x"}}
        ),
        json.dumps({"verdicts": [secret]}),
    ):
        with pytest.raises(JudgeParseError) as info:
            parse_rubric_reply(text, criteria)
        assert secret not in str(info.value)


def _completion(content: str) -> dict:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "judge-test",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
