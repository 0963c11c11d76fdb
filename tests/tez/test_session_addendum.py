"""Session and expectation files; Addendum section 8 metrics, thresholds and drop alerts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.errors import TezError
from assay.tez.addendum import (
    THRESHOLDS,
    drop_alerts,
    false_abstentions,
    previous_metrics,
    query_values,
    session_values,
    threshold_alerts,
    to_tezit_metrics,
)
from assay.tez.bundle import open_bundle
from assay.tez.heuristic import score_turn
from assay.tez.records import AddendumValues, SessionTurn
from assay.tez.session import (
    expectations_from_data,
    load_expectations,
    load_session,
    session_from_data,
)
from tez.helpers import queries_of

# --------------------------------------------------------------------------- sessions


def test_session_json_yaml_and_jsonl(tmp_path: Path) -> None:
    data = {
        "session_id": "tip-sess-1",
        "turns": [
            {
                "query_id": "q-001",
                "query": "Q?",
                "response": "A [[x]]",
                "classification": "grounded",
            },
            {
                "query_id": "q-002",
                "query": "Q2?",
                "answer": "B",
                "classification": "insufficient_context",
                "context_chunks_used": ["x:p2", {"source_item_id": "y"}],
            },
        ],
    }
    (tmp_path / "s.json").write_text(json.dumps(data))
    (tmp_path / "s.yaml").write_text(
        "session_id: tip-sess-1\nturns:\n  - {query_id: q-001, query: Q?, response: A}\n"
    )
    (tmp_path / "s.jsonl").write_text(
        "\n".join(json.dumps({"session_id": "tip-sess-1", **t}) for t in data["turns"]) + "\n"
    )
    for name in ("s.json", "s.jsonl"):
        session = load_session(tmp_path / name)
        assert session.session_id == "tip-sess-1"
        second = session.turns[1]
        assert second.response == "B" and second.classification == "abstention"
        assert [(c.item_id, c.location) for c in second.chunks_used or []] == [
            ("x", "p2"),
            ("y", None),
        ]
    assert load_session(tmp_path / "s.yaml").turns[0].query_id == "q-001"


def test_tip_response_object_is_accepted() -> None:
    session = session_from_data(
        {
            "session_id": "s",
            "turns": [
                {
                    "query_id": "q",
                    "query": "Q",
                    "response": {"text": "T [[a]]", "classification": "partial"},
                }
            ],
        }
    )
    assert session.turns[0].response == "T [[a]]" and session.turns[0].classification == "partial"


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"turns": []}, "session_id"),
        ({"session_id": "s", "turns": []}, "turns"),
        (
            {"session_id": "s", "turns": [{"query_id": "q-9", "query": "Q"}]},
            r"sample 'q-9'.*field 'response'",
        ),
        (
            {
                "session_id": "s",
                "turns": [
                    {"query_id": "q", "query": "Q", "response": "R", "classification": "maybe"}
                ],
            },
            "classification",
        ),
        (
            {"session_id": "s", "turns": [{"query_id": "q", "query": "Q", "response": "R"}] * 2},
            "repeats",
        ),
        ([1, 2], "mapping"),
    ],
)
def test_bad_sessions_name_the_problem(data: Any, match: str) -> None:
    with pytest.raises(TezError, match=match):
        session_from_data(data, source="s.json")


def test_expectations_in_both_bundle_shapes(bundles_dir: Path) -> None:
    tip = load_expectations(bundles_dir / "tip-compliance" / "test-queries.json")
    assert tip["grounded-02"].behavior == "answer"
    assert tip["grounded-02"].must_contain_groups == (
        ("$25,000,000", "$25M", "$25 million"),
        ("$120,000,000", "$120M", "$120 million"),
    )
    assert tip["grounded-01"].must_contain_groups == (("$3,400,000",),)
    assert tip["abstention-02"].behavior == "abstain" and tip["abstention-02"].relevant_items == ()
    assert tip["partial-01"].behavior == "partial"
    assert tip["partial-01"].relevant_items == (
        "market-report",
        "financial-model",
        "founder-interview",
    )
    interop = load_expectations(bundles_dir / "interop-level-3" / "test-queries.json")
    assert interop["grounded-02"].must_contain_groups == (("94.7%",), ("FUNSD",))  # mode all
    assert interop["grounded-01"].must_contain_groups == (
        ("$18.7B", "18.7 billion", "18.7B"),
    )  # mode any
    assert interop["hallucination-trap-01"].must_not_contain[0] == "the CTO said"
    assert sum(e.behavior == "abstain" for e in interop.values()) == 3
    assert sum(e.behavior == "abstain" for e in tip.values()) == 3


def test_bad_expectations() -> None:
    with pytest.raises(TezError, match="unknown expected behaviour"):
        expectations_from_data([{"id": "a", "expected_classification": "vibes"}])
    with pytest.raises(TezError, match="repeats"):
        expectations_from_data([{"id": "a", "expected_classification": "grounded"}] * 2)


# --------------------------------------------------------------------------- addendum


@pytest.fixture(scope="module")
def interop_scores(bundles_dir: Path, responses: dict[str, Any]) -> dict[tuple[str, str], Any]:
    bundle = open_bundle(bundles_dir / "interop-level-3")
    expectations = load_expectations(bundles_dir / "interop-level-3" / "test-queries.json")
    queries = queries_of(bundles_dir, "interop-level-3")
    return {
        (qid, kind): score_turn(
            bundle, SessionTurn(query_id=qid, query=queries[qid], response=text), expectations[qid]
        )
        for qid, kinds in responses["interop-level-3"].items()
        for kind, text in kinds.items()
    }


def test_pooled_session_metrics_match_hand_counts(
    interop_scores: dict[tuple[str, str], Any],
) -> None:
    picks = [
        ("grounded-03", "compliant"),
        ("abstention-01", "abstaining"),
        ("abstention-02", "fabricated"),
        ("partial-01", "wrongly_cited"),
        ("content-canary-01", "abstaining"),
    ]
    scores = [interop_scores[p] for p in picks]
    values = session_values(scores)
    claims = [c for s in scores for c in s.claims]
    cites = [v for c in claims for v in c.citations]
    assert values.faithfulness == sum(c.faithful for c in claims) / len(claims)
    assert values.citation_accuracy == sum(v.verified for v in cites) / len(cites)
    # abstention-appropriate: abstention-01 (abstained, correct) and abstention-02 (fabricated)
    assert values.abstention_rate == 0.5
    # relevant items: grounded-03 -> 1 of 1; partial-01 -> technical-assessment cited, of 3;
    # content-canary-01 abstained -> 0 of 1
    assert values.completeness == pytest.approx((1 + 1 + 0) / (1 + 3 + 1))
    assert values.relevance == pytest.approx(sum(s.relevance for s in scores) / len(scores))
    assert false_abstentions(scores) == 1  # content-canary-01


def test_zero_denominators_are_undefined_not_zero(
    interop_scores: dict[tuple[str, str], Any],
) -> None:
    bare = interop_scores[("abstention-01", "abstaining")]
    q = query_values(bare)
    assert q.faithfulness is None and q.citation_accuracy is None and q.completeness is None
    assert q.abstention_rate == 1.0
    assert (
        bare.groundedness == 1.0 and bare.faithfulness == 1.0
    )  # vendor scores: vacuous, documented
    metrics, vacuous = to_tezit_metrics(q)
    assert vacuous == ["faithfulness", "citation_accuracy", "completeness"]
    assert metrics.faithfulness == 1.0
    answered = query_values(interop_scores[("grounded-01", "compliant")])
    assert answered.abstention_rate is None
    assert session_values([]) == AddendumValues()


def test_chunk_relevance_replaces_lexical_relevance(bundles_dir: Path) -> None:
    bundle = open_bundle(bundles_dir / "interop-level-3")
    expectation = load_expectations(bundles_dir / "interop-level-3" / "test-queries.json")[
        "grounded-01"
    ]
    turn = SessionTurn.model_validate(
        {
            "query_id": "grounded-01",
            "query": "size?",
            "response": "It is $18.7 billion [[market-landscape:p2]].",
            "chunks_used": [
                {"item_id": "market-landscape"},
                {"item_id": "founder-memo"},
                {"item_id": "market-landscape"},
            ],
        }
    )
    score = score_turn(bundle, turn, expectation)
    assert query_values(score).relevance == pytest.approx(2 / 3)


def test_thresholds_and_drop_alerts() -> None:
    assert THRESHOLDS == {
        "citation_accuracy": 0.95,
        "faithfulness": 0.90,
        "relevance": 0.80,
        "completeness": 0.70,
        "abstention_rate": 0.80,
    }
    values = AddendumValues(
        relevance=0.79,
        faithfulness=0.95,
        citation_accuracy=0.95,
        completeness=None,
        abstention_rate=0.5,
    )
    assert sorted(a.metric for a in threshold_alerts(values)) == ["abstention_rate", "relevance"]
    previous = {
        "relevance": 0.9,
        "faithfulness": 1.0,
        "citation_accuracy": 0.96,
        "abstention_rate": 0.5,
    }
    dropped = drop_alerts(previous, values)
    # relevance 0.9 -> 0.79 is a 12.2% relative fall; faithfulness 1.0 -> 0.95 is 5%
    assert [a.metric for a in dropped] == ["relevance"]
    assert dropped[0].kind == "dropped" and dropped[0].reference == 0.9
    assert drop_alerts({"faithfulness": 1.0}, values, drop=0.04)[0].metric == "faithfulness"
    # exactly 10% is not "more than 10%"
    assert drop_alerts({"relevance": 1.0}, AddendumValues(relevance=0.9)) == []


def test_previous_metrics_from_either_report() -> None:
    assert previous_metrics({"metrics": {"relevance": 0.5, "faithfulness": 1}}) == {
        "relevance": 0.5,
        "faithfulness": 1.0,
    }
    assert previous_metrics({"session": {"relevance": None, "completeness": 0.25}}) == {
        "completeness": 0.25
    }
    with pytest.raises(TezError):
        previous_metrics({"nothing": 1})
