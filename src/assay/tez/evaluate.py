"""Score a whole session against a bundle and build assay's score report."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

from assay.errors import UsageError
from assay.providers import settings as provider_settings
from assay.providers.settings import ProviderSettings
from assay.providers.usage import total_cost
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
from assay.tez.documents import running_aggregates
from assay.tez.records import (
    AggregateSessionScores,
    CitationCheck,
    ClaimResult,
    Evaluator,
    QueryResult,
    ScoreReport,
    Scores,
    SessionFile,
    UsageSummary,
)
from assay.tez.scoring import ClaimVerdict, TurnScore
from assay.tez.session import Expectation
from assay.tez.support import DEFAULT_TAU

METHODS = ("automated_heuristic", "llm_as_judge", "nli_based", "human_in_loop", "hybrid")
HEURISTIC_MODEL = "assay-tez-heuristic"


def assay_version() -> str:
    try:
        return version("assay")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


T = TypeVar("T")


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


@dataclass(frozen=True, slots=True)
class MethodOptions:
    """What the non-heuristic methods need; each field is used by the methods it names."""

    judge: Any = None  # llm_as_judge, hybrid: an async prompt -> JudgeReply callable
    judge_model: str | None = None  # llm_as_judge, hybrid: provider judge model
    nli: Any = None  # nli_based: a (premise, hypothesis) pairs -> entailment list callable
    nli_model: str | None = None  # nli_based: cross-encoder name or path
    nli_threshold: float = 0.5
    reviews: Any = None  # human_in_loop: a Reviews or the path of the verdict file
    settings: ProviderSettings | None = None  # llm_as_judge, hybrid (None: the environment's)


def score_session(
    bundle: Bundle,
    session: SessionFile,
    expectations: Mapping[str, Expectation] | None = None,
    *,
    method: str = "automated_heuristic",
    tau: float = DEFAULT_TAU,
    judge: object = None,
    judge_model: str | None = None,
    options: MethodOptions | None = None,
) -> Evaluation:
    """Score every turn in order with ``method`` (see :data:`METHODS` and docs/tez.md)."""
    opts = options or MethodOptions(judge=judge, judge_model=judge_model)
    expectations = dict(expectations or {})
    warnings: list[str] = []
    if expectations:
        missing = [t.query_id for t in session.turns if t.query_id not in expectations]
        if missing:
            warnings.append(f"no expectations for {len(missing)} turn(s): {', '.join(missing[:5])}")
    runners = {
        "automated_heuristic": _heuristic,
        "llm_as_judge": _llm_judge,
        "nli_based": _nli,
        "human_in_loop": _human,
        "hybrid": _hybrid,
    }
    runner = runners.get(method)
    if runner is None:
        raise UsageError(f"unknown method '{method}'; choose one of: {', '.join(METHODS)}")
    scores, evaluator = runner(bundle, session, expectations, tau, opts, warnings)
    return Evaluation(bundle, session, method, evaluator, scores, warnings)


_Scored = tuple[list[TurnScore], Evaluator]


def _heuristic(
    bundle: Bundle,
    session: SessionFile,
    expectations: dict[str, Expectation],
    tau: float,
    opts: MethodOptions,
    warnings: list[str],
) -> _Scored:
    scores = [
        heuristic.score_turn(bundle, t, expectations.get(t.query_id), tau=tau)
        for t in session.turns
    ]
    return scores, Evaluator(
        model=HEURISTIC_MODEL,
        model_version=assay_version(),
        evaluation_method="automated_heuristic",
    )


def _judge_fn(opts: MethodOptions) -> tuple[Any, str]:
    """The :class:`assay.judging.client.Judge` the options name, and its model name."""
    from assay.tez import judge as judge_mod

    settings = opts.settings or provider_settings.from_environment()
    if opts.judge is not None:
        model = opts.judge_model or "custom-judge"
        return judge_mod.as_judge(opts.judge, model, settings), model
    model = judge_mod.judge_model_name(opts.judge_model, settings)
    return judge_mod.as_judge(None, model, settings), model


def _served(scores: Sequence[TurnScore], model: str) -> str:
    served = sorted({str(u.get("model")) for s in scores for u in s.usage if u.get("model")})
    return ", ".join(served) or model


def _llm_judge(
    bundle: Bundle,
    session: SessionFile,
    expectations: dict[str, Expectation],
    tau: float,
    opts: MethodOptions,
    warnings: list[str],
) -> _Scored:
    from assay.tez import judge as judge_mod

    fn, model = _judge_fn(opts)
    scores = _run(
        judge_mod.score_turns(bundle, list(session.turns), expectations, fn),
        close=opts.judge is None,
    )
    return scores, Evaluator(
        model=model, model_version=_served(scores, model), evaluation_method="llm_as_judge"
    )


def _hybrid(
    bundle: Bundle,
    session: SessionFile,
    expectations: dict[str, Expectation],
    tau: float,
    opts: MethodOptions,
    warnings: list[str],
) -> _Scored:
    from assay.tez import hybrid

    fn, model = _judge_fn(opts)
    scores, by_judge = _run(
        hybrid.score_turns(bundle, list(session.turns), expectations, fn, tau=tau),
        close=opts.judge is None,
    )
    total = sum(len(s.claims) for s in scores)
    warnings.append(
        f"hybrid: the judge decided {by_judge} of {total} claim(s); the heuristic the rest"
    )
    return scores, Evaluator(
        model=f"{HEURISTIC_MODEL} + {model}",
        model_version=f"{assay_version()}; {_served(scores, model)}",
        evaluation_method="hybrid",
    )


def _nli(
    bundle: Bundle,
    session: SessionFile,
    expectations: dict[str, Expectation],
    tau: float,
    opts: MethodOptions,
    warnings: list[str],
) -> _Scored:
    from assay.tez import nli

    if opts.nli is not None:
        fn, name, model_version = opts.nli, opts.nli_model or "custom-nli", "custom"
    else:
        if not opts.nli_model:
            raise UsageError("--method nli_based needs --nli-model (a cross-encoder name or path)")
        loaded = nli.load_cross_encoder(opts.nli_model)
        fn, name, model_version = loaded.score, loaded.name, loaded.version
    scores = [
        nli.score_turn(bundle, t, expectations.get(t.query_id), fn, threshold=opts.nli_threshold)
        for t in session.turns
    ]
    return scores, Evaluator(model=name, model_version=model_version, evaluation_method="nli_based")


def _human(
    bundle: Bundle,
    session: SessionFile,
    expectations: dict[str, Expectation],
    tau: float,
    opts: MethodOptions,
    warnings: list[str],
) -> _Scored:
    from assay.tez import human

    if opts.reviews is None:
        raise UsageError("--method human_in_loop needs --verdicts FILE (the reviewers' verdicts)")
    reviews = (
        opts.reviews
        if isinstance(opts.reviews, human.Reviews)
        else human.load_reviews(opts.reviews)
    )
    wanted = reviews.document.session_id
    if wanted is not None and wanted != session.session_id:
        raise UsageError(
            f"{reviews.source}: the verdicts are for session {wanted!r}, not {session.session_id!r}"
        )
    unused = human.unused_reviews(reviews, session.turns)
    if unused:
        warnings.append(f"verdicts for queries not in the session: {', '.join(unused[:5])}")
    scores = [
        human.score_turn(bundle, t, expectations.get(t.query_id), reviews, warnings)
        for t in session.turns
    ]
    return scores, Evaluator(
        model=reviews.document.reviewer,
        model_version=reviews.version,
        evaluation_method="human_in_loop",
    )


def _run(coro: Coroutine[Any, Any, T], *, close: bool) -> T:
    async def main() -> T:
        try:
            return await coro
        finally:
            if close:
                from assay.providers.registry import aclose  # HTTP clients: judge runs only

                await aclose()

    return asyncio.run(main())


def _claim_result(claim: ClaimVerdict) -> ClaimResult:
    """One claim's verdict as the report writes it (ids and verdicts, no evidence text)."""
    return ClaimResult(
        claim=claim.text,
        grounded=claim.grounded,
        faithful=claim.faithful,
        source_citations=list(claim.source_items),
        citations=[
            CitationCheck(
                item_id=v.ref.item_id,
                location=v.ref.location,
                exists=v.resolution.exists,
                location_resolved=v.resolution.location_resolved,
                supports=v.verified,
                reason=v.reason,
            )
            for v in claim.citations
        ],
    )


