"""``hybrid``: the heuristic first, the judge only for the claims the heuristic cannot decide.

Lexical matching can confirm support (every number, name and enough words of the claim found
at the cited location) but cannot refute it: a paraphrase fails the word check without being
wrong. So, per claim:

* a citation the heuristic accepts decides the claim: grounded, and faithful (no judge call);
* a claim with no located citation is decided too: nothing cited can ground it, and its
  faithfulness is the heuristic's (backed by some context text, taken whole);
* any other claim (located citations, none accepted lexically) goes to the judge with the same
  prompt as ``llm_as_judge``, which decides support per citation and faithfulness.

Relevance is the heuristic's lexical relevance (no judge call). The result records, in the
evaluation's warnings, how many claims the judge decided.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from assay.errors import MetricError
from assay.judging.client import Judge, ask
from assay.tez import heuristic
from assay.tez.bundle import Bundle
from assay.tez.citations import Resolution
from assay.tez.claims import Claim
from assay.tez.judge import CLAIM_VERSION, claim_prompt, parse_claim_verdict
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
from assay.tez.support import DEFAULT_TAU

METHOD = "hybrid"


async def _judged(
    bundle: Bundle,
    claim: Claim,
    resolutions: Sequence[Resolution],
    located: list[int],
    judge: Judge,
    usage: list[dict[str, Any]],
) -> ClaimOutcome:
    cited = [(claim.citations[i], resolutions[i]) for i in located]
    prompt = claim_prompt(bundle, claim.text, cited)
    try:
        verdict = await ask(
            judge,
            prompt,
            lambda text: parse_claim_verdict(text, len(located)),
            version=CLAIM_VERSION,
        )
    except MetricError as exc:
        usage.extend(exc.usage)
        raise MetricError(f"tez judge: {exc}", usage=tuple(usage)) from None
    usage.extend(verdict.usage)
    supported, faithful = verdict.value
    checks = [(False, r.reason) for r in resolutions]
    for n, index in enumerate(located, start=1):
        ok = n in supported
        checks[index] = (ok, "judge: supports" if ok else "judge: does not support")
    return ClaimOutcome(tuple(checks), faithful)


async def score_turn(
    bundle: Bundle,
    turn: SessionTurn,
    expectation: Expectation | None,
    judge: Judge,
    *,
    tau: float = DEFAULT_TAU,
) -> tuple[TurnScore, int]:
    """Score one turn; also return how many of its claims the judge decided."""
    prepared = prepare(bundle, turn)
    usage: list[dict[str, Any]] = []

    async def one(claim: Claim, resolutions: Sequence[Resolution]) -> tuple[ClaimOutcome, bool]:
        outcome = heuristic.claim_outcome(bundle, claim.text, claim.citations, resolutions, tau=tau)
        located = [
            i
            for i, r in enumerate(resolutions)
            if r.exists and r.location_resolved and r.text is not None
        ]
        if any(ok for ok, _ in outcome.supports) or not located:
            return outcome, False
        return await _judged(bundle, claim, resolutions, located, judge, usage), True

    decided = await asyncio.gather(
        *(one(c, r) for c, r in zip(prepared.split.claims, prepared.resolutions, strict=True))
    )
    relevance = lexical_relevance(turn, expectation, detect_abstention(turn, prepared))
    score = finish(
        bundle, turn, expectation, prepared, [o for o, _ in decided], relevance, tuple(usage)
    )
    return score, sum(1 for _, by_judge in decided if by_judge)


async def score_turns(
    bundle: Bundle,
    turns: Sequence[SessionTurn],
    expectations: dict[str, Expectation],
    judge: Judge,
    *,
    tau: float = DEFAULT_TAU,
) -> tuple[list[TurnScore], int]:
    """Every turn in order, and the number of claims the judge decided."""
    results = await asyncio.gather(
        *(score_turn(bundle, t, expectations.get(t.query_id), judge, tau=tau) for t in turns)
    )
    return [s for s, _ in results], sum(n for _, n in results)
