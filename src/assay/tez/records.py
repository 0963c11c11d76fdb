"""Pydantic models for every document the tez package reads or writes.

Two families live here:

* the Tez-side documents, whose shape is fixed by external specs and must not gain fields:
  the ``com.ragu.eval-metrics`` record (seed 004), the extension manifest, and the
  enterprise ``tezit-eval`` report (``enterprise-tip-eval.schema.json``). Their version is
  carried by the spec (``extension_version`` / schema ``$id``), not by a ``schema_version`` key,
  because both schemas forbid additional properties;
* assay's own documents (the interrogation-session input and the ``assay tez score`` JSON
  report), which carry ``schema_version`` like every other assay document.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

Unit = Annotated[float, Field(ge=0.0, le=1.0)]

VENDOR_EXTENSION_ID = "com.ragu.eval-metrics"
STANDARD_EXTENSION_ID = "tezit-eval"
EVAL_EXTENSION_IDS = (VENDOR_EXTENSION_ID, STANDARD_EXTENSION_ID)
SESSION_SCHEMA: Final = "assay.tez-session.v1"
SCORE_REPORT_SCHEMA: Final = "assay.tez-score.v1"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------- com.ragu.eval-metrics


class Scores(_Strict):
    """Per-query scores of the vendor record."""

    groundedness: Unit
    relevance: Unit
    faithfulness: Unit


class Evaluator(_Strict):
    """Who produced the scores (vendor record)."""

    model: str
    model_version: str
    evaluation_method: str


class ClaimScore(_Strict):
    """One claim of a response; ``source_citations`` is empty when not grounded."""

    claim: str
    grounded: bool
    source_citations: list[str]


class AggregateSessionScores(_Strict):
    """Rolling macro-mean over the session's queries so far (including this one)."""

    avg_groundedness: Unit
    avg_relevance: Unit
    avg_faithfulness: Unit
    total_queries: Annotated[int, Field(ge=1)]


class EvalMetricsRecord(_Strict):
    """``eval-metrics.json`` (and assay's ``records/<query_id>.json``)."""

    session_id: str
    query_id: str
    scores: Scores
    evaluator: Evaluator
    per_claim_scores: list[ClaimScore] | None = None
    aggregate_session_scores: AggregateSessionScores | None = None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class ExtensionManifest(_Strict):
    """``extensions/<id>/manifest.json``: six strings, as the extension specs show."""

    extension_id: str = Field(min_length=1)
    extension_version: str = Field(min_length=1)
    name: str
    description: str
    author: str
    url: str


VENDOR_MANIFEST = ExtensionManifest(
    extension_id=VENDOR_EXTENSION_ID,
    extension_version="1.0.0",
    name="Eval Metrics",
    description=(
        "Captures interrogation quality metrics including groundedness, relevance, and "
        "faithfulness scores"
    ),
    author="Ragu Platform",
    url="https://github.com/tezit-protocol/spec/extensions/vendor/com.ragu/eval-metrics",
)

STANDARD_MANIFEST = ExtensionManifest(
    extension_id=STANDARD_EXTENSION_ID,
    extension_version="1.0",
    name="Tez Enterprise TIP Evaluation Metrics",
    description=(
        "Relevance, faithfulness, citation accuracy, completeness and abstention rate of a TIP "
        "session (TIP Enterprise Addendum section 8), written by assay"
    ),
    author="assay",
    url="https://tezit.com/spec/v1.2/enterprise-tip-eval.schema.json",
)


# --------------------------------------------------------------------- tezit-eval (enterprise)


class TezitEvalMetrics(_Strict):
    """The five Addendum section 8 metrics; all required by the enterprise schema."""

    relevance: Unit
    faithfulness: Unit
    citation_accuracy: Unit
    completeness: Unit
    abstention_rate: Unit


class TezitEvalQueryResult(_Strict):
    query_id: str
    query_text: str
    metrics: TezitEvalMetrics


class TezitEvalEvaluator(_Strict):
    type: Literal["automated", "human", "hybrid"] | None = None
    model: str | None = None


class TezitEvalReport(_Strict):
    """A session report in the shape of ``enterprise-tip-eval.schema.json``."""

    session_id: str = Field(min_length=1)
    evaluated_at: str
    metrics: TezitEvalMetrics
    per_query_results: list[TezitEvalQueryResult] | None = None
    evaluator: TezitEvalEvaluator | None = None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


# --------------------------------------------------------------------- session input


Classification = Literal["grounded", "inferred", "partial", "abstention"]


class ChunkUsed(_Strict):
    """One retrieved chunk the response was generated from (only its source item matters)."""

    item_id: str = Field(min_length=1)
    location: str | None = None


class SessionTurn(_Strict):
    """One interrogation turn: the query and the response text with inline citations."""

    query_id: str = Field(min_length=1)
    query: str
    response: str
    classification: Classification | None = None
    chunks_used: list[ChunkUsed] | None = None


class SessionFile(_Strict):
    """The ``--session`` file: one TIP session's turns, in the order they happened."""

    schema_version: Literal["assay.tez-session.v1"] = SESSION_SCHEMA
    session_id: str = Field(min_length=1)
    turns: list[SessionTurn] = Field(min_length=1)


# --------------------------------------------------------------------- assay score report


class CitationCheck(_Strict):
    """Outcome of one citation reference (no evidence text, only ids and verdicts)."""

    item_id: str
    location: str | None
    exists: bool
    location_resolved: bool
    supports: bool
    reason: str


class ClaimResult(_Strict):
    claim: str
    grounded: bool
    faithful: bool
    source_citations: list[str]
    citations: list[CitationCheck]


class AddendumValues(_Strict):
    """Addendum section 8 values; ``None`` where the definition does not apply."""

    relevance: Unit | None = None
    faithfulness: Unit | None = None
    citation_accuracy: Unit | None = None
    completeness: Unit | None = None
    abstention_rate: Unit | None = None


class QueryResult(_Strict):
    """Everything assay knows about one scored turn."""

    query_id: str
    scores: Scores
    claims: list[ClaimResult]
    n_claims: int
    n_citations: int
    n_verified_citations: int
    abstained: bool
    abstention_expected: bool | None
    abstention_correct: bool | None
    addendum: AddendumValues
    aggregate_session_scores: AggregateSessionScores


class Alert(_Strict):
    """A threshold breach or a degradation between two evaluations."""

    metric: str
    kind: Literal["below_threshold", "dropped"]
    value: float
    reference: float
    message: str


class UsageSummary(_Strict):
    """Provider spend of a judge-scored session (``cost_usd`` is None when any call is unpriced)."""

    calls: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None


class ScoreReport(_Strict):
    """What ``assay tez score --format json`` prints."""

    schema_version: Literal["assay.tez-score.v1"] = SCORE_REPORT_SCHEMA
    bundle_id: str
    session_id: str
    method: str
    evaluator: Evaluator
    queries: list[QueryResult]
    session: AddendumValues
    false_abstentions: int
    thresholds: dict[str, float]
    alerts: list[Alert]
    warnings: list[str]
    written: list[str]
    usage: UsageSummary | None = None
