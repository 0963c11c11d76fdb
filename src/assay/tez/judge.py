"""``llm_as_judge``: per-claim verdicts from a chat model, same pipeline as the heuristic.

Claim splitting, citation existence and location checks stay deterministic
(:mod:`assay.tez.scoring`); the judge decides, per claim, which of the claim's located citations
state it and whether the claim is faithful to the context (shown: the cited passages plus the
two most lexically similar uncited sections). A second prompt rates relevance when the
expectations do not settle it (they do for abstentions).

Prompts, reply parsing, the re-ask and the provider call are the one judge stack of
:mod:`assay.judging`: a reply that stays malformed after one re-ask is a
:class:`~assay.errors.MetricError`, never a made-up verdict. The judge is a
:class:`~assay.judging.client.Judge`: the configured provider (cached, retried,
usage-accounted) or any async function of the chat messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from assay.errors import JudgeParseError, MetricError
from assay.judging.client import (
    Judge,
    JudgeFn,
    JudgeReply,
    ask,
    fill,
    judge_model,
    template_version,
)
from assay.judging.prompts import TEZ_CLAIM, TEZ_RELEVANCE
from assay.judging.replies import parse_tez_claim, parse_tez_relevance
from assay.providers.settings import ProviderSettings
from assay.tez.bundle import Bundle
from assay.tez.citations import CitationRef, Resolution, heading_index
from assay.tez.claims import Claim
from assay.tez.records import SessionTurn
from assay.tez.scoring import ClaimOutcome, TurnScore, detect_abstention, finish, prepare
from assay.tez.session import Expectation
from assay.tez.support import content_words

METHOD = "llm_as_judge"
PASSAGE_CHARS = 3000
EXTRA_PASSAGES = 2

CLAIM_VERSION = template_version("tez-claim", TEZ_CLAIM)
RELEVANCE_VERSION = template_version("tez-relevance", TEZ_RELEVANCE)
T = TypeVar("T")

parse_claim_verdict = parse_tez_claim
parse_relevance = parse_tez_relevance


# --------------------------------------------------------------------------- prompts


def _passage(label: str, text: str) -> str:
    clipped = text if len(text) <= PASSAGE_CHARS else text[:PASSAGE_CHARS] + " [...]"
    return f"{label}\n<<<{clipped}>>>"


def sections(bundle: Bundle) -> list[tuple[str, str]]:
    """``(label, text)`` of every top-level section of every readable item and the synthesis."""
    out: list[tuple[str, str]] = []
    bodies = [(i.id, i.text) for i in bundle.items.values() if i.text is not None]
    if bundle.synthesis_text is not None:
        bodies.append(("tez.md", bundle.synthesis_text))
    for item_id, text in bodies:
        headings, lines = heading_index(text)
        top = [h for h in headings if h.level == min((x.level for x in headings), default=1)]
        chosen = [h for h in headings if h.level <= 2] or top
        if not chosen:
            out.append((item_id, text))
        for h in chosen:
            out.append((f"{item_id} ({h.title})", "\n".join(lines[h.start : h.end])))
    return out


def claim_prompt(
    bundle: Bundle, claim: str, cited: Sequence[tuple[CitationRef, Resolution]]
) -> str:
    shown = [
        _passage(f"[{n}] {ref.label}", res.text or "")
        for n, (ref, res) in enumerate(cited, start=1)
    ]
    words = content_words(claim)
    cited_texts = {res.text for _, res in cited}
    ranked = sorted(
        (
            (len(words & content_words(text)), label, text)
            for label, text in sections(bundle)
            if text not in cited_texts
        ),
        key=lambda row: (-row[0], row[1]),
    )
    others = [
        _passage(f"[C{n}] {label}", text)
        for n, (_, label, text) in enumerate(ranked[:EXTRA_PASSAGES], start=1)
    ]
    values = {
        "claim": claim,
        "cited": "\n\n".join(shown) or "(none)",
        "others": "\n\n".join(others) or "(none)",
    }
    return fill(TEZ_CLAIM, values)


# --------------------------------------------------------------------------- scoring


async def _ask(
    judge: Judge,
    prompt: str,
    parse: Callable[[str], T],
    version: str,
    usage: list[dict[str, Any]],
) -> T:
    """One verdict through the judge stack; usage of every call of the turn is kept, also
    when a verdict fails (the error carries all of it)."""
    try:
        verdict = await ask(judge, prompt, parse, version=version)
    except MetricError as exc:
        usage.extend(exc.usage)
        raise MetricError(f"tez judge: {exc}", usage=tuple(usage)) from None
    usage.extend(verdict.usage)
    return verdict.value


async def score_turn(
    bundle: Bundle, turn: SessionTurn, expectation: Expectation | None, judge: Judge
) -> TurnScore:
    """Score one turn with the judge deciding support, faithfulness and (mostly) relevance."""
    from assay.tez.citations import strip_citations

    prepared = prepare(bundle, turn)
    usage: list[dict[str, Any]] = []

    async def one_claim(claim: Claim, resolutions: Sequence[Resolution]) -> ClaimOutcome:
        located = [
            (i, (ref, res))
            for i, (ref, res) in enumerate(zip(claim.citations, resolutions, strict=True))
            if res.exists and res.location_resolved and res.text is not None
        ]
        prompt = claim_prompt(bundle, claim.text, [pair for _, pair in located])
        supported, faithful = await _ask(
            judge, prompt, lambda t: parse_tez_claim(t, len(located)), CLAIM_VERSION, usage
        )
        checks = [(False, res.reason) for res in resolutions]
        for n, (index, _) in enumerate(located, start=1):
            checks[index] = (
                n in supported,
                "judge: supports" if n in supported else "judge: does not support",
            )
        return ClaimOutcome(tuple(checks), faithful)

    outcomes = await asyncio.gather(
        *(one_claim(c, r) for c, r in zip(prepared.split.claims, prepared.resolutions, strict=True))
    )
    abstained = detect_abstention(turn, prepared)
    if expectation is not None and abstained:
        relevance = 1.0 if expectation.behavior == "abstain" else 0.0
    else:
        prompt = fill(
            TEZ_RELEVANCE, {"query": turn.query, "answer": strip_citations(turn.response)}
        )
        relevance = await _ask(judge, prompt, parse_tez_relevance, RELEVANCE_VERSION, usage)
    return finish(bundle, turn, expectation, prepared, list(outcomes), relevance, tuple(usage))


async def score_turns(
    bundle: Bundle,
    turns: Sequence[SessionTurn],
    expectations: dict[str, Expectation],
    judge: Judge,
) -> list[TurnScore]:
    return list(
        await asyncio.gather(
            *(score_turn(bundle, t, expectations.get(t.query_id), judge) for t in turns)
        )
    )


def as_judge(judge: Judge | JudgeFn | None, model: str | None, settings: ProviderSettings) -> Judge:
    """A :class:`Judge` from a Judge, an async function of the chat messages, or None (the
    provider of ``settings`` with ``model``, default their judge model)."""
    if isinstance(judge, Judge):
        return judge
    return Judge(model=model, call=judge, settings=settings)


def judge_model_name(model: str | None, settings: ProviderSettings) -> str:
    """The model a provider judge will use (the settings' judge model by default)."""
    return judge_model(Judge(model=model, settings=settings))


__all__ = [
    "METHOD",
    "Judge",
    "JudgeFn",
    "JudgeParseError",
    "JudgeReply",
    "as_judge",
    "claim_prompt",
    "judge_model_name",
    "parse_claim_verdict",
    "parse_relevance",
    "score_turn",
    "score_turns",
    "sections",
]
