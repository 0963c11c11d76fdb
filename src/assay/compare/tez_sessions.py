"""Compare synthesis models' TIP sessions over one Tez bundle, query by query.

Each model's session is scored by :func:`assay.tez.evaluate.score_session`; the first session is
the reference and every other one is paired with it on ``query_id``. Per metric the mean paired
difference gets the same statistics ``assay compare`` uses: a paired-bootstrap interval and
p-value, Holm's adjustment over every test in the document, and the minimum detectable
difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import Field

from assay.compare.comparison import DEFAULT_RESAMPLES
from assay.compare.paired_tests import holm, minimum_detectable_difference, paired_bootstrap
from assay.errors import UsageError
from assay.report.model import Interval
from assay.report.strict import StrictModel
from assay.tez.evaluate import Evaluation

SCHEMA: Literal["assay.tez-compare.v1"] = "assay.tez-compare.v1"
METRICS = ("groundedness", "relevance", "faithfulness")
Verdict = Literal["regressed", "improved", "no detectable change", "too few pairs"]


class MetricDelta(StrictModel):
    """One metric of one candidate against the reference: means, difference, test."""

    metric: str
    reference_mean: float
    candidate_mean: float
    delta: float
    interval: Interval | None
    p_value: float | None
    p_adjusted: float | None
    mdd: float | None
    verdict: Verdict


class QueryDelta(StrictModel):
    """One query's scores under both models and their difference (candidate - reference)."""

    query_id: str
    reference: dict[str, float]
    candidate: dict[str, float]
    difference: dict[str, float]


class ModelPair(StrictModel):
    """A candidate session compared with the reference session."""

    reference: str
    candidate: str
    pairs: int
    metrics: list[MetricDelta]
    queries: list[QueryDelta]


class TezCompareReport(StrictModel):
    """``assay tez compare -f json``: every candidate against the first session."""

    schema_version: Literal["assay.tez-compare.v1"] = SCHEMA
    bundle_id: str
    method: str
    sessions: list[str]
    alpha: float
    confidence: float
    resamples: int
    seed: int
    comparisons: list[ModelPair] = Field(default_factory=list)


def check_pairable(evaluations: Sequence[tuple[str, Evaluation]]) -> None:
    """Exit-2 problems: fewer than two sessions, repeated names, or query ids that differ."""
    if len(evaluations) < 2:
        raise UsageError("tez compare needs at least two --session files")
    names = [name for name, _ in evaluations]
    if len(set(names)) != len(names):
        raise UsageError(f"two sessions share the session_id '{_first_repeat(names)}'")
    ref_name, ref = evaluations[0]
    expected = [s.turn.query_id for s in ref.scores]
    for name, evaluation in evaluations[1:]:
        got = [s.turn.query_id for s in evaluation.scores]
        if sorted(got) != sorted(expected):
            odd = sorted(set(got) ^ set(expected)) or sorted({q for q in got if got.count(q) > 1})
            raise UsageError(
                f"session '{name}' does not answer the same queries as '{ref_name}': "
                f"query_id {', '.join(odd[:5])}"
            )


def _first_repeat(names: Sequence[str]) -> str:
    return next(n for i, n in enumerate(names) if n in names[:i])


