"""Property tests: any response text scores in [0, 1], deterministically, with consistent claims."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.tez.bundle import Bundle, open_bundle
from assay.tez.heuristic import score_turn
from assay.tez.records import SessionTurn

REFS = [
    "market-landscape:p2",
    "technical-assessment:section-2",
    "financial-projections:table-1",
    "ops-runbook",
    "ghost",
    "founder-memo:p99",
    "tez.md",
    "market-landscape:p2-3",
]
WORDS = [
    "The",
    "market",
    "is",
    "$18.7 billion",
    "94.7%",
    "CASSOWARY-9",
    "does not contain",
    "NovaTech",
    ".",
    ",",
    "\n\n",
    "- ",
    "| a | b |",
    "\u00e9t\u00e9",
    "2025",
    "Google",
    "[[",
    "]]",
    ":",
]


@pytest.fixture(scope="module")
def interop(bundles_dir: Path) -> Bundle:
    return open_bundle(bundles_dir / "interop-level-3")


pieces = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(REFS).map(lambda r: f" [[{r}]]"),
    st.lists(st.sampled_from(REFS), min_size=2, max_size=3).map(lambda rs: f" [[{', '.join(rs)}]]"),
    st.text(max_size=8),
)


@given(parts=st.lists(pieces, max_size=40))
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_scores_are_bounded_consistent_and_deterministic(interop: Bundle, parts: list[str]) -> None:
    text = " ".join(parts)
    turn = SessionTurn(query_id="q", query="What is the market size?", response=text)
    first = score_turn(interop, turn)
    again = score_turn(interop, turn)
    assert first == again
    for value in (first.groundedness, first.relevance, first.faithfulness):
        assert 0.0 <= value <= 1.0
    assert first.n_verified <= first.n_citations
    for claim in first.claims:
        assert claim.grounded == bool(claim.source_items)
        assert not claim.grounded or claim.faithful
        assert set(claim.source_items) <= set(interop.items)
