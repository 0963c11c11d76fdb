"""Self-contained HTML report: one file, inline CSS and SVG, no script, no network.

Sections: the verdict (gate, deciding rules, counts, warnings once), the failing rows, then the
numbers: summary, per-metric table, the baseline comparison (when there is one), cohorts (only
the pairs that apply), histograms, usage, unstable samples and errors. Every string
that came from a user (dataset name, sample ids, tags, metric names, error messages) is
HTML-escaped; a Content-Security-Policy forbids loading anything from anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from assay.providers.pricing import format_usd
from assay.report.compliance import html_section
from assay.report.html_comparison import comparison_section
from assay.report.html_parts import (
    CSS,
    MAX_LISTED,
    esc,
    histogram_svg,
    num,
    pct,
    table,
)
from assay.report.html_rows import failing_rows_section, script_hash
from assay.report.judge_sections import judge_html
from assay.report.model import MetricAggregate, Report
from assay.report.verdict import gate_warnings, verdict_of

if TYPE_CHECKING:
    from assay.report.comparison_model import Comparison


def _header(report: Report) -> str:
    run = report.run
    sut = run.system_under_test.kind + (
        f" {run.system_under_test.target}" if run.system_under_test.target else ""
    )
    bits = [
        f"run <code>{esc(run.run_id)}</code>",
        f"finished {esc(run.finished_at)}",
        f"{run.duration_seconds:.2f}s",
        f"system under test: {esc(sut)}",
        f"{run.repetitions} repetition{'s' if run.repetitions != 1 else ''}",
        f"assay {esc(run.assay_version)}",
    ]
    if run.judge_model:
        bits.append(f"judge {esc(run.judge_model)}")
    if run.embedding_provider:
        bits.append(f"embeddings {esc(run.embedding_provider)}")
    return (
        f"<h1>assay report — {esc(report.dataset.name)}</h1>"
        f'<div class="meta">{" · ".join(bits)}</div>'
    )


def _verdict(report: Report) -> str:
    """The gate's word, the rules that decided it, the counts; the warnings once, in one block."""
    verdict = verdict_of(report)
    css = "warn" if verdict.passed is None else "pass" if verdict.passed else "fail"
    items = "".join(f"<li>{esc(rule)}</li>" for rule in verdict.rules)
    items += f'<li class="meta">{esc(verdict.counts)}</li>'
    warnings = [*report.warnings, *gate_warnings(report)]
    block = (
        '<ul class="warnings">'
        + "".join(f'<li class="warn">{esc(w)}</li>' for w in warnings)
        + "</ul>"
        if warnings
        else ""
    )
    return (
        f'<div class="verdict {css}" id="verdict">{esc(verdict.headline)}<ul>{items}</ul></div>'
        + block
    )


def _summary(report: Report) -> str:
    s = report.summary
    cards = [
        ("samples", str(s.total_samples)),
        ("executions", str(s.total_executions)),
        ("macro-F1", num(s.macro_f1)),
        ("pass-rate (all metrics)", pct(s.pass_rate)),
        ("failed (below threshold)", str(s.failed_rows)),
        (
            "errored (not scored)",
            f"{s.errored_rows}"
            + (f" ({s.sut_errors} SUT, {s.metric_errors} metric)" if s.errored_rows else ""),
        ),
    ]
    if report.usage.calls:
        cost = "n/a" if report.usage.cost_usd is None else format_usd(report.usage.cost_usd)
        cards.append(("provider cost", cost + ("" if report.usage.complete else " (incomplete)")))
    if report.budget is not None and report.budget.halted:
        cards.append(("budget", f"halted at {format_usd(report.budget.spent_usd)}"))
    html = "".join(
        f'<div class="card"><div class="v">{v}</div><div class="k">{esc(k)}</div></div>'
        for k, v in cards
    )
    out = f'<h2>Summary</h2><div class="cards">{html}</div>'
    if s.macro_f1_excluded:
        excluded = esc(", ".join(s.macro_f1_excluded))
        out += f'<p class="warn">Left out of macro-F1 (no score at all): {excluded}</p>'
    return out


def _metrics(report: Report) -> str:
    rows = [
        [
            f"<code>{esc(m.name)}</code>",
            num(m.mean),
            num(m.p50),
            num(m.p95),
            num(m.min),
            num(m.max),
            pct(m.pass_rate),
            f"{m.scored}/{m.attempted}",
            pct(m.coverage),
            str(m.failed),
            str(m.errored),
            str(m.skipped),
        ]
        for m in report.metrics
    ]
    head = [
        "metric",
        "mean",
        "p50",
        "p95",
        "min",
        "max",
        "pass-rate (≥ threshold)",
        "scored",
        "coverage",
        "failed",
        "errored",
        "skipped",
    ]
    return "<h2>Per-metric aggregates</h2>" + table(head, rows, cls="metrics")


