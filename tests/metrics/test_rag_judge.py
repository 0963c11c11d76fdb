"""RAG metrics, judge method, against the loopback OpenAI server with scripted replies.

Every expected score is worked by hand from the scripted verdicts: e.g. claims judged
supported, unsupported, supported -> 2/3 = 0.666667; passages relevant at ranks 2 and 3 ->
average precision (1/2 + 2/3) / 2 = 0.583333.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.data.dataset import Sample
from assay.data.outputs import Output, Retrieved
from assay.errors import MetricConfigError, MetricError
from assay.metrics.registry import resolve
from openai_server import CHAT, OpenAIServer

CONTEXTS = (
    "Acme was founded in 2011 by Dana Smith in Lisbon.",
    "The company sells solar panels to farms in Portugal.",
)
ANSWER = (
    "Acme was founded in 2011 by Dana Smith. The founders previously sold a company. "
    "It sells solar panels to farms."
)


def sample(expected: Any = "", question: str = "Who founded Acme?", **metadata: Any) -> Sample:
    return Sample(id="s", input={"question": question}, expected_output=expected, metadata=metadata)


def verdicts(item: str, flag: str, values: list[bool]) -> str:
    return json.dumps({"verdicts": [{item: n, flag: v} for n, v in enumerate(values, start=1)]})


def scripted(*texts: str) -> Any:
    queue = list(texts)
    return lambda request: queue.pop(0) if len(queue) > 1 else queue[0]


def prompts(server: OpenAIServer) -> list[str]:
    return [body["messages"][-1]["content"] for path, body, _ in server.requests if path == CHAT]


def judged(name: str, **options: Any) -> Any:
    return resolve({"name": name, "method": "judge", **options})


async def test_faithfulness_judge_scores_the_verdicts(
    openai_server: OpenAIServer, provider_settings: Any
) -> None:
    openai_server.chat_reply = scripted(verdicts("claim", "supported", [True, False, True]))
    score = await judged("faithfulness").score(sample(), Output(ANSWER, contexts=CONTEXTS))
    assert score.value == 0.666667
    assert score.details["method"] == "judge"
    assert score.details["claims"] == [
        {"index": 0, "verdict": "supported"},
        {"index": 1, "verdict": "unsupported"},
        {"index": 2, "verdict": "supported"},
    ]
    assert score.details["supported"] == 2 and score.details["total"] == 3
    assert score.details["judge_model"] == "judge-test" and score.details["reasked"] is False
    assert score.usage is not None and len(score.usage) == 1
    (prompt,) = prompts(openai_server)
    assert "[1] Acme was founded in 2011 by Dana Smith.\n\n[2] The founders" in prompt
    assert f"PASSAGES:\n[1] {CONTEXTS[0]}\n\n[2] {CONTEXTS[1]}" in prompt


async def test_the_judge_sees_the_same_claims_as_the_heuristic(
    openai_server: OpenAIServer, provider_settings: Any
) -> None:
    openai_server.chat_reply = scripted(verdicts("claim", "supported", [True, True, True]))
    output = Output(ANSWER, contexts=CONTEXTS)
    by_judge = await judged("faithfulness", texts=True).score(sample(), output)
    by_rule = resolve({"name": "faithfulness", "texts": True}).score(sample(), output)
    texts = [c["text"] for c in by_judge.details["claims"]]
    assert texts == [c["text"] for c in by_rule.details["claims"]]
    assert by_judge.value == 1.0 and by_rule.value == 0.666667  # same units, other verdicts


async def test_context_recall_judge_over_the_reference(
    openai_server: OpenAIServer, provider_settings: Any
) -> None:
    openai_server.chat_reply = scripted(verdicts("claim", "supported", [True, False]))
    reference = "Acme was founded in 2011 in Lisbon. Acme has 40 employees."
    retrieved = (Retrieved("a", CONTEXTS[0]), Retrieved("b", CONTEXTS[1]))
    score = await judged("context-recall").score(
        sample(reference), Output("x", retrieved=retrieved)
    )
    assert score.value == 0.5
    assert "[2] Acme has 40 employees." in prompts(openai_server)[0]


async def test_context_precision_judge_is_average_precision_of_the_verdicts(
    openai_server: OpenAIServer, provider_settings: Any
) -> None:
    openai_server.chat_reply = scripted(verdicts("passage", "relevant", [False, True, True]))
    contexts = ("Weather today.", *CONTEXTS)
    score = await judged("context-precision").score(
        sample("Dana Smith founded Acme in 2011."), Output("x", contexts=contexts)
    )
    assert score.value == 0.583333  # (1/2 + 2/3) / 2
    assert score.details["relevant_ranks"] == [2, 3]
    assert score.details["relevance_from"] == "judge"
    prompt = prompts(openai_server)[0]
    assert "QUESTION: Who founded Acme?\nREFERENCE: Dana Smith founded Acme in 2011." in prompt


async def test_context_precision_with_relevant_ids_asks_no_judge(
    openai_server: OpenAIServer, provider_settings: Any
) -> None:
    ranking = tuple(Retrieved(i) for i in ("d1", "d7", "d3"))
    score = await judged("context-precision").score(
        sample("Paris.", relevant={"d1": 2, "d3": 1}), Output("x", retrieved=ranking)
    )
    assert score.value == 0.833333 and score.details["relevance_from"] == "metadata.relevant"
    assert openai_server.calls[CHAT] == 0


async def test_answer_relevancy_judge(openai_server: OpenAIServer, provider_settings: Any) -> None:
    openai_server.chat_reply = scripted(
        verdicts("statement", "relevant", [False, True, False, False])
    )
    answer = "Great question! Dana Smith founded Acme. The weather is nice. I hope this helps."
    score = await judged("answer-relevancy").score(sample(), Output(answer))
    assert score.value == 0.25
    assert score.details["relevant"] == 1 and score.details["total"] == 4
    assert "[1] Great question!\n\n[2] Dana Smith founded Acme." in prompts(openai_server)[0]


def test_answer_relevancy_heuristic_by_hand() -> None:
    answer = "Great question! Dana Smith founded Acme. The weather is nice. I hope this helps."
    score = resolve("answer-relevancy").score(sample(), Output(answer))
    # question words {found, acme}: only "Dana Smith founded Acme." shares one -> 1/4
    assert score.value == 0.25
    assert [s["verdict"] for s in score.details["statements"]] == [
        "irrelevant",
        "relevant",
        "irrelevant",
        "irrelevant",
    ]


def test_answer_relevancy_errored_rows() -> None:
    metric = resolve("answer-relevancy")
    with pytest.raises(MetricError, match="no statements"):
        metric.score(sample(), Output("   "))
    with pytest.raises(MetricError, match="no content words"):
        metric.score(sample(question="What is it?"), Output("It is blue."))
    with pytest.raises(MetricError, match=r"input\.question"):
        metric.score(Sample(id="s", input={"a": 1}, expected_output=""), Output("It is blue."))


async def test_a_malformed_reply_is_reasked_once(
    openai_server: OpenAIServer, provider_settings: Any
) -> None:
    good = verdicts("claim", "supported", [True, True, False])
    openai_server.chat_reply = scripted('{"verdicts": [{"claim": 1, "supported": true}]}', good)
    score = await judged("faithfulness").score(sample(), Output(ANSWER, contexts=CONTEXTS))
    assert score.value == 0.666667 and score.details["reasked"] is True
    assert score.usage is not None and len(score.usage) == 2
    assert "no verdict for claim(s) 2, 3" in prompts(openai_server)[1]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("The claims look supported.", "not valid JSON"),
        ('{"verdicts": [{"claim": 1, "supported": "yes"}]}', "'supported' must be true or false"),
        ('{"verdicts": [{"claim": 1, "supported": true}, {"claim": 1, "supported": true}]}',
         "judges claim 1 twice"),
        ('{"verdicts": [{"claim": 4, "supported": true}]}', "'claim' must be a number from 1 to 3"),
        ('{"verdicts": {"1": true}}', "'verdicts' must be a list"),
        ('{"verdicts": [], "score": 1}', "unsupported key"),
    ],
)  # fmt: skip
async def test_malformed_replies_end_as_errors_not_scores(
    openai_server: OpenAIServer, provider_settings: Any, reply: str, message: str
) -> None:
    openai_server.chat_reply = scripted(reply)
    with pytest.raises(MetricError, match=message) as info:
        await judged("faithfulness").score(sample(), Output(ANSWER, contexts=CONTEXTS))
    assert "after one re-ask" in str(info.value) and len(info.value.usage) == 2
    assert openai_server.calls[CHAT] == 2


async def test_inputs_are_checked_before_any_call(
    openai_server: OpenAIServer, provider_settings: Any
) -> None:
    with pytest.raises(MetricError, match="needs the answer's contexts"):
        await judged("faithfulness").score(sample(), Output(ANSWER))
    with pytest.raises(MetricError, match="has no claims"):
        await judged("faithfulness").score(sample(), Output("Thanks!", contexts=CONTEXTS))
    with pytest.raises(MetricError, match="needs a reference answer"):
        await judged("context-recall").score(sample(), Output("x", contexts=CONTEXTS))
    assert openai_server.calls[CHAT] == 0


def test_options_are_checked_per_method() -> None:
    with pytest.raises(MetricConfigError, match="'tau' applies to method: heuristic"):
        judged("faithfulness", tau=0.7)
    with pytest.raises(MetricConfigError, match="'model' applies to method: judge"):
        resolve({"name": "faithfulness", "model": "gpt-4o"})
    with pytest.raises(MetricConfigError, match="method must be one of heuristic, judge"):
        resolve({"name": "answer-relevancy", "method": "nli"})
    metric = judged("context-recall", model="gpt-4o-mini", **{"as": "recall-judged"})
    assert metric.name == "recall-judged"
    settings = type("S", (), {"judge_model": "default"})()
    assert metric.used(settings)["model"] == "gpt-4o-mini"


def test_assay_run_records_errored_rows_for_bad_verdicts(
    openai_server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from assay.cli import main
    from assay.providers import registry

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    registry.reset()

    def reply(request: dict[str, Any]) -> str:
        prompt = request["messages"][0]["content"]
        if re.search(r"\[1\] Acme is in Lisbon", prompt):
            return "not json"
        count = len(re.findall(r"^\[\d+\] ", prompt.split("CLAIMS:", 1)[1], re.M))
        return verdicts("claim", "supported", [True] * count)

    openai_server.chat_reply = reply
    doc = {
        "schema_version": "assay.dataset.v1",
        "name": "rag-judge",
        "metrics": [{"name": "faithfulness", "method": "judge"}],
        "samples": [
            {"id": "ok", "input": {"question": "Where?"}, "expected_output": "x"},
            {"id": "bad", "input": {"question": "Where?"}, "expected_output": "x"},
        ],
    }
    (tmp_path / "d.yml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    outputs = {"outputs": [
        {"id": "ok", "output": "Acme sells solar panels.", "contexts": [CONTEXTS[1]]},
        {"id": "bad", "output": "Acme is in Lisbon.", "contexts": [CONTEXTS[0]]},
    ]}  # fmt: skip
    (tmp_path / "o.json").write_text(json.dumps(outputs), encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["run", "d.yml", "--outputs", "o.json", "--base-url", openai_server.url,
              "--cache-dir", "cache", "--no-store", "--format", "json", "--quiet"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    registry.reset()
    assert info.value.code == 1
    rows = {r["id"]: r for r in report["rows"]}
    assert rows["ok"]["scores"]["faithfulness"]["score"] == 1.0
    assert "faithfulness" not in rows["bad"]["scores"]  # errored, never 0.0
    assert rows["bad"]["errors"]["faithfulness"].startswith(
        "judge response is not valid JSON: Expecting value; after one re-ask: "
    )
    aggregate = next(m for m in report["metrics"] if m["name"] == "faithfulness")
    assert aggregate["scored"] == 1 and aggregate["mean"] == 1.0
    (failure,) = report["failures"]
    assert failure["sample_id"] == "bad" and "after one re-ask" in failure["message"]
