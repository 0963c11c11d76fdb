"""A failing retrieval row's reason reads relevance as the metrics do: graded judgements
(``{id: gain}``, gain 0 not relevant) and JSON strings as well as lists; and a ranking with
no answer text is not called an empty answer, since the ranking is what the metric scored."""

from __future__ import annotations

import pytest

from assay.data.outputs import Output
from assay.data.retrieved import RankedDocs
from assay.report.reasons import failing_reason

RANKING = Output("", RankedDocs(("d9", "d0", "d3", "d1")))


@pytest.mark.parametrize(
    "expected",
    [{"d0": 0, "d3": 2, "d7": 1}, '{"d0": 0, "d3": 2, "d7": 1}', ["d3", "d7"]],
)
def test_the_first_relevant_rank_of_graded_and_listed_judgements(expected: object) -> None:
    reason = failing_reason("retrieval-recall-at-k", 0.5, 0.6, {"k": 3}, expected, RANKING)
    assert reason == (
        "first relevant document at rank 3, k=3; retrieved: d9, d0, d3, d1; "
        "relevant: d3, d7 (score 0.5000 < threshold 0.6)"
    )


def test_a_ranking_without_a_relevant_document_says_so() -> None:
    reason = failing_reason(
        "retrieval-hit-at-k", 0.0, 0.5, {"k": 2, "hit": False}, {"d5": 1}, RANKING
    )
    assert reason == (
        "no relevant document retrieved in the top 2; retrieved: d9, d0, d3, d1; "
        "relevant: d5 (score 0.0000 < threshold 0.5)"
    )


def test_an_empty_text_is_still_an_empty_answer_to_a_text_metric() -> None:
    reason = failing_reason("exact-match", 0.0, 0.5, {}, "Canberra", RANKING)
    assert reason.startswith("empty answer; expected 'Canberra'")
