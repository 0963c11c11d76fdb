"""What both scoring methods share: claims, citation checks, and the per-turn score.

A method only decides, per claim, which of its (existing, located) citations support it and
whether the claim is faithful to the context; everything else is common and deterministic:

* ``groundedness`` = grounded claims / claims, a claim being grounded when at least one of its
  citations to a *context item* supports it (a synthesis citation alone does not ground a claim,
  TIP section 3.5); ``source_citations`` = the supporting item ids, ``[]`` when not grounded;
* ``faithfulness`` = faithful claims / claims (faithful = grounded, or backed by some context
  text even if mis-cited; never when it contains a phrase the expectations forbid);
* zero claims (a bare abstention) gives 1.0 for both: nothing ungrounded was said;
* ``relevance`` comes from the method (see :func:`lexical_relevance` for the heuristic one);
* abstention: the turn is classified ``abstention``, or (no classification given) it opens with
  an abstention statement and makes no uncited claim; it is *correct* only when the
  expectations say to abstain, nothing forbidden is said and every claim is faithful.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.tez.bundle import Bundle
from assay.tez.citations import CitationRef, Resolution, resolve
from assay.tez.claims import Claim, SplitResponse, split_response
from assay.tez.records import SessionTurn
from assay.tez.session import Expectation
from assay.tez.support import content_words, stem

GENERIC_QUERY_WORDS = frozenset(
    [
        "tell",
        "explain",
        "describe",
        "give",
        "list",
        "compare",
        "summarize",
        "summarise",
        "know",
        "find",
        "detail",
        "details",
        "current",
        "overall",
        "main",
        "key",
    ]
)
# content_words stems what it returns: the request words are dropped by their stems, so
# "summarize" and "compare" go as "tell" does (the unstemmed list never matched them).
GENERIC_QUERY_STEMS = frozenset(stem(word) for word in GENERIC_QUERY_WORDS)


@dataclass(frozen=True, slots=True)
class CitationVerdict:
    ref: CitationRef
    resolution: Resolution
    supports: bool
    reason: str

    @property
    def verified(self) -> bool:
        return self.resolution.exists and self.resolution.location_resolved and self.supports


@dataclass(frozen=True, slots=True)
class ClaimVerdict:
    text: str
    citations: tuple[CitationVerdict, ...]
    grounded: bool
    faithful: bool
    source_items: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ClaimOutcome:
    """A method's decision for one claim: per-citation support, and faithfulness."""

    supports: tuple[tuple[bool, str], ...]
    faithful: bool


@dataclass(frozen=True, slots=True)
class TurnScore:
    """Every number assay derives for one interrogation turn."""

    turn: SessionTurn
    claims: tuple[ClaimVerdict, ...]
    groundedness: float
    relevance: float
    faithfulness: float
    abstained: bool
    abstention_expected: bool | None
    abstention_correct: bool | None
    n_citations: int
    n_verified: int
    relevant_items: tuple[str, ...] | None
    relevant_cited: int | None
    chunk_relevance: float | None
    usage: tuple[dict[str, Any], ...] = field(default=())

    @property
    def citation_accuracy(self) -> float | None:
        return self.n_verified / self.n_citations if self.n_citations else None

    @property
    def completeness(self) -> float | None:
        if not self.relevant_items or self.relevant_cited is None:
            return None
        return self.relevant_cited / len(self.relevant_items)


@dataclass(frozen=True, slots=True)
class Prepared:
    """A turn split into claims with every citation resolved against the bundle."""

    split: SplitResponse
    resolutions: tuple[tuple[Resolution, ...], ...]

    @property
    def uncited_claims(self) -> int:
        return sum(1 for c in self.split.claims if not c.citations)


def prepare(bundle: Bundle, turn: SessionTurn) -> Prepared:
    split = split_response(turn.response)
    return Prepared(
        split, tuple(tuple(resolve(bundle, r) for r in c.citations) for c in split.claims)
    )


def detect_abstention(turn: SessionTurn, prepared: Prepared) -> bool:
    if turn.classification is not None:
        return turn.classification == "abstention"
    return prepared.split.leading_abstention and prepared.uncited_claims == 0


