"""Claim splitting (what TIP exempts is not a claim) and lexical support."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.tez.claims import split_response
from assay.tez.support import content_words, entities, numbers, supports


def texts(response: str) -> list[str]:
    return [c.text for c in split_response(response).claims]


def test_sentences_list_items_and_table_rows() -> None:
    response = """Revenue was $3.4M in Q3 [[fm:section-1]]. Churn was 4 customers [[fm:section-1]].

- ARR reached $16.4M [[cd:section-2]]
- NPS is 62 [[cd:section-5]]

| Metric | Value |
|---|---|
| ARR | $16.4M [[cd:section-2]] |
"""
    split = split_response(response)
    assert [c.text for c in split.claims] == [
        "Revenue was $3.4M in Q3.",
        "Churn was 4 customers.",
        "ARR reached $16.4M",
        "NPS is 62",
        "ARR; $16.4M",
    ]
    assert [r.label for r in split.claims[0].citations] == ["fm:section-1"]


def test_citation_after_the_full_stop_stays_with_its_sentence() -> None:
    split = split_response("Revenue was $3.4M. [[fm:section-1]] Costs were $1M [[fm:section-3]].")
    assert [[r.label for r in c.citations] for c in split.claims] == [
        ["fm:section-1"],
        ["fm:section-3"],
    ]


def test_abbreviations_and_decimals_do_not_split() -> None:
    assert texts("The U.S. market grew 3.5% in 2025, e.g. in Texas [[mr]].") == [
        "The U.S. market grew 3.5% in 2025, e.g. in Texas."
    ]


def test_exempt_language_is_not_a_claim() -> None:
    split = split_response(
        "The bundled context does not contain information about patents. "
        "The context includes five documents. You may want to ask the Tez creator. "
        "Let me explain what is there."
    )
    assert split.claims == ()
    assert split.abstention_statements == (
        "The bundled context does not contain information about patents.",
    )
    assert split.leading_abstention


def test_uncited_factual_sentence_is_a_claim() -> None:
    split = split_response("Meridian was founded in 2022 by Elena Vasquez.")
    assert [c.text for c in split.claims] == ["Meridian was founded in 2022 by Elena Vasquez."]
    assert split.claims[0].citations == ()
    assert not split.leading_abstention


def test_code_and_headings_are_skipped() -> None:
    assert texts("# Answer\n```\nrevenue = 3400000\n```\nRevenue was $3.4M [[fm]].") == [
        "Revenue was $3.4M."
    ]


@given(st.text(max_size=300))
@settings(max_examples=150, deadline=None)
def test_splitting_never_crashes_and_keeps_citations(text: str) -> None:
    split = split_response(text)
    for claim in split.claims:
        assert "[[" not in claim.text or "]]" not in claim.text


# --------------------------------------------------------------------------- support


def test_numbers_scale_and_rounding() -> None:
    got = {
        n.text: (n.value, n.tolerance)
        for n in numbers("$3,400,000 and $3.4M and 94.7% and -15.0% and $25 million")
    }
    assert got["$3,400,000"] == (3_400_000, 0.5)
    assert got["$3.4M"] == (3_400_000, 50_000)
    assert got["94.7%"] == (94.7, pytest.approx(0.05))
    assert got["-15.0%"][0] == -15.0
    assert got["$25 million"] == (25_000_000, 500_000)
    assert (
        numbers("Q3 and TAMARIND-4 and 1x and 2025-2028")[0].value == 2025
    )  # codes are not numbers


def test_rounded_number_matches_precise_one_but_not_a_different_one() -> None:
    span = "Quarterly revenue was $3,412,000 in Q3 2025."
    assert supports("Q3 2025 revenue was $3.4M", span).supported
    assert not supports("Q3 2025 revenue was $3.5M", span).supported
    assert not supports(
        "Q3 2025 revenue was $3,400,000", span
    ).supported  # exact figure: must match


def test_names_must_occur_in_the_cited_item() -> None:
    item = "Elena Vasquez studied at Stanford and MIT."
    assert supports("Elena Vasquez studied at Stanford", item).supported
    verdict = supports("Elena Vasquez studied at Harvard", item)
    assert not verdict.supported and "harvard" in verdict.reason


def test_word_coverage_threshold() -> None:
    span = "The board has five seats held by founders and investors."
    claim = "The board has five seats, chosen by lottery among shareholders every winter"
    assert not supports(claim, span, tau=0.5).supported
    assert supports(claim, span, tau=0.2).supported


def test_entities_and_content_words() -> None:
    assert {"vasquez", "stanford", "tamarind-4", "q3"} <= entities(
        "Elena Vasquez of Stanford said TAMARIND-4 in Q3"
    )
    assert "the" not in content_words("the revenue of the company")
    assert content_words("Revenues growing") == content_words("revenue grows")
    assert content_words("rotated quarterly") == content_words("rotate quarterly")


@pytest.mark.parametrize(
    "sentence",
    [
        "The founders previously sold a company.",
        "the company was sold twice.",
        "Revenue grew quickly after the merger.",
        "She left the board last spring.",
    ],
)
def test_plain_declarative_sentences_are_claims(sentence: str) -> None:
    # Once missed (no digit, quote or capitalised name): an unsupported answer scored 1.0.
    assert [c.text for c in split_response(sentence).claims] == [sentence]


@pytest.mark.parametrize(
    "text", ["I hope this helps!", "Here is what I found:", "Is that the right fund?", "Thanks."]
)
def test_questions_lead_ins_and_pleasantries_are_not_claims(text: str) -> None:
    assert split_response(text).claims == ()


def test_an_uncited_declarative_answer_counts_its_claims() -> None:
    split = split_response("The founders previously sold a company. They moved to Lisbon.")
    assert len(split.claims) == 2 and all(not c.citations for c in split.claims)
