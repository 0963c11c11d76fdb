"""``llm_as_judge``: per-claim verdicts from a chat model, same pipeline as the heuristic.

Claim splitting, citation existence and location checks stay deterministic
(:mod:`assay.tez.scoring`); the judge decides, per claim, which of the claim's located citations
state it and whether the claim is faithful to the context (shown: the cited passages plus the
two most lexically similar uncited sections). A second prompt rates relevance when the
expectations do not settle it (they do for abstentions). Replies must be one strict JSON object;
anything else is a :class:`~assay.errors.MetricError`, never a made-up verdict.

The judge is any async callable ``prompt -> JudgeReply``; :func:`provider_judge` adapts the
OpenAI-compatible client of :mod:`assay.providers` (cached, retried, usage-accounted).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.errors import MetricError
from assay.tez.bundle import Bundle
from assay.tez.citations import CitationRef, Resolution, heading_index
from assay.tez.records import SessionTurn
from assay.tez.scoring import ClaimOutcome, TurnScore, detect_abstention, finish, prepare
from assay.tez.session import Expectation
from assay.tez.support import content_words

METHOD = "llm_as_judge"
TEMPLATE_VERSION = "tez-judge-v1"
PASSAGE_CHARS = 3000
EXTRA_PASSAGES = 2
JUDGE_PARAMS: dict[str, Any] = {
    "temperature": 0,
    "seed": 42,
    "response_format": {"type": "json_object"},
}

CLAIM_PROMPT = """\
You check one claim taken from an answer about a bundle of documents.

Claim:
<<<{claim}>>>

Passages the answer cited for this claim:
{cited}

Other passages from the same bundle (not cited):
{others}

Decide:
- "supported_by": the numbers of the CITED passages that state the claim or directly imply it
  (every number, name and fact of the claim must be there). Use [] if none does.
- "faithful": true when some passage above (cited or not) backs the claim and none contradicts
  it; false when the claim adds facts, names, numbers or quotations that no passage gives.

Reply with one JSON object and nothing else, for example:
{{"supported_by": [1], "faithful": true}}"""

RELEVANCE_PROMPT = """\
Rate how directly an answer addresses a question. Off-topic or padded content lowers the
rating; whether the answer is true does not matter here.

Question:
<<<{query}>>>

Answer:
<<<{answer}>>>

Reply with one JSON object and nothing else: {{"relevance": <number from 0 to 1>}}"""


class JudgeParseError(ValueError):
    """The judge's reply is not the JSON object the prompt asked for."""


@dataclass(frozen=True, slots=True)
class JudgeReply:
    """What a judge call returns: the reply text and one usage record per provider call."""

    text: str
    usage: tuple[dict[str, Any], ...] = field(default=())


JudgeFn = Callable[[str], Awaitable[JudgeReply]]


# --------------------------------------------------------------------------- parsing


def parse_object(text: str) -> dict[str, Any]:
    """The single JSON object of a reply (one optional ```json fence allowed around it)."""
    body = text.strip()
    if len(body) >= 6 and body.startswith("```") and body.endswith("```"):
        # slicing, not a regex: a lazy pattern here is quadratic on long whitespace runs
        inner = body[3:-3]
        body = (inner[4:] if inner.startswith("json") else inner).strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise JudgeParseError(f"reply is not valid JSON ({exc.msg})") from None
    except ValueError:  # an integer literal longer than Python's int conversion limit
        raise JudgeParseError("reply holds a number too long to read") from None
    except RecursionError:
        raise JudgeParseError("reply is nested too deeply") from None
    if not isinstance(data, dict):
        raise JudgeParseError("reply must be a JSON object")
    return data


def _only_keys(
    data: dict[str, Any], required: set[str], optional: frozenset[str] = frozenset()
) -> None:
    missing = sorted(required - set(data))
    if missing:
        raise JudgeParseError(f"reply is missing the key(s): {', '.join(missing)}")
    extra = sorted(set(data) - required - optional)
    if extra:
        raise JudgeParseError(f"reply has unsupported key(s): {', '.join(extra)}")