def compare_sessions(
    evaluations: Sequence[tuple[str, Evaluation]],
    *,
    alpha: float = 0.05,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> TezCompareReport:
    """Pair every later session with the first on query_id and test each metric's difference."""
    check_pairable(evaluations)
    rng = np.random.default_rng(seed)
    confidence = 1.0 - alpha
    ref_name, ref = evaluations[0]
    pairs = [
        _pair(ref_name, ref, name, ev, rng, resamples, confidence) for name, ev in evaluations[1:]
    ]
    _adjust(pairs, alpha)
    return TezCompareReport(
        bundle_id=ref.bundle.bundle_id,
        method=ref.method,
        sessions=[name for name, _ in evaluations],
        alpha=alpha,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        comparisons=pairs,
    )


def _scores(evaluation: Evaluation) -> dict[str, dict[str, float]]:
    return {s.turn.query_id: {m: float(getattr(s, m)) for m in METRICS} for s in evaluation.scores}


def _pair(
    ref_name: str,
    ref: Evaluation,
    name: str,
    candidate: Evaluation,
    rng: np.random.Generator,
    resamples: int,
    confidence: float,
) -> ModelPair:
    """Per-query differences and per-metric statistics, in the reference's query order."""
    before, after = _scores(ref), _scores(candidate)
    queries = [
        QueryDelta(
            query_id=q,
            reference=before[q],
            candidate=after[q],
            difference={m: after[q][m] - before[q][m] for m in METRICS},
        )
        for q in before
    ]
    metrics = [_metric(m, queries, rng, resamples, confidence) for m in METRICS]
    return ModelPair(
        reference=ref_name, candidate=name, pairs=len(queries), metrics=metrics, queries=queries
    )


def _metric(
    metric: str,
    queries: Sequence[QueryDelta],
    rng: np.random.Generator,
    resamples: int,
    confidence: float,
) -> MetricDelta:
    differences = np.array([q.difference[metric] for q in queries], dtype=float)
    interval, p_value = paired_bootstrap(
        differences, rng=rng, resamples=resamples, confidence=confidence
    )
    return MetricDelta(
        metric=metric,
        reference_mean=float(np.mean([q.reference[metric] for q in queries])),
        candidate_mean=float(np.mean([q.candidate[metric] for q in queries])),
        delta=float(differences.mean()),
        interval=interval,
        p_value=p_value,
        p_adjusted=None,
        mdd=minimum_detectable_difference(differences, 1.0 - confidence),
        verdict="no detectable change",
    )


def _adjust(pairs: Sequence[ModelPair], alpha: float) -> None:
    """Holm over every test in the document, then each metric's verdict."""
    tested = [m for pair in pairs for m in pair.metrics if m.p_value is not None]
    for stat, adjusted in zip(tested, holm([m.p_value or 0.0 for m in tested]), strict=True):
        stat.p_adjusted = adjusted
    for pair in pairs:
        for stat in pair.metrics:
            stat.verdict = verdict(stat, alpha)


def verdict(stat: MetricDelta, alpha: float) -> Verdict:
    """Significant after Holm: the direction; otherwise *too few pairs* when the interval
    leans one way or no change is detectable at all, else *no detectable change*."""
    if stat.p_adjusted is not None and stat.p_adjusted < alpha and stat.delta != 0.0:
        return "regressed" if stat.delta < 0 else "improved"
    leaning = (
        stat.interval is not None
        and stat.delta != 0.0
        and (stat.interval.high < 0 or stat.interval.low > 0)
    )
    undetectable = stat.mdd is None and stat.delta != 0.0
    return "too few pairs" if leaning or undetectable else "no detectable change"


def compare_text(report: TezCompareReport) -> str:
    """Per candidate: a metric table (means, difference, interval, Holm p, verdict), then the
    per-query differences."""
    lines = [f"tez compare: bundle {report.bundle_id}, method {report.method}"]
    for pair in report.comparisons:
        lines += _pair_text(pair, report.confidence)
    return "\n".join(lines) + "\n"


def _pair_text(pair: ModelPair, confidence: float) -> list[str]:
    head = f"{'metric':<13} {'reference':>10} {'candidate':>10} {'delta':>7}"
    head += f"  {f'{confidence:.0%} interval':<18} {'p (Holm)':>8}  verdict"
    title = (
        f"candidate {pair.candidate} vs reference {pair.reference} ({pair.pairs} paired queries)"
    )
    lines = ["", title, head]
    for m in pair.metrics:
        ci = f"[{m.interval.low:+.3f}, {m.interval.high:+.3f}]" if m.interval else "-"
        p = f"{m.p_adjusted:.3f}" if m.p_adjusted is not None else "-"
        lines.append(
            f"{m.metric:<13} {m.reference_mean:>10.3f} {m.candidate_mean:>10.3f} "
            f"{m.delta:>+7.3f}  {ci:<18} {p:>8}  {m.verdict}"
        )
    lines += ["", f"{'query_id':<24} " + " ".join(f"{'d ' + m:>15}" for m in METRICS)]
    for q in pair.queries:
        cells = " ".join(f"{q.difference[m]:>+15.3f}" for m in METRICS)
        lines.append(f"{q.query_id[:24]:<24} {cells}")
    return lines