def _charts(metrics: Sequence[MetricAggregate]) -> str:
    figures = "".join(
        f'<figure class="chart" data-metric="{esc(m.name)}"><figcaption>{esc(m.name)} '
        f'<span class="meta">mean {num(m.mean)} · n={m.scored}</span></figcaption>'
        f"{histogram_svg(m.name, m.histogram)}</figure>"
        for m in metrics
    )
    return f'<h2>Score histograms</h2><div class="charts">{figures}</div>'


def _cohorts(report: Report) -> str:
    if not report.cohorts:
        return ""
    rows = []
    for cohort in report.cohorts:
        for metric in cohort.metrics:
            if metric.scored + metric.errored == 0:
                continue  # the metric does not apply to this cohort
            rows.append(
                [
                    esc(cohort.label)
                    + (
                        ' <span class="meta">(untagged)</span>'
                        if cohort.is_untagged and cohort.label != "(untagged)"
                        else ""
                    ),
                    f"<code>{esc(metric.name)}</code>",
                    str(cohort.samples),
                    num(metric.mean),
                    num(metric.p50),
                    num(metric.p95),
                    pct(metric.pass_rate),
                    str(metric.failed),
                    str(metric.errored),
                ]
            )
    head = [
        "cohort",
        "metric",
        "executions",
        "mean",
        "p50",
        "p95",
        "pass-rate",
        "failed",
        "errored",
    ]
    return "<h2>Cohorts by tag</h2>" + table(head, rows, left=2, cls="cohorts")


def _usage(report: Report) -> str:
    usage = report.usage
    if not usage.calls:
        return ""
    rows = [
        [
            esc(m.model),
            str(m.calls),
            str(m.cached_calls),
            str(m.prompt_tokens),
            str(m.completion_tokens),
            "n/a" if m.cost_usd is None else format_usd(m.cost_usd),
        ]
        for m in usage.models
    ]
    latency = "n/a" if usage.latency_ms_mean is None else f"{usage.latency_ms_mean:.1f} ms mean"
    head = ["model", "calls", "cached", "prompt tokens", "completion tokens", "cost"]
    return (
        "<h2>Usage</h2>"
        f'<p class="meta">{usage.calls} calls, {usage.total_tokens} tokens, {latency}</p>'
        + table(head, rows)
    )


def _repetitions(report: Report) -> str:
    reps = report.repetitions
    if reps is None or not reps.unstable_samples:
        return ""
    unstable = [s for s in reps.samples if s.unstable][:MAX_LISTED]
    rows = [
        [
            f"<code>{esc(s.id)}</code>",
            f"{s.passed}/{s.repetitions}",
            pct(s.pass_rate),
            f"{pct(s.pass_rate_ci.low)}–{pct(s.pass_rate_ci.high)}",
            num(s.score_stddev),
        ]
        for s in unstable
    ]
    head = ["sample", "passed", "pass-rate", "interval", "score stddev"]
    return f"<h2>Unstable samples ({len(reps.unstable_samples)})</h2>" + table(head, rows)


def _failures(report: Report) -> str:
    if not report.failures:
        return '<h2>Errors</h2><p class="meta">Nothing errored.</p>'
    rows = [
        [
            f"<code>{esc(f.sample_id)}</code>",
            str(f.repetition),
            esc(f.stage),
            esc(f.metric or "—"),
            f'<span class="msg">{esc(f.message)}</span>',
        ]
        for f in report.failures[:MAX_LISTED]
    ]
    more = len(report.failures) - MAX_LISTED
    tail = f'<p class="meta">… and {more} more (see the JSON report).</p>' if more > 0 else ""
    head = ["sample", "rep", "stage", "metric", "message"]
    return (
        f"<h2>Errors: could not score ({len(report.failures)})</h2>"
        + table(head, rows, left=5, cls="failures")
        + tail
    )


def render_html(report: Report, comparison: Comparison | None = None) -> str:
    """The whole report as one HTML document (UTF-8, no external resources)."""
    body = "".join(
        [
            _header(report),
            _verdict(report),
            failing_rows_section(report),
            _summary(report),
            _metrics(report),
            judge_html(report.judges),
            comparison_section(comparison),
            _cohorts(report),
            html_section(report.adversarial),
            _charts(report.metrics),
            _usage(report),
            _repetitions(report),
            _failures(report),
            f"<footer>Generated by assay {esc(report.run.assay_version)} · "
            f"{esc(report.schema_version)} · "
            "self-contained: one inline filter script, no network.</footer>",
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        f"style-src 'unsafe-inline'; img-src data:; script-src {script_hash()}\">"
        f"<title>assay report — {esc(report.dataset.name)}</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )
