"""Must-show: hand-written responses for every test query of the two bundles score as a reader
would rank them (compliant > wrongly cited > fabricated), and abstention counts as correct only
where the bundle's test-queries.json expects it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.tez.bundle import open_bundle
from assay.tez.heuristic import score_turn
from assay.tez.records import SessionTurn
from assay.tez.scoring import TurnScore
from assay.tez.session import load_expectations
from tez.helpers import find_tez_data, queries_of

BUNDLES = ("tip-compliance", "interop-level-3")
KINDS = ("compliant", "wrongly_cited", "fabricated", "abstaining")


def _expected_abstain(bundles_dir: Path, bundle: str) -> set[str]:
    """Abstention-appropriate query ids read straight from the bundle's own file."""

    raw = json.loads((bundles_dir / bundle / "test-queries.json").read_text(encoding="utf-8"))
    if isinstance(raw, list):
        return {r["id"] for r in raw if r["expected_classification"] == "abstention"}
    return {r["id"] for r in raw["test_queries"] if r["expected_behavior"]["type"] == "abstain"}


@pytest.fixture(scope="module")
def scored(bundles_dir: Path, responses: dict[str, Any]) -> dict[tuple[str, str, str], TurnScore]:
    out = {}
    for bundle in BUNDLES:
        loaded = open_bundle(bundles_dir / bundle)
        expectations = load_expectations(bundles_dir / bundle / "test-queries.json")
        queries = queries_of(bundles_dir, bundle)
        for query_id, kinds in responses[bundle].items():
            for kind, text in kinds.items():
                turn = SessionTurn(query_id=query_id, query=queries[query_id], response=text)
                out[(bundle, query_id, kind)] = score_turn(loaded, turn, expectations[query_id])
    return out


def _overall(score: TurnScore) -> float:
    return (score.groundedness + score.relevance + score.faithfulness) / 3


@pytest.mark.parametrize("bundle", BUNDLES)
def test_every_test_query_has_all_four_responses(
    bundle: str, bundles_dir: Path, responses: dict[str, Any]
) -> None:
    assert set(responses[bundle]) == set(queries_of(bundles_dir, bundle))
    for kinds in responses[bundle].values():
        assert tuple(kinds) == KINDS


def _cases() -> list[tuple[str, str]]:
    data = find_tez_data()
    if data is None:
        return []
    return [(b, q) for b in BUNDLES for q in queries_of(data / "test-bundles", b)]


@pytest.mark.parametrize(("bundle", "query_id"), _cases())
def test_compliant_beats_wrongly_cited_beats_fabricated(
    bundle: str, query_id: str, scored: dict[tuple[str, str, str], TurnScore]
) -> None:
    good, wrong, fake = (
        scored[(bundle, query_id, k)] for k in ("compliant", "wrongly_cited", "fabricated")
    )
    assert _overall(good) > _overall(wrong) > _overall(fake)
    # the reasons a reader would give: mis-citation loses grounding, invention loses faithfulness
    assert good.groundedness == 1.0 and good.faithfulness == 1.0
    assert wrong.groundedness < good.groundedness and wrong.faithfulness == 1.0
    assert fake.faithfulness < wrong.faithfulness and fake.groundedness <= wrong.groundedness
    assert good.citation_accuracy == 1.0 and wrong.citation_accuracy == 0.0
    assert fake.citation_accuracy is not None and fake.citation_accuracy < 1.0


@pytest.mark.parametrize(("bundle", "query_id"), _cases())
def test_abstention_correct_only_where_expected(
    bundle: str, query_id: str, scored: dict[tuple[str, str, str], TurnScore], bundles_dir: Path
) -> None:
    should_abstain = query_id in _expected_abstain(bundles_dir, bundle)
    plain = scored[(bundle, query_id, "abstaining")]
    assert plain.abstained
    assert plain.abstention_expected is should_abstain
    assert plain.abstention_correct is should_abstain
    assert plain.relevance == (1.0 if should_abstain else 0.0)
    fake = scored[(bundle, query_id, "fabricated")]
    if should_abstain:
        assert not fake.abstained and fake.abstention_correct is False
        assert scored[(bundle, query_id, "compliant")].abstention_correct is True
    else:
        assert scored[(bundle, query_id, "compliant")].abstention_correct is True
        assert not scored[(bundle, query_id, "compliant")].abstained


@pytest.mark.parametrize("bundle", BUNDLES)
def test_per_claim_records_are_consistent(
    bundle: str, scored: dict[tuple[str, str, str], TurnScore], bundles_dir: Path
) -> None:
    item_ids = set(open_bundle(bundles_dir / bundle).items)
    for (name, _, _), score in scored.items():
        if name != bundle:
            continue
        for claim in score.claims:
            assert claim.grounded == bool(claim.source_items)
            assert set(claim.source_items) <= item_ids
        if score.claims:
            assert score.groundedness == sum(c.grounded for c in score.claims) / len(score.claims)


def test_partial_compliant_answer_keeps_gap_statement_out_of_claims(
    scored: dict[tuple[str, str, str], TurnScore],
) -> None:
    score = scored[("tip-compliance", "partial-01", "compliant")]
    assert not score.abstained
    assert all("does not cover" not in c.text for c in score.claims)
    assert (
        score.completeness == 1.0
    )  # market-report, financial-model and founder-interview all cited


def test_completeness_counts_expected_items_cited(
    scored: dict[tuple[str, str, str], TurnScore],
) -> None:
    # interop cross-reference-01 must cite financial-projections and technical-assessment: both
    # cited
    assert scored[("interop-level-3", "cross-reference-01", "compliant")].completeness == 1.0
    # its wrongly cited twin cites technical-assessment (at the wrong section) but never
    # financial-projections: completeness counts items cited, citation_accuracy judges where
    wrong = scored[("interop-level-3", "cross-reference-01", "wrongly_cited")]
    assert wrong.completeness == 0.5 and wrong.citation_accuracy == 0.0
    # no ground truth on abstention queries: undefined, not 0
    assert scored[("interop-level-3", "abstention-01", "compliant")].completeness is None
