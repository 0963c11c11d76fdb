"""Score a whole session against a bundle and build assay's score report."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from assay.errors import UsageError
from assay.tez import heuristic
from assay.tez.addendum import (
    DEFAULT_DROP,
    THRESHOLDS,
    drop_alerts,
    false_abstentions,
    query_values,
    session_values,
    threshold_alerts,
)
from assay.tez.bundle import Bundle
from assay.tez.records import (
    CitationCheck,
    ClaimResult,
    Evaluator,
    QueryResult,
    ScoreReport,
    Scores,
    SessionFile,
    UsageSummary,
)
from assay.tez.scoring import TurnScore
from assay.tez.session import Expectation
from assay.tez.support import DEFAULT_TAU
from assay.tez.writer import running_aggregates

METHODS = ("automated_heuristic", "llm_as_judge")
HEURISTIC_MODEL = "assay-tez-heuristic"


def assay_version() -> str:
    try:
        return version("assay")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


@dataclass(slots=True)
class Evaluation:
    """A scored session."""

    bundle: Bundle
    session: SessionFile
    method: str
    evaluator: Evaluator
    scores: list[TurnScore]
    warnings: list[str] = field(default_factory=list)

    @property
    def usage(self) -> list[dict[str, Any]]:
        return [u for s in self.scores for u in s.usage]


def evaluate(
    bundle: Bundle,
    session: SessionFile,
    expectations: Mapping[str, Expectation] | None = None,
    *,
    method: str = "automated_heuristic",
    tau: float = DEFAULT_TAU,
    judge: Any = None,
    judge_model: str | None = None,
) -> Evaluation:
    """Score every turn in order; the judge method needs ``judge`` (an async callable)."""
    expectations = dict(expectations or {})
    warnings: list[str] = []
    if expectations:
        missing = [t.query_id for t in session.turns if t.query_id not in expectations]
        if missing:
            warnings.append(f"no expectations for {len(missing)} turn(s): {', '.join(missing[:5])}")
    if method == "automated_heuristic":
        scores = [
            heuristic.score_turn(bundle, t, expectations.get(t.query_id), tau=tau)
            for t in session.turns
        ]
        evaluator = Evaluator(
            model=HEURISTIC_MODEL, model_version=assay_version(), evaluation_method=method
        )
    elif method == "llm_as_judge":
        from assay.tez import judge as judge_mod

        model = (
            judge_mod.judge_model_name(judge_model)
            if judge is None
            else (judge_model or "custom-judge")
        )
        scores = _run(
            judge_mod.score_turns(
                bundle, list(session.turns), expectations, judge_mod.as_judge(judge, model)
            ),
            close=judge is None,
        )
        served = sorted({str(u.get("model")) for s in scores for u in s.usage if u.get("model")})
        evaluator = Evaluator(
            model=model, model_version=", ".join(served) or model, evaluation_method=method
        )
    else:
        raise UsageError(f"unknown method '{method}'; choose one of: {', '.join(METHODS)}")
    return Evaluation(bundle, session, method, evaluator, scores, warnings)


def _run(coro: Any, *, close: bool) -> Any:
    async def main() -> Any:
        try:
            return await coro
        finally:
            if close:
                from assay.providers.registry import aclose

                await aclose()

    return asyncio.run(main())


def build_report(
    evaluation: Evaluation,
    *,
    thresholds: Mapping[str, float] = THRESHOLDS,
    previous: Mapping[str, float] | None = None,
    drop: float = DEFAULT_DROP,
    written: Sequence[str] = (),
    extra_warnings: Sequence[str] = (),
) -> ScoreReport:
    """assay's report of a scored session (no evidence text: ids, verdicts and numbers)."""
    history = [
        Scores(groundedness=s.groundedness, relevance=s.relevance, faithfulness=s.faithfulness)
        for s in evaluation.scores
    ]
    aggregates = running_aggregates(history)
    queries = [
        QueryResult(
            query_id=s.turn.query_id,
            scores=h,
            claims=[
                ClaimResult(
                    claim=c.text,
                    grounded=c.grounded,
                    faithful=c.faithful,
                    source_citations=list(c.source_items),
                    citations=[
                        CitationCheck(
                            item_id=v.ref.item_id,
                            location=v.ref.location,
                            exists=v.resolution.exists,
                            location_resolved=v.resolution.location_resolved,
                            supports=v.verified,
                            reason=v.reason,
                        )
                        for v in c.citations
                    ],
                )
                for c in s.claims
            ],
            n_claims=len(s.claims),
            n_citations=s.n_citations,
            n_verified_citations=s.n_verified,
            abstained=s.abstained,
            abstention_expected=s.abstention_expected,
            abstention_correct=s.abstention_correct,
            addendum=query_values(s),
            aggregate_session_scores=a,
        )
        for s, h, a in zip(evaluation.scores, history, aggregates, strict=True)
    ]
    session = session_values(evaluation.scores)
    alerts = threshold_alerts(session, thresholds)
    if previous:
        alerts += drop_alerts(previous, session, drop=drop)
    return ScoreReport(
        bundle_id=evaluation.bundle.bundle_id,
        session_id=evaluation.session.session_id,
        method=evaluation.method,
        evaluator=evaluation.evaluator,
        queries=queries,
        session=session,
        false_abstentions=false_abstentions(evaluation.scores),
        thresholds=dict(thresholds),
        alerts=alerts,
        warnings=[*evaluation.bundle.warnings, *evaluation.warnings, *extra_warnings],
        written=list(written),
        usage=usage_summary(evaluation.usage),
    )


def usage_summary(usage: Sequence[Mapping[str, Any]]) -> UsageSummary | None:
    """Totals of the usage records (None when no provider was called)."""
    if not usage:
        return None
    costs = [u.get("cost_usd") for u in usage]
    return UsageSummary(
        calls=len(usage),
        cached_calls=sum(1 for u in usage if u.get("cached")),
        prompt_tokens=sum(int(u.get("prompt_tokens") or 0) for u in usage),
        completion_tokens=sum(int(u.get("completion_tokens") or 0) for u in usage),
        cost_usd=None if any(c is None for c in costs) else float(sum(costs)),  # type: ignore[arg-type]
    )
