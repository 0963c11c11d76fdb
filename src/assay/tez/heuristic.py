"""``automated_heuristic``: deterministic, offline scoring of an interrogation turn.

Per claim, each citation that exists and whose location resolves is checked for lexical support
(:func:`assay.tez.support.supports`: numbers at the location, names in the item, content-word
coverage >= tau). A claim none of whose citations support it may still be *faithful* when some
context text (any item or the synthesis, whole) supports it: it is mis-cited, not invented.
Relevance is :func:`assay.tez.scoring.lexical_relevance`.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.tez.bundle import Bundle
from assay.tez.citations import CitationRef, Resolution
from assay.tez.records import SessionTurn
from assay.tez.scoring import (
    ClaimOutcome,
    TurnScore,
    detect_abstention,
    finish,
    lexical_relevance,
    prepare,
)
from assay.tez.session import Expectation
from assay.tez.support import DEFAULT_TAU, contributes, supports

METHOD = "automated_heuristic"


def context_texts(bundle: Bundle) -> list[str]:
    """Every readable text inside the grounding boundary: items, then the synthesis."""
    texts = [item.text for item in bundle.items.values() if item.text is not None]
    if bundle.synthesis_text is not None:
        texts.append(bundle.synthesis_text)
    return texts


def backed_anywhere(claim: str, bundle: Bundle, *, tau: float = DEFAULT_TAU) -> bool:
    """Whether some context text, taken whole, supports the claim."""
    return any(supports(claim, text, text, tau=tau).supported for text in context_texts(bundle))


def _joint_support(
    bundle: Bundle,
    claim: str,
    refs: Sequence[CitationRef],
    resolutions: Sequence[Resolution],
    checks: list[tuple[bool, str]],
    tau: float,
) -> list[tuple[bool, str]]:
    """``[[a, b]]`` may back a claim together: each number in one place, the words in another.

    When no single citation supports the claim, the located spans are tried as one text; if
    that supports it, the citations whose span holds part of the claim count as supporting.
    """
    located = [
        i for i, res in enumerate(resolutions) if res.exists and res.location_resolved and res.text
    ]
    if len(located) < 2:
        return checks
    spans = [resolutions[i].text or "" for i in located]
    wholes = []
    for i in located:
        item = bundle.item(refs[i].item_id)
        whole = bundle.synthesis_text if resolutions[i].synthesis else (item.text if item else None)
        if whole and whole not in wholes:
            wholes.append(whole)
    if not supports(claim, "\n".join(spans), "\n".join(wholes), tau=tau).supported:
        return checks
    out = list(checks)
    for i, span in zip(located, spans, strict=True):
        if contributes(claim, span):
            out[i] = (True, "supports the claim together with the claim's other citations")
    return out


def citation_checks(
    bundle: Bundle,
    claim: str,
    refs: Sequence[CitationRef],
    resolutions: Sequence[Resolution],
    *,
    tau: float = DEFAULT_TAU,
) -> list[tuple[bool, str]]:
    """Per citation: does its located text back the claim lexically (alone or jointly)?"""
    checks = []
    for ref, res in zip(refs, resolutions, strict=True):
        if not res.exists or not res.location_resolved or res.text is None:
            checks.append((False, res.reason))
            continue
        item = bundle.item(ref.item_id)
        whole = bundle.synthesis_text if res.synthesis else (item.text if item else None)
        verdict = supports(claim, res.text, whole, tau=tau)
        checks.append((verdict.supported, verdict.reason))
    if not any(ok for ok, _ in checks):
        checks = _joint_support(bundle, claim, refs, resolutions, checks, tau)
    return checks


def claim_outcome(
    bundle: Bundle,
    claim: str,
    refs: Sequence[CitationRef],
    resolutions: Sequence[Resolution],
    *,
    tau: float = DEFAULT_TAU,
) -> ClaimOutcome:
    """The heuristic's decision for one claim: lexical support per citation, faithfulness."""
    checks = citation_checks(bundle, claim, refs, resolutions, tau=tau)
    cited_ok = any(ok for ok, _ in checks)
    faithful = cited_ok or backed_anywhere(claim, bundle, tau=tau)
    return ClaimOutcome(tuple(checks), faithful)


def score_turn(
    bundle: Bundle,
    turn: SessionTurn,
    expectation: Expectation | None = None,
    *,
    tau: float = DEFAULT_TAU,
) -> TurnScore:
    """Score one turn with rules only; same inputs always give the same numbers."""
    prepared = prepare(bundle, turn)
    outcomes = [
        claim_outcome(bundle, claim.text, claim.citations, resolutions, tau=tau)
        for claim, resolutions in zip(prepared.split.claims, prepared.resolutions, strict=True)
    ]
    relevance = lexical_relevance(turn, expectation, detect_abstention(turn, prepared))
    return finish(bundle, turn, expectation, prepared, outcomes, relevance)
