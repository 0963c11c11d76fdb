"""``nli_based``: per-claim entailment from a cross-encoder NLI model (extra ``assay[nli]``).

Claim splitting, citation existence and location checks stay deterministic
(:mod:`assay.tez.scoring`). For every claim the model reads (premise, hypothesis) pairs, the
premise being a window of a passage and the hypothesis the claim:

* a located citation *supports* the claim when some window of its passage entails the claim
  with probability >= ``threshold``;
* the claim is *faithful* when it is supported, or when one of the two uncited sections most
  similar to it (the passages the judge method also shows) entails it;
* relevance is the heuristic's :func:`~assay.tez.scoring.lexical_relevance`: NLI says whether a
  text follows from another, not whether it answers a question.

Passages longer than an NLI model's input are cut into sentence windows of at most
``WINDOW_CHARS`` characters and the highest entailment counts. The model is any
sentence-transformers ``CrossEncoder`` (hub name or local path) whose ``config.id2label`` names
an entailment label; the scorer is an injectable callable so the method is testable offline.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from assay.errors import UsageError
from assay.tez.bundle import Bundle
from assay.tez.citations import Resolution
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
from assay.tez.support import content_words

METHOD = "nli_based"
DEFAULT_THRESHOLD = 0.5
WINDOW_CHARS = 1000
EXTRA_PASSAGES = 2
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n|\n(?=\s*[-*#|])")

NliFn = Callable[[Sequence[tuple[str, str]]], list[float]]
"""Entailment probability of each ``(premise, hypothesis)`` pair."""


@dataclass(frozen=True, slots=True)
class NliModel:
    """A loaded scorer and the names the evaluator record carries."""

    score: NliFn
    name: str
    version: str


def windows(text: str, limit: int = WINDOW_CHARS) -> list[str]:
    """Consecutive sentences joined into windows of at most ``limit`` characters."""
    out: list[str] = []
    current = ""
    for sentence in (s.strip() for s in _SENTENCE_END.split(text)):
        if not sentence:
            continue
        while len(sentence) > limit:  # a single over-long sentence is cut, not dropped
            out.append(sentence[:limit])
            sentence = sentence[limit:]
        if current and len(current) + 1 + len(sentence) > limit:
            out.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
    if current:
        out.append(current)
    return out or [text[:limit]]


def _label_index(id2label: dict[int, str], prefix: str, model: str) -> int:
    for index, label in id2label.items():
        if str(label).lower().startswith(prefix):
            return int(index)
    raise UsageError(
        f"NLI model {model!r} names no '{prefix}...' label in config.id2label "
        f"({', '.join(map(str, id2label.values()))})"
    )


def load_cross_encoder(model: str) -> NliModel:
    """Load a sentence-transformers cross-encoder; UsageError when the extra is missing."""
    try:
        cross_encoder_class = import_module("sentence_transformers").CrossEncoder
    except ImportError:
        raise UsageError(
            "--method nli_based needs the nli extra: pip install 'assay[nli]'"
        ) from None
    try:
        encoder = cross_encoder_class(model)
    except (OSError, ValueError, RuntimeError) as exc:
        raise UsageError(f"cannot load NLI model {model!r}: {exc}") from None
    config = encoder.model.config
    entail = _label_index(dict(config.id2label), "entail", model)

    def score(pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        probs: Any = encoder.predict(
            [list(p) for p in pairs], apply_softmax=True, show_progress_bar=False
        )
        return [float(row[entail]) for row in probs.reshape(len(pairs), -1)]

    version = getattr(config, "_commit_hash", None) or "local"
    return NliModel(score=score, name=model, version=str(version))


def _nearest_sections(bundle: Bundle, claim: str, cited: set[str]) -> list[str]:
    """The uncited sections sharing the most content words with the claim."""
    from assay.tez.judge import sections

    words = content_words(claim)
    ranked = sorted(
        (
            (len(words & content_words(text)), label, text)
            for label, text in sections(bundle)
            if text not in cited
        ),
        key=lambda row: (-row[0], row[1]),
    )
    return [text for _, _, text in ranked[:EXTRA_PASSAGES]]


@dataclass(slots=True)
class _Batch:
    """Every (premise window, claim) pair of one turn, tagged by (claim, passage)."""

    pairs: list[tuple[str, str]]
    tags: list[tuple[int, int]]

    def add(self, claim_no: int, passage_no: int, passage: str, claim: str) -> None:
        for window in windows(passage):
            self.pairs.append((window, claim))
            self.tags.append((claim_no, passage_no))


def _best(batch: _Batch, probs: list[float]) -> dict[tuple[int, int], float]:
    best: dict[tuple[int, int], float] = {}
    for tag, p in zip(batch.tags, probs, strict=True):
        best[tag] = max(p, best.get(tag, 0.0))
    return best


def _located(resolutions: Sequence[Resolution]) -> list[int]:
    return [
        i
        for i, r in enumerate(resolutions)
        if r.exists and r.location_resolved and r.text is not None
    ]


def score_turn(
    bundle: Bundle,
    turn: SessionTurn,
    expectation: Expectation | None,
    nli: NliFn,
    *,
    threshold: float = DEFAULT_THRESHOLD,
) -> TurnScore:
    """Score one turn with the NLI model deciding support and faithfulness."""
    prepared = prepare(bundle, turn)
    claims = prepared.split.claims
    batch = _Batch([], [])
    extra_offset = 10_000  # passage numbers of uncited sections, apart from citation indices
    for c, (claim, resolutions) in enumerate(zip(claims, prepared.resolutions, strict=True)):
        located = _located(resolutions)
        for i in located:
            batch.add(c, i, resolutions[i].text or "", claim.text)
        cited = {resolutions[i].text or "" for i in located}
        for k, text in enumerate(_nearest_sections(bundle, claim.text, cited)):
            batch.add(c, extra_offset + k, text, claim.text)
    probs = nli(batch.pairs)
    if len(probs) != len(batch.pairs):
        raise UsageError(f"NLI scorer returned {len(probs)} scores for {len(batch.pairs)} pairs")
    best = _best(batch, probs)
    outcomes = []
    for c, resolutions in enumerate(prepared.resolutions):
        checks = [(False, r.reason) for r in resolutions]
        for i in _located(resolutions):
            p = best.get((c, i), 0.0)
            verdict = "entails" if p >= threshold else "does not entail"
            checks[i] = (p >= threshold, f"nli: passage {verdict} the claim (p={p:.2f})")
        backed = any(p >= threshold for (cc, _), p in best.items() if cc == c)
        outcomes.append(ClaimOutcome(tuple(checks), backed))
    relevance = lexical_relevance(turn, expectation, detect_abstention(turn, prepared))
    return finish(bundle, turn, expectation, prepared, outcomes, relevance)