def _query_result(
    score: TurnScore, scores: Scores, aggregate: AggregateSessionScores
) -> QueryResult:
    """One turn's row of the report, with the session's running aggregate up to it."""
    return QueryResult(
        query_id=score.turn.query_id,
        scores=scores,
        claims=[_claim_result(c) for c in score.claims],
        n_claims=len(score.claims),
        n_citations=score.n_citations,
        n_verified_citations=score.n_verified,
        abstained=score.abstained,
        abstention_expected=score.abstention_expected,
        abstention_correct=score.abstention_correct,
        addendum=query_values(score),
        aggregate_session_scores=aggregate,
    )


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
    session = session_values(evaluation.scores)
    alerts = threshold_alerts(session, thresholds)
    if previous:
        alerts += drop_alerts(previous, session, drop=drop)
    return ScoreReport(
        bundle_id=evaluation.bundle.bundle_id,
        session_id=evaluation.session.session_id,
        method=evaluation.method,
        evaluator=evaluation.evaluator,
        queries=[
            _query_result(s, h, a)
            for s, h, a in zip(evaluation.scores, history, aggregates, strict=True)
        ],
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
    return UsageSummary(
        calls=len(usage),
        cached_calls=sum(1 for u in usage if u.get("cached")),
        prompt_tokens=sum(int(u.get("prompt_tokens") or 0) for u in usage),
        completion_tokens=sum(int(u.get("completion_tokens") or 0) for u in usage),
        cost_usd=total_cost(usage),
    )