def _claim_verdict(
    claim: Claim,
    resolutions: tuple[Resolution, ...],
    outcome: ClaimOutcome,
    forbidden: Sequence[str],
) -> ClaimVerdict:
    """One claim's verdict: its checked citations, grounding and faithfulness."""
    cites = tuple(
        CitationVerdict(ref, res, ok and res.exists and res.location_resolved, why)
        for ref, res, (ok, why) in zip(claim.citations, resolutions, outcome.supports, strict=True)
    )
    items = tuple(
        dict.fromkeys(c.ref.item_id for c in cites if c.verified and not c.resolution.synthesis)
    )
    grounded = bool(items)
    says_forbidden = any(p.lower() in claim.text.lower() for p in forbidden if p)
    faithful = (grounded or outcome.faithful) and not says_forbidden
    return ClaimVerdict(claim.text, cites, grounded, faithful, items)


def _share(flags: Sequence[bool]) -> float:
    """The share of true flags; 1.0 for none (nothing ungrounded was said)."""
    return sum(flags) / len(flags) if flags else 1.0


def _abstention_correct(
    turn: SessionTurn,
    expectation: Expectation | None,
    verdicts: Sequence[ClaimVerdict],
    *,
    abstained: bool,
) -> bool | None:
    """Whether the turn abstained exactly when expected (and cleanly); None without expectations."""
    if expectation is None:
        return None
    if expectation.behavior != "abstain":
        return not abstained
    clean = not expectation.forbidden_hits(turn.response) and all(v.faithful for v in verdicts)
    return abstained and clean


def _relevant_cited(
    relevant: tuple[str, ...] | None, cites: Sequence[CitationVerdict]
) -> int | None:
    """How many of the relevant items some existing citation points at."""
    if not relevant:
        return None
    cited_items = {c.ref.item_id for c in cites if c.resolution.exists}
    return len(cited_items & set(relevant))


def finish(
    bundle: Bundle,
    turn: SessionTurn,
    expectation: Expectation | None,
    prepared: Prepared,
    outcomes: Sequence[ClaimOutcome],
    relevance: float,
    usage: tuple[dict[str, Any], ...] = (),
) -> TurnScore:
    """Assemble the turn score from a method's per-claim outcomes."""
    forbidden = expectation.must_not_contain if expectation else ()
    verdicts = [
        _claim_verdict(claim, resolutions, outcome, forbidden)
        for claim, resolutions, outcome in zip(
            prepared.split.claims, prepared.resolutions, outcomes, strict=True
        )
    ]
    all_cites = [c for v in verdicts for c in v.citations]
    abstained = detect_abstention(turn, prepared)
    relevant = expectation.relevant_items if expectation and expectation.relevant_items else None
    return TurnScore(
        turn=turn,
        claims=tuple(verdicts),
        groundedness=_share([v.grounded for v in verdicts]),
        relevance=relevance,
        faithfulness=_share([v.faithful for v in verdicts]),
        abstained=abstained,
        abstention_expected=expectation.behavior == "abstain" if expectation else None,
        abstention_correct=_abstention_correct(turn, expectation, verdicts, abstained=abstained),
        n_citations=len(all_cites),
        n_verified=sum(c.verified for c in all_cites),
        relevant_items=relevant,
        relevant_cited=_relevant_cited(relevant, all_cites),
        chunk_relevance=chunk_relevance(turn, expectation),
        usage=usage,
    )


def query_coverage(query: str, response: str) -> float:
    """Share of the query's content words that the response uses (1.0 if it has none)."""
    wanted = {w for w in content_words(query) if w not in GENERIC_QUERY_STEMS}
    if not wanted:
        return 1.0
    have = content_words(response)
    return sum(1 for w in wanted if w in have) / len(wanted)


def lexical_relevance(turn: SessionTurn, expectation: Expectation | None, abstained: bool) -> float:
    """Heuristic relevance: does the response address what was asked?

    With expectations, an abstention is fully relevant when abstaining is expected and not at
    all when the context could answer; an answer scores the mean of query-word coverage and
    the share of required-content groups it contains. Without expectations, query coverage.
    """
    coverage = query_coverage(turn.query, turn.response)
    if expectation is None:
        return coverage
    if abstained:
        return 1.0 if expectation.behavior == "abstain" else 0.0
    signals = [coverage]
    if expectation.must_contain_groups:
        signals.append(
            expectation.contains_groups_met(turn.response) / len(expectation.must_contain_groups)
        )
    return sum(signals) / len(signals)


def chunk_relevance(turn: SessionTurn, expectation: Expectation | None) -> float | None:
    """Addendum 8.3.1: relevant chunks / chunks used, a chunk being relevant when its item is."""
    if not turn.chunks_used or expectation is None or not expectation.relevant_items:
        return None
    relevant = set(expectation.relevant_items)
    return sum(1 for c in turn.chunks_used if c.item_id in relevant) / len(turn.chunks_used)
