"""``human_in_loop``: per-claim verdicts imported from reviewers' file.

assay splits each response into claims and resolves the citations exactly as for the other
methods; the reviewers decide, per claim, whether it is grounded (and by which cited items)
and faithful. The file (JSON or YAML, ``schema_version: assay.tez-human-verdicts.v1``)::

    reviewer: alice               # the evaluator record's model
    version: "2026-11-20"         # its model_version (default: a hash of the file)
    verdicts:
      - {query_id: q-001, claim: 1, grounded: true, source_citations: [financial-model]}
      - {query_id: q-001, claim: 2, text: "Churn is 4%.", grounded: false, faithful: true}
    relevance: {q-001: 0.9}       # optional per query; else the heuristic's lexical relevance

``claim`` is the 1-based position of the claim in the response, as ``assay tez score --format
json`` lists them; ``text``, when given, must equal that claim (whitespace and case aside), so a
stale file is refused rather than applied to the wrong claim. ``faithful`` defaults to
``grounded``. A grounded claim is supported by its located citations to the items in
``source_citations`` (default: every located citation to a context item). Every claim of every
scored turn needs a verdict; a missing one is an input error naming file, query and claim.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.data.documents import parse_document, read_text
from assay.errors import TezError
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

METHOD = "human_in_loop"
VERDICTS_SCHEMA: Final = "assay.tez-human-verdicts.v1"


class ClaimReview(BaseModel):
    """One reviewer verdict on one claim."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query_id: str = Field(min_length=1)
    claim: int = Field(ge=1, description="1-based position of the claim in the response")
    text: str | None = Field(default=None, description="the claim, to catch a stale file")
    grounded: bool
    faithful: bool | None = Field(default=None, description="default: the grounded verdict")
    source_citations: list[str] | None = Field(
        default=None, description="cited items that support the claim (default: all located)"
    )


class HumanVerdicts(BaseModel):
    """The reviewers' file for ``--method human_in_loop``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal["assay.tez-human-verdicts.v1"] = VERDICTS_SCHEMA
    reviewer: str = Field(default="human", min_length=1)
    version: str | None = None
    session_id: str | None = Field(default=None, description="when given, must match")
    verdicts: list[ClaimReview]
    relevance: dict[str, float] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Reviews:
    """A loaded verdict file, indexed by (query_id, claim number)."""

    source: str
    document: HumanVerdicts
    digest: str

    @property
    def version(self) -> str:
        return self.document.version or f"sha256:{self.digest[:12]}"

    def get(self, query_id: str, claim: int) -> ClaimReview | None:
        for review in self.document.verdicts:
            if review.query_id == query_id and review.claim == claim:
                return review
        return None


def load_reviews(path: str | Path) -> Reviews:
    """Read and validate a verdict file; TezError names the file, query and field."""
    path = Path(path)
    text = read_text(path, TezError)
    data = parse_document(text, path, TezError)
    try:
        document = HumanVerdicts.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err["loc"]]
        raise TezError(err["msg"], file=str(path), field=".".join(loc) or None) from None
    seen: set[tuple[str, int]] = set()
    for review in document.verdicts:
        key = (review.query_id, review.claim)
        if key in seen:
            raise TezError(
                f"claim {review.claim} has two verdicts", file=str(path), sample=review.query_id
            )
        seen.add(key)
    for query_id, value in document.relevance.items():
        if not 0.0 <= value <= 1.0:
            raise TezError(
                "relevance must be in [0, 1]", file=str(path), sample=query_id, field="relevance"
            )
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Reviews(source=str(path), document=document, digest=digest)


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).lower() == " ".join(b.split()).lower()


def _outcome(
    review: ClaimReview, refs: Sequence[CitationRef], resolutions: Sequence[Resolution]
) -> ClaimOutcome:
    allowed = None if review.source_citations is None else set(review.source_citations)
    checks = []
    for ref, res in zip(refs, resolutions, strict=True):
        located = res.exists and res.location_resolved and not res.synthesis
        chosen = allowed is None or ref.item_id in allowed
        if review.grounded and located and chosen:
            checks.append((True, "reviewer: supports"))
        else:
            checks.append((False, "reviewer: does not support" if located else res.reason))
    faithful = review.grounded if review.faithful is None else review.faithful
    return ClaimOutcome(tuple(checks), faithful)


def score_turn(
    bundle: Bundle,
    turn: SessionTurn,
    expectation: Expectation | None,
    reviews: Reviews,
    warnings: list[str],
) -> TurnScore:
    """Score one turn from the reviewers' verdicts (relevance from the file, else lexical)."""
    prepared = prepare(bundle, turn)
    outcomes = []
    for n, (claim, resolutions) in enumerate(
        zip(prepared.split.claims, prepared.resolutions, strict=True), start=1
    ):
        review = reviews.get(turn.query_id, n)
        if review is None:
            raise TezError(
                f"no reviewer verdict for claim {n} ({claim.text[:60]!r})",
                file=reviews.source,
                sample=turn.query_id,
                field="verdicts",
            )
        if review.text is not None and not _same(review.text, claim.text):
            raise TezError(
                f"claim {n} reads {claim.text[:60]!r}, not the reviewed {review.text[:60]!r}",
                file=reviews.source,
                sample=turn.query_id,
                field="verdicts.text",
            )
        outcome = _outcome(review, claim.citations, resolutions)
        if review.grounded and not any(ok for ok, _ in outcome.supports):
            warnings.append(
                f"{turn.query_id} claim {n}: marked grounded, but none of its citations to the "
                "named context items resolves; scored as not grounded"
            )
        outcomes.append(outcome)
    relevance = reviews.document.relevance.get(turn.query_id)
    if relevance is None:
        relevance = lexical_relevance(turn, expectation, detect_abstention(turn, prepared))
    return finish(bundle, turn, expectation, prepared, outcomes, relevance)


def unused_reviews(reviews: Reviews, turns: Sequence[SessionTurn]) -> list[str]:
    """Verdicts for queries the session does not hold (a likely mix-up, so reported)."""
    ids = {t.query_id for t in turns}
    return sorted({r.query_id for r in reviews.document.verdicts if r.query_id not in ids})
