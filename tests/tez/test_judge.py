"""llm_as_judge: strict verdict parsing, scoring through a fake judge, and the real provider
client against the loopback OpenAI-protocol server (cached on the second run)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from assay.errors import MetricError
from assay.tez import judge
from assay.tez.bundle import open_bundle
from assay.tez.evaluate import score_session
from assay.tez.judge import JudgeParseError, JudgeReply, parse_claim_verdict, parse_relevance
from assay.tez.records import SessionFile, SessionTurn
from assay.tez.session import load_expectations
from tez.helpers import queries_of

USAGE = {
    "model": "fake-judge",
    "prompt_tokens": 10,
    "completion_tokens": 5,
    "total_tokens": 15,
    "latency_ms": 1.0,
    "cost_usd": None,
    "cached": False,
}


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"supported_by": [1, 2], "faithful": true}', ({1, 2}, True)),
        ('```json\n{"supported_by": [], "faithful": false}\n```', (set(), False)),
        ('{"supported_by": [2], "faithful": true, "reason": "p2 states it"}', ({2}, True)),
    ],
)
def test_claim_verdicts_parse(text: str, expected: tuple[set[int], bool]) -> None:
    supported, faithful = parse_claim_verdict(text, n_cited=2)
    assert (set(supported), faithful) == expected


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("supported", "not valid JSON"),
        ("[1]", "JSON object"),
        ('{"faithful": true}', "missing"),
        ('{"supported_by": [1], "faithful": true, "score": 1}', "unsupported"),
        ('{"supported_by": [true], "faithful": true}', "passage numbers"),
        ('{"supported_by": [3], "faithful": true}', "outside 1..2"),
        ('{"supported_by": [], "faithful": "yes"}', "true or false"),
        ('Sure! {"supported_by": [], "faithful": true}', "not valid JSON"),
    ],
)
def test_bad_claim_verdicts_are_rejected(text: str, match: str) -> None:
    with pytest.raises(JudgeParseError, match=match):
        parse_claim_verdict(text, n_cited=2)


def test_relevance_parse() -> None:
    assert parse_relevance('{"relevance": 0.75}') == 0.75
    for bad in ('{"relevance": 1.5}', '{"relevance": true}', '{"relevance": "high"}', "{}"):
        with pytest.raises(JudgeParseError):
            parse_relevance(bad)


# --------------------------------------------------------------------------- a fake judge

FACT = re.compile(r"\$[\d,.]+[MBK]?|\d+(?:\.\d+)?%|\b[A-Z]{3,}-\d+\b|\b\d{2,}\b")


def oracle_reply(prompt: str) -> str:
    """An independent stand-in for a model: a claim is backed by a passage that contains every
    figure and code of the claim verbatim."""
    if prompt.startswith("Rate how directly"):
        return json.dumps({"relevance": 0.9})
    claim = prompt.split("Claim:\n<<<", 1)[1].split(">>>", 1)[0]
    cited_block = prompt.split("Passages the answer cited for this claim:\n", 1)[1].split(
        "Other passages", 1
    )[0]
    other_block = prompt.split("Other passages from the same bundle (not cited):\n", 1)[1]
    facts = FACT.findall(claim)
    cited = re.findall(r"\[(\d+)\] [^\n]*\n<<<(.*?)>>>", cited_block, re.S)
    others = re.findall(r"\[C\d+\] [^\n]*\n<<<(.*?)>>>", other_block, re.S)
    supported = [int(n) for n, body in cited if all(f in body for f in facts)]
    faithful = bool(supported) or any(all(f in body for f in facts) for body in others)
    return json.dumps({"supported_by": supported, "faithful": faithful})


class FakeJudge:
    def __init__(self, reply: Any = oracle_reply) -> None:
        self.prompts: list[str] = []
        self.reply = reply

    async def __call__(self, messages: Any) -> JudgeReply:
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        return JudgeReply(self.reply(prompt), (dict(USAGE),))


def _session(bundles_dir: Path, responses: dict[str, Any], kind: str) -> SessionFile:
    queries = queries_of(bundles_dir, "interop-level-3")
    ids = ["grounded-01", "grounded-03", "content-canary-01"]
    return SessionFile(
        session_id="tip-sess-judge",
        turns=[
            SessionTurn(
                query_id=q, query=queries[q], response=responses["interop-level-3"][q][kind]
            )
            for q in ids
        ],
    )


def test_judge_scores_order_like_the_heuristic(
    bundles_dir: Path, responses: dict[str, Any]
) -> None:
    bundle = open_bundle(bundles_dir / "interop-level-3")
    expectations = load_expectations(bundles_dir / "interop-level-3" / "test-queries.json")
    means = {}
    for kind in ("compliant", "wrongly_cited", "fabricated"):
        fake = FakeJudge()
        evaluation = score_session(
            bundle,
            _session(bundles_dir, responses, kind),
            expectations,
            method="llm_as_judge",
            judge=fake,
            judge_model="fake-judge",
        )
        assert evaluation.evaluator.evaluation_method == "llm_as_judge"
        assert evaluation.evaluator.model == "fake-judge"
        n_claims = sum(len(s.claims) for s in evaluation.scores)
        assert len(evaluation.usage) == n_claims + len(
            evaluation.scores
        )  # one call per claim + relevance
        g = sum(s.groundedness for s in evaluation.scores) / len(evaluation.scores)
        f = sum(s.faithfulness for s in evaluation.scores) / len(evaluation.scores)
        means[kind] = (g, f)
    assert means["compliant"] == (1.0, 1.0)
    assert means["wrongly_cited"][0] < 1.0 and means["wrongly_cited"][1] == 1.0
    assert means["fabricated"][1] < means["wrongly_cited"][1]


def test_judge_prompt_shows_only_located_citations(bundles_dir: Path) -> None:
    import asyncio

    bundle = open_bundle(bundles_dir / "interop-level-3")
    turn = SessionTurn(
        query_id="q",
        query="size?",
        response=(
            "The market reached $18.7 billion "
            "[[market-landscape:p2, market-landscape:p99, nobody]]."
        ),
    )
    fake = FakeJudge(
        lambda p: '{"supported_by": [1], "faithful": true}' if "Claim" in p else '{"relevance": 1}'
    )
    score = asyncio.run(judge.score_turn(bundle, turn, None, judge.Judge(call=fake)))
    prompt = fake.prompts[0]
    assert "[1] market-landscape:p2" in prompt and "p99" not in prompt and "nobody" not in prompt
    assert "$18.7 billion" in prompt.split("Passages the answer cited", 1)[1]
    verdicts = score.claims[0].citations
    assert [v.verified for v in verdicts] == [True, False, False]
    assert score.citation_accuracy == pytest.approx(1 / 3)


def test_malformed_judge_reply_is_a_failure_not_a_zero(bundles_dir: Path) -> None:
    import asyncio

    bundle = open_bundle(bundles_dir / "interop-level-3")
    turn = SessionTurn(
        query_id="q",
        query="size?",
        response="The market reached $18.7 billion [[market-landscape:p2]].",
    )
    fake = FakeJudge(lambda p: "I think it is supported.")
    with pytest.raises(MetricError, match="not valid JSON") as caught:
        asyncio.run(judge.score_turn(bundle, turn, None, judge.Judge(call=fake)))
    assert caught.value.usage == (USAGE, USAGE)  # the ask and its one re-ask
    assert "after one re-ask" in str(caught.value)
    assert fake.prompts[1].startswith("Your previous reply could not be used: judge response is")


# --------------------------------------------------------------------------- real client


def test_provider_judge_end_to_end_and_cached(
    openai_server: Any, provider_settings: Any, bundles_dir: Path, responses: dict[str, Any]
) -> None:
    openai_server.chat_reply = lambda request: oracle_reply(request["messages"][-1]["content"])
    bundle = open_bundle(bundles_dir / "interop-level-3")
    session = _session(bundles_dir, responses, "compliant")
    first = score_session(bundle, session, None, method="llm_as_judge")
    calls = openai_server.total_calls()
    n_claims = sum(len(s.claims) for s in first.scores)
    assert calls == n_claims + len(first.scores)
    assert first.evaluator.model == "judge-test"
    assert all(s.groundedness == 1.0 for s in first.scores)
    assert all(u["model"] == "judge-test" and not u["cached"] for u in first.usage)
    second = score_session(bundle, session, None, method="llm_as_judge")
    assert openai_server.total_calls() == calls  # every verdict replayed from the provider cache
    assert all(u["cached"] for u in second.usage)
    assert [s.groundedness for s in second.scores] == [s.groundedness for s in first.scores]
    request = openai_server.requests[0][1]
    assert request["temperature"] == 0 and request["response_format"] == {"type": "json_object"}
