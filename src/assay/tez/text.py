"""Plain-text views for ``assay tez``: a score report, a bundle summary, a validation verdict.

Kept apart from the commands so that each view is a function of plain data; the commands in
:mod:`assay.cli.tez` only gather that data and print what these functions return.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.tez.extension import EvalState
    from assay.tez.records import QueryResult, ScoreReport

from assay.providers.pricing import format_usd


def fmt(value: float | None) -> str:
    """A score to three decimals, ``n/a`` when undefined."""
    return "n/a" if value is None else f"{value:.3f}"


def latest_summary(state: EvalState) -> str | None:
    """One line about the newest eval record a bundle carries (None when it has none)."""
    doc = state.tezit_report if state.tezit_report is not None else state.vendor_latest
    if doc is None:
        return None
    if "scores" in doc:
        s = doc["scores"]
        agg = doc.get("aggregate_session_scores") or {}
        return (
            f"com.ragu.eval-metrics session {doc['session_id']} query {doc['query_id']}: "
            f"groundedness {fmt(s['groundedness'])}, relevance {fmt(s['relevance'])}, "
            f"faithfulness {fmt(s['faithfulness'])}"
            + (f"; {agg['total_queries']} queries so far" if agg else "")
        )
    m = doc["metrics"]
    return f"tezit-eval session {doc['session_id']} at {doc['evaluated_at']}: " + ", ".join(
        f"{k} {fmt(v)}" for k, v in m.items()
    )


def bundle_text(data: Mapping[str, Any]) -> str:
    """``assay tez show`` as text, from the summary the JSON format prints."""
    lines = [
        f"bundle {data['bundle_id']} ({data['kind']}, version {data['version']}, tezit "
        f"{data['tezit_version']})",
        f"synthesis: {data['synthesis'] or '(none)'}",
        f"context items: {len(data['items'])}",
    ]
    width = max((len(i["id"]) for i in data["items"]), default=2)
    for item in data["items"]:
        size = "-" if item["bytes"] is None else f"{item['bytes']} B"
        digest = (item["sha256"] or "-")[:12]
        lines.append(
            f"  {item['id'].ljust(width)}  {item['type'] or '?':<10} {size:>10}  sha256 {digest}"
        )
    lines.append(
        "eval extensions: "
        + (", ".join(f"{k} ({'+'.join(v)})" for k, v in data["eval_extensions"].items()) or "none")
    )
    if data["latest_eval"]:
        lines.append("latest eval: " + data["latest_eval"])
    lines += [f"warning: {w}" for w in data["warnings"]]
    return "\n".join(lines)


def validation_lines(
    target: object,
    *,
    problems: Sequence[str],
    warnings: Sequence[str],
    items: int,
    citations: int,
    failed: bool,
) -> list[str]:
    """``assay tez validate`` as text: each problem and warning, then the verdict."""
    verdict = "FAILED" if failed else "ok"
    return [
        *(f"problem: {line}" for line in problems),
        *(f"warning: {line}" for line in warnings),
        f"{target}: {verdict} ({items} items, {citations} synthesis citations, "
        f"{len(problems)} problems, {len(warnings)} warnings)",
    ]


def _abstention(query: QueryResult) -> str:
    abst = "yes" if query.abstained else "no"
    if query.abstention_correct is not None:
        abst += " (correct)" if query.abstention_correct else " (wrong)"
    return abst


def _query_lines(report: ScoreReport) -> list[str]:
    """The per-query table, then every citation that did not resolve."""
    width = max([len(q.query_id) for q in report.queries] + [5])
    lines = [f"{'query'.ljust(width)}  ground  relev  faith  claims  cites ok  abstained"]
    for q in report.queries:
        s = q.scores
        lines.append(
            f"{q.query_id.ljust(width)}  "
            f"{s.groundedness:6.3f} {s.relevance:6.3f} {s.faithfulness:6.3f}"
            f"  {q.n_claims:6d}  {q.n_verified_citations:3d}/{q.n_citations:<4d}  "
            f"{_abstention(q)}"
        )
    for q in report.queries:
        for claim in q.claims:
            for c in claim.citations:
                if not (c.exists and c.location_resolved):
                    label = c.item_id if c.location is None else f"{c.item_id}:{c.location}"
                    lines.append(f"  {q.query_id}: citation [[{label}]]: {c.reason}")
    return lines


def _session_lines(report: ScoreReport) -> list[str]:
    """Session means, the addendum metrics and the judge's usage."""
    lines = []
    if report.queries:
        agg = report.queries[-1].aggregate_session_scores
        lines.append(
            f"session means over {agg.total_queries} queries: "
            f"groundedness {agg.avg_groundedness:.3f}, "
            f"relevance {agg.avg_relevance:.3f}, faithfulness {agg.avg_faithfulness:.3f}"
        )
    a = report.session
    fields = ("relevance", "faithfulness", "citation_accuracy", "completeness", "abstention_rate")
    shown = ", ".join(f"{m} {fmt(getattr(a, m))}" for m in fields)
    lines.append(f"addendum: {shown}; false abstentions {report.false_abstentions}")
    if report.usage is not None:
        u = report.usage
        cost = "unpriced" if u.cost_usd is None else format_usd(u.cost_usd)
        lines.append(
            f"judge usage: {u.calls} calls ({u.cached_calls} cached), "
            f"{u.prompt_tokens}+{u.completion_tokens} tokens, {cost}"
        )
    return lines


def score_text(report: ScoreReport) -> str:
    """``assay tez score`` as text: the per-query table, session figures, alerts, files."""
    lines = [
        f"bundle {report.bundle_id} | session {report.session_id} | {report.method} "
        f"({report.evaluator.model} {report.evaluator.model_version})",
        *_query_lines(report),
        *_session_lines(report),
    ]
    lines += [f"alert: {al.message}" for al in report.alerts]
    lines += [f"warning: {w}" for w in report.warnings]
    lines += [f"wrote: {p}" for p in report.written]
    return "\n".join(lines) + "\n"