def parse_claim_verdict(text: str, n_cited: int) -> tuple[frozenset[int], bool]:
    """``(1-based cited passages that support, faithful)`` from a claim-verdict reply."""
    data = parse_object(text)
    _only_keys(data, {"supported_by", "faithful"}, frozenset({"reason"}))
    cited = data["supported_by"]
    if not isinstance(cited, list) or any(
        isinstance(i, bool) or not isinstance(i, int) for i in cited
    ):
        raise JudgeParseError("'supported_by' must be a list of passage numbers")
    if any(i < 1 or i > n_cited for i in cited):
        raise JudgeParseError(f"'supported_by' names a passage outside 1..{n_cited}")
    faithful = data["faithful"]
    if not isinstance(faithful, bool):
        raise JudgeParseError("'faithful' must be true or false")
    return frozenset(cited), faithful


def parse_relevance(text: str) -> float:
    data = parse_object(text)
    _only_keys(data, {"relevance"}, frozenset({"reason"}))
    value = data["relevance"]
    # Compared before any float(): a 2**1100 integer must not raise OverflowError; NaN fails.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise JudgeParseError("'relevance' must be a number from 0 to 1")
    return float(value)


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
    return CLAIM_PROMPT.format(
        claim=claim, cited="\n\n".join(shown) or "(none)", others="\n\n".join(others) or "(none)"
    )


# --------------------------------------------------------------------------- scoring


async def _ask(
    judge: JudgeFn, prompt: str, parse: Callable[[str], Any], usage: list[dict[str, Any]]
) -> Any:
    reply = await judge(prompt)
    usage.extend(reply.usage)
    try:
        return parse(reply.text)
    except JudgeParseError as exc:
        raise MetricError(f"tez judge: {exc}", usage=tuple(usage)) from None


async def score_turn(
    bundle: Bundle, turn: SessionTurn, expectation: Expectation | None, judge: JudgeFn
) -> TurnScore:
    """Score one turn with the judge deciding support, faithfulness and (mostly) relevance."""
    from assay.tez.citations import strip_citations

    prepared = prepare(bundle, turn)
    usage: list[dict[str, Any]] = []

    async def one_claim(claim: Any, resolutions: Sequence[Resolution]) -> ClaimOutcome:
        located = [
            (i, (ref, res))
            for i, (ref, res) in enumerate(zip(claim.citations, resolutions, strict=True))
            if res.exists and res.location_resolved and res.text is not None
        ]
        prompt = claim_prompt(bundle, claim.text, [pair for _, pair in located])
        supported, faithful = await _ask(
            judge, prompt, lambda t: parse_claim_verdict(t, len(located)), usage
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
        prompt = RELEVANCE_PROMPT.format(query=turn.query, answer=strip_citations(turn.response))
        relevance = await _ask(judge, prompt, parse_relevance, usage)
    return finish(bundle, turn, expectation, prepared, list(outcomes), relevance, tuple(usage))


async def score_turns(
    bundle: Bundle,
    turns: Sequence[SessionTurn],
    expectations: dict[str, Expectation],
    judge: JudgeFn,
) -> list[TurnScore]:
    return list(
        await asyncio.gather(
            *(score_turn(bundle, t, expectations.get(t.query_id), judge) for t in turns)
        )
    )


def provider_judge(model: str | None = None) -> JudgeFn:
    """A judge backed by :mod:`assay.providers` (cache, retries, usage); replies that are not a
    JSON object are rejected by the client, so they are never cached."""

    async def call(prompt: str) -> JudgeReply:
        from assay.providers.chat import ReplyRejected
        from assay.providers.registry import chat_provider

        provider = chat_provider(model)

        def accept(text: str) -> str:
            try:
                parse_object(text)
            except JudgeParseError as exc:
                raise ReplyRejected(str(exc)) from None
            return text

        text, reply = await provider.complete(
            [{"role": "user", "content": prompt}],
            params=JUDGE_PARAMS,
            template_version=TEMPLATE_VERSION,
            accept=accept,
            what="tez judge request",
        )
        return JudgeReply(text, tuple(dict(u) for u in reply.usage))

    return call


def judge_model_name(model: str | None) -> str:
    """The model a provider judge will use (the configured judge model by default)."""
    if model:
        return model
    from assay.providers.settings import current

    return current().judge_model
