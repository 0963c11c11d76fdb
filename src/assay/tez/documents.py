"""The eval documents assay writes into a bundle, built from scored turns.

Vendor records (``com.ragu.eval-metrics``), one per query with the session's running mean as of
that query and continuing a session's earlier records, and the ``tezit-eval`` session report.
Nothing here touches the bundle; :mod:`assay.tez.writer` validates and writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

from assay.errors import TezError
from assay.tez.addendum import query_values, session_values, to_tezit_metrics
from assay.tez.extension import EvalState
from assay.tez.records import (
    AggregateSessionScores,
    ClaimScore,
    EvalMetricsRecord,
    Evaluator,
    Scores,
    TezitEvalEvaluator,
    TezitEvalQueryResult,
    TezitEvalReport,
)
from assay.tez.scoring import TurnScore


def now_utc() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def vendor_record(
    score: TurnScore, session_id: str, evaluator: Evaluator, aggregate: AggregateSessionScores
) -> EvalMetricsRecord:
    return EvalMetricsRecord(
        session_id=session_id,
        query_id=score.turn.query_id,
        scores=Scores(
            groundedness=score.groundedness,
            relevance=score.relevance,
            faithfulness=score.faithfulness,
        ),
        evaluator=evaluator,
        per_claim_scores=[
            ClaimScore(claim=c.text, grounded=c.grounded, source_citations=list(c.source_items))
            for c in score.claims
        ],
        aggregate_session_scores=aggregate,
    )


def running_aggregates(history: Sequence[Scores]) -> list[AggregateSessionScores]:
    """Aggregate after each query: the unweighted mean of the scores so far."""
    out = []
    sums = [0.0, 0.0, 0.0]
    for n, s in enumerate(history, start=1):
        sums[0] += s.groundedness
        sums[1] += s.relevance
        sums[2] += s.faithfulness
        out.append(
            AggregateSessionScores(
                avg_groundedness=min(1.0, sums[0] / n),
                avg_relevance=min(1.0, sums[1] / n),
                avg_faithfulness=min(1.0, sums[2] / n),
                total_queries=n,
            )
        )
    return out


def vendor_records(
    session_id: str,
    scores: Sequence[TurnScore],
    evaluator: Evaluator,
    prior: Sequence[EvalMetricsRecord] = (),
) -> list[EvalMetricsRecord]:
    """Records of ``scores`` in order, aggregates continuing after the ``prior`` queries."""
    history = [p.scores for p in prior] + [
        Scores(groundedness=s.groundedness, relevance=s.relevance, faithfulness=s.faithfulness)
        for s in scores
    ]
    aggregates = running_aggregates(history)[len(prior) :]
    return [
        vendor_record(s, session_id, evaluator, a) for s, a in zip(scores, aggregates, strict=True)
    ]


def prior_records(
    state: EvalState, session_id: str, rescored: set[str], *, replace: bool
) -> list[EvalMetricsRecord]:
    """Earlier records of the same session, in session order, minus the re-scored queries."""
    if replace:
        return []
    if state.vendor_invalid:
        raise TezError(
            f"existing record {state.vendor_invalid[0]} is not schema-valid, so the running mean "
            "cannot be continued; pass --replace to start the session's records afresh"
        )
    existing = [EvalMetricsRecord.model_validate(d) for d in state.vendor_records.values()]
    if state.vendor_latest is not None and not existing:
        existing = [EvalMetricsRecord.model_validate(state.vendor_latest)]
    others = {r.session_id for r in existing} - {session_id}
    if others:
        raise TezError(
            f"the bundle's eval records belong to session '{sorted(others)[0]}', "
            f"not '{session_id}'; pass --replace to overwrite them"
        )
    existing.sort(
        key=lambda r: r.aggregate_session_scores.total_queries if r.aggregate_session_scores else 0
    )
    return [r for r in existing if r.query_id not in rescored]


def tezit_report(
    session_id: str, scores: Sequence[TurnScore], *, model: str, evaluated_at: str | None = None
) -> tuple[TezitEvalReport, list[str]]:
    """The enterprise-schema report and the metrics that had to be filled vacuously."""
    session, vacuous = to_tezit_metrics(session_values(scores))
    per_query = []
    for score in scores:
        metrics, _ = to_tezit_metrics(query_values(score))
        per_query.append(
            TezitEvalQueryResult(
                query_id=score.turn.query_id, query_text=score.turn.query, metrics=metrics
            )
        )
    report = TezitEvalReport(
        session_id=session_id,
        evaluated_at=evaluated_at or now_utc(),
        metrics=session,
        per_query_results=per_query,
        evaluator=TezitEvalEvaluator(type="automated", model=model),
    )
    return report, vacuous
