"""Self-contained HTML report: one file, inline CSS and SVG, no script, no network.

Sections: verdict, summary, per-metric table, one histogram chart per metric, the baseline
comparison (when there is one), cohorts, usage, unstable samples and failures. Every string
that came from a user (dataset name, sample ids, tags, metric names, error messages) is
HTML-escaped; a Content-Security-Policy forbids loading anything from anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import TYPE_CHECKING

from assay.report.compliance import html_section
from assay.report.html_rows import failing_rows_section, script_hash
from assay.report.model import Bucket, MetricAggregate, Report

if TYPE_CHECKING:
    from assay.report.comparison_model import Comparison, MetricComparison, StatDelta

MAX_LISTED = 200  # rows shown per long list (failures, flips); the rest are counted

_CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--bg:#fff;--panel:#f5f7fa;--line:#d9dee7;--ok:#1f8a4c;--bad:#c0392b;--warn:#b7791f;--bar:#3b6fd8}
@media (prefers-color-scheme: dark){:root{--fg:#e6e9ef;--muted:#9aa3b2;--bg:#14171d;--panel:#1d212a;--line:#2f3541;--bar:#6b95ee}}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1280px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px;border-bottom:1px solid var(--line);padding-bottom:4px}
.meta{color:var(--muted);font-size:13px}
.verdict{margin:16px 0;padding:10px 14px;border-radius:6px;font-weight:600}
.verdict.pass{background:rgba(31,138,76,.12);color:var(--ok)}.verdict.fail{background:rgba(192,57,43,.12);color:var(--bad)}
.verdict.warn{background:rgba(183,121,31,.12);color:var(--warn)}
.ci{color:var(--muted);font-size:11px}
.verdict ul{margin:6px 0 0;font-weight:400}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:10px 14px;min-width:130px}
.card .v{font-size:20px;font-weight:600}.card .k{color:var(--muted);font-size:12px}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:right;vertical-align:top}
th{background:var(--panel);font-weight:600}
td{white-space:nowrap}td.l{white-space:normal}
.scroll{overflow-x:auto}
td.l,th.l{text-align:left}
.msg{white-space:pre-wrap;word-break:break-word}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:14px}
figure{margin:0;background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:8px}
figcaption{font-weight:600;margin-bottom:4px}
svg text{fill:var(--muted);font-size:10px}
.chip{display:inline-block;padding:0 6px;border-radius:9px;font-size:12px;font-weight:600}
.chip.regressed,.chip.fail{background:rgba(192,57,43,.15);color:var(--bad)}
.chip.improved,.chip.pass{background:rgba(31,138,76,.15);color:var(--ok)}
.chip.no-change,.chip.incomparable{background:var(--panel);color:var(--muted)}
.warn{color:var(--warn)}
.neg{color:var(--bad)}.pos{color:var(--ok)}
details{margin:8px 0}summary{cursor:pointer;color:var(--muted)}
footer{margin-top:32px;color:var(--muted);font-size:12px}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
"""


_CONTROL = dict.fromkeys(c for c in range(32) if chr(c) not in "\n\t")


def _e(value: object) -> str:
    """Escape for HTML text and attributes; control characters (never meaningful) dropped."""
    return escape(str(value).translate(_CONTROL), quote=True)


def _num(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _signed(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    css = "neg" if value < 0 else "pos" if value > 0 else ""
    return f'<span class="{css}">{value:+.{digits}f}</span>'


def _p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "&lt;0.001" if value < 0.001 else f"{value:.3f}"


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1, cls: str = "") -> str:
    """A table whose first ``left`` columns are text; cells are pre-escaped HTML."""
    heads = "".join(
        f'<th class="l">{h}</th>' if i < left else f"<th>{h}</th>" for i, h in enumerate(head)
    )
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="l">{c}</td>' if i < left else f"<td>{c}</td>" for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<div class="scroll"><table class="{cls}"><thead><tr>{heads}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def histogram_svg(
    name: str, buckets: Sequence[Bucket], *, width: int = 320, height: int = 150
) -> str:
    """An inline SVG bar chart of one metric's score histogram, threshold 0.5 marked."""
    left, right, top, bottom = 30, 8, 8, 22
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max((b.count for b in buckets), default=0)
    scale = plot_h / peak if peak else 0.0
    span = (buckets[-1].upper - buckets[0].lower) if buckets else 1.0
    bars = []
    for bucket in buckets:
        x = left + (bucket.lower - buckets[0].lower) / span * plot_w
        w = (bucket.upper - bucket.lower) / span * plot_w
        h = bucket.count * scale
        colour = "var(--bar)" if bucket.lower >= 0.5 else "var(--bad)"
        closing = "]" if bucket is buckets[-1] else ")"
        bars.append(
            f'<rect class="bar" x="{x + 1:.1f}" y="{top + plot_h - h:.1f}" width="{max(w - 2, 1):.1f}" '
            f'height="{h:.1f}" fill="{colour}" opacity="0.85"><title>[{bucket.lower:.1f}, '
            f"{bucket.upper:.1f}{closing}: {bucket.count}</title></rect>"
        )
    threshold_x = left + (0.5 - (buckets[0].lower if buckets else 0.0)) / span * plot_w
    axis = (
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="currentColor" opacity="0.4"/>'
        f'<line x1="{threshold_x:.1f}" y1="{top}" x2="{threshold_x:.1f}" y2="{top + plot_h}" '
        f'stroke="currentColor" stroke-dasharray="3 3" opacity="0.5"><title>pass threshold 0.5</title></line>'
        f'<text x="{left}" y="{height - 6}" text-anchor="middle">0</text>'
        f'<text x="{threshold_x:.1f}" y="{height - 6}" text-anchor="middle">0.5</text>'
        f'<text x="{left + plot_w}" y="{height - 6}" text-anchor="middle">1</text>'
        f'<text x="{left - 4}" y="{top + 8}" text-anchor="end">{peak}</text>'
        f'<text x="{left - 4}" y="{top + plot_h}" text-anchor="end">0</text>'
    )
    total = sum(b.count for b in buckets)
    label = f"Score histogram of {name}: {total} scores in {len(buckets)} buckets"
    return (
        f'<svg class="histogram" data-metric="{_e(name)}" role="img" aria-label="{_e(label)}" '
        f'viewBox="0 0 {width} {height}" width="100%" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{_e(label)}</title>{axis}{''.join(bars)}</svg>"
    )


def _header(report: Report) -> str:
    run = report.run
    sut = run.system_under_test.kind + (
        f" {run.system_under_test.target}" if run.system_under_test.target else ""
    )
    bits = [
        f"run <code>{_e(run.run_id)}</code>",
        f"finished {_e(run.finished_at)}",
        f"{run.duration_seconds:.2f}s",
        f"system under test: {_e(sut)}",
        f"{run.repetitions} repetition{'s' if run.repetitions != 1 else ''}",
        f"assay {_e(run.assay_version)}",
    ]
    if run.judge_model:
        bits.append(f"judge {_e(run.judge_model)}")
    if run.embedding_provider:
        bits.append(f"embeddings {_e(run.embedding_provider)}")
    return f'<h1>assay report — {_e(report.dataset.name)}</h1><div class="meta">{" · ".join(bits)}</div>'


def _verdict(report: Report) -> str:
    gate = report.gate
    if not gate:
        return ""
    passed = bool(gate.get("passed"))
    items = "".join(
        f"<li>{_e(item.get('message', ''))}</li>"
        for item in gate.get("failures", [])
        if isinstance(item, dict)
    )
    items += "".join(f'<li class="warn">{_e(w)}</li>' for w in gate.get("warnings", []))
    title = "Gate passed" if passed else "Gate failed"
    return f'<div class="verdict {"pass" if passed else "fail"}" id="verdict">{title}{f"<ul>{items}</ul>" if items else ""}</div>'


def _summary(report: Report) -> str:
    s = report.summary
    cards = [
        ("samples", str(s.total_samples)),
        ("executions", str(s.total_executions)),
        ("macro-F1", _num(s.macro_f1)),
        ("pass-rate (all metrics)", _pct(s.pass_rate)),
        (
            "failures",
            f"{s.total_failures}"
            + (f" ({s.sut_failures} SUT, {s.metric_failures} metric)" if s.total_failures else ""),
        ),
    ]
    if report.usage.calls:
        cost = "n/a" if report.usage.cost_usd is None else f"${report.usage.cost_usd:.4f}"
        cards.append(("provider cost", cost + ("" if report.usage.complete else " (incomplete)")))
    if report.budget is not None and report.budget.halted:
        cards.append(("budget", f"halted at ${report.budget.spent_usd:.4f}"))
    html = "".join(
        f'<div class="card"><div class="v">{v}</div><div class="k">{_e(k)}</div></div>'
        for k, v in cards
    )
    out = f'<h2>Summary</h2><div class="cards">{html}</div>'
    if s.macro_f1_excluded:
        out += f'<p class="warn">Left out of macro-F1 (no score at all): {_e(", ".join(s.macro_f1_excluded))}</p>'
    if report.warnings:
        out += "<ul>" + "".join(f'<li class="warn">{_e(w)}</li>' for w in report.warnings) + "</ul>"
    return out


def _metrics(report: Report) -> str:
    rows = [
        [
            f"<code>{_e(m.name)}</code>",
            _num(m.mean),
            _num(m.p50),
            _num(m.p95),
            _num(m.min),
            _num(m.max),
            _pct(m.pass_rate),
            f"{m.scored}/{m.attempted}",
            _pct(m.coverage),
            str(m.failed),
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
        "pass-rate (≥ 0.5)",
        "scored",
        "coverage",
        "failed",
        "skipped",
    ]
    return "<h2>Per-metric aggregates</h2>" + _table(head, rows, cls="metrics")


def _charts(metrics: Sequence[MetricAggregate]) -> str:
    figures = "".join(
        f'<figure class="chart" data-metric="{_e(m.name)}"><figcaption>{_e(m.name)} '
        f'<span class="meta">mean {_num(m.mean)} · n={m.scored}</span></figcaption>{histogram_svg(m.name, m.histogram)}</figure>'
        for m in metrics
    )
    return f'<h2>Score histograms</h2><div class="charts">{figures}</div>'


def _cohorts(report: Report) -> str:
    if not report.cohorts:
        return ""
    rows = []
    for cohort in report.cohorts:
        for metric in cohort.metrics:
            rows.append(
                [
                    _e(cohort.label)
                    + (
                        ' <span class="meta">(untagged)</span>'
                        if cohort.is_untagged and cohort.label != "(untagged)"
                        else ""
                    ),
                    f"<code>{_e(metric.name)}</code>",
                    str(cohort.samples),
                    _num(metric.mean),
                    _num(metric.p50),
                    _num(metric.p95),
                    _pct(metric.pass_rate),
                    str(metric.failed),
                ]
            )
    head = ["cohort", "metric", "executions", "mean", "p50", "p95", "pass-rate", "failed"]
    return "<h2>Cohorts by tag</h2>" + _table(head, rows, left=2, cls="cohorts")


def _usage(report: Report) -> str:
    usage = report.usage
    if not usage.calls:
        return ""
    rows = [
        [
            _e(m.model),
            str(m.calls),
            str(m.cached_calls),
            str(m.prompt_tokens),
            str(m.completion_tokens),
            "n/a" if m.cost_usd is None else f"${m.cost_usd:.6f}",
        ]
        for m in usage.models
    ]
    latency = "n/a" if usage.latency_ms_mean is None else f"{usage.latency_ms_mean:.1f} ms mean"
    head = ["model", "calls", "cached", "prompt tokens", "completion tokens", "cost"]
    return (
        f'<h2>Usage</h2><p class="meta">{usage.calls} calls, {usage.total_tokens} tokens, {latency}</p>'
        + _table(head, rows)
    )


def _repetitions(report: Report) -> str:
    reps = report.repetitions
    if reps is None or not reps.unstable_samples:
        return ""
    unstable = [s for s in reps.samples if s.unstable][:MAX_LISTED]
    rows = [
        [
            f"<code>{_e(s.id)}</code>",
            f"{s.passed}/{s.repetitions}",
            _pct(s.pass_rate),
            f"{_pct(s.pass_rate_ci.low)}–{_pct(s.pass_rate_ci.high)}",
            _num(s.score_stddev),
        ]
        for s in unstable
    ]
    head = ["sample", "passed", "pass-rate", "interval", "score stddev"]
    return f"<h2>Unstable samples ({len(reps.unstable_samples)})</h2>" + _table(head, rows)


def _failures(report: Report) -> str:
    if not report.failures:
        return '<h2>Errors</h2><p class="meta">Nothing errored.</p>'
    rows = [
        [
            f"<code>{_e(f.sample_id)}</code>",
            str(f.repetition),
            _e(f.stage),
            _e(f.metric or "—"),
            f'<span class="msg">{_e(f.message)}</span>',
        ]
        for f in report.failures[:MAX_LISTED]
    ]
    more = len(report.failures) - MAX_LISTED
    tail = f'<p class="meta">… and {more} more (see the JSON report).</p>' if more > 0 else ""
    head = ["sample", "rep", "stage", "metric", "message"]
    return (
        f"<h2>Errors: could not score ({len(report.failures)})</h2>"
        + _table(head, rows, left=5, cls="failures")
        + tail
    )


def _delta(stat: StatDelta) -> str:
    """The change, with its interval underneath in small print."""
    if stat.interval is None:
        return _signed(stat.delta)
    low, high = stat.interval.low, stat.interval.high
    return f'{_signed(stat.delta)}<br><span class="ci">[{low:+.3f}, {high:+.3f}]</span>'


def _delta_rows(items: Sequence[MetricComparison], with_scope: bool) -> list[list[str]]:
    rows = []
    for item in items:
        row = [f"<code>{_e(item.metric)}</code>"]
        if with_scope:
            row.insert(0, _e(item.cohort_label or "overall"))
        row += [
            str(item.paired),
            f"{_num(item.mean.reference)} → {_num(item.mean.current)}",
            _delta(item.mean),
            _p(item.mean.p_adjusted),
            _num(item.mean.mdd),
            f"{_pct(item.pass_rate.reference)} → {_pct(item.pass_rate.current)}",
            _delta(item.pass_rate),
            _p(item.pass_rate.p_adjusted),
            _num(item.pass_rate.mdd),
            f"{item.pass_to_fail}/{item.fail_to_pass}",
            f'<span class="chip {item.verdict}">{item.verdict}</span>',
        ]
        rows.append(row)
    return rows


_DELTA_HEAD = [
    "n",
    "mean",
    "Δ mean",
    "p (adj.)",
    "MDD",
    "pass-rate",
    "Δ pass-rate",
    "p (adj.)",
    "MDD",
    "flips ↓/↑",
    "verdict",
]


def _comparison(comparison: Comparison | None) -> str:
    if comparison is None:
        return ""
    c = comparison
    ref = c.reference
    parts = [
        '<h2 id="comparison">Comparison with the baseline</h2>',
        f'<p class="meta">reference run <code>{_e(ref.run_id)}</code> (finished {_e(ref.finished_at)}), '
        f"joined on {_e(c.join_key)}: {c.counts.compared} samples compared, {c.counts.added} added, "
        f"{c.counts.removed} removed. Paired tests at α = {c.alpha:g}, Holm-adjusted; "
        f"intervals (under each Δ) are {(1 - c.alpha) * 100:g}% paired-bootstrap ({c.resamples} resamples); "
        f"MDD = smallest change detectable with 80% power. Macro-F1 Δ {_signed(c.macro_f1_delta)}.</p>",
    ]
    if not c.comparable:
        parts.append(f'<p class="warn">Not comparable: {_e(c.incomparable_reason or "")}</p>')
    if c.regressions:
        parts.append(
            '<div class="verdict fail">Regressions beyond noise<ul>'
            + "".join(f"<li>{_e(r.message)}</li>" for r in c.regressions)
            + "</ul></div>"
        )
    elif c.comparable and any(
        m.paired and m.pass_rate.mdd is None and m.mean.mdd is None for m in c.metrics
    ):
        parts.append(
            '<div class="verdict warn">No regression detected, but some metrics have too few samples '
            "for any change to be detectable (MDD n/a): this is not evidence of no change.</div>"
        )
    elif c.comparable:
        parts.append('<div class="verdict pass">No regression beyond noise.</div>')
    parts.append(_table(["metric", *_DELTA_HEAD], _delta_rows(c.metrics, False), cls="deltas"))
    if c.cohorts:
        parts.append(
            f"<details><summary>Per-cohort deltas ({len(c.cohorts)} rows)</summary>"
            + _table(
                ["cohort", "metric", *_DELTA_HEAD],
                _delta_rows(c.cohorts, True),
                left=2,
                cls="cohort-deltas",
            )
            + "</details>"
        )
    if c.flips:
        rows = [
            [
                f"<code>{_e(f.sample_id)}</code>",
                f"<code>{_e(f.metric)}</code>",
                f'<span class="chip {"fail" if f.direction == "pass-to-fail" else "pass"}">{f.direction}</span>',
                _num(f.before),
                _num(f.after),
            ]
            for f in c.flips[:MAX_LISTED]
        ]
        parts.append(
            f"<details><summary>Flipped samples ({c.counts.pass_to_fail} pass→fail, {c.counts.fail_to_pass} fail→pass)</summary>"
            + _table(["sample", "metric", "direction", "before", "after"], rows, left=3)
            + "</details>"
        )
    if c.new_failures:
        rows = [
            [
                f"<code>{_e(n.sample_id)}</code>",
                _e(", ".join(n.failed_metrics) or "—"),
                _e(", ".join(n.errored) or "—"),
            ]
            for n in c.new_failures[:MAX_LISTED]
        ]
        parts.append(
            f"<details open><summary>New failures ({len(c.new_failures)})</summary>"
            + _table(["sample", "failing metrics", "errored"], rows, left=3)
            + "</details>"
        )
    for label, refs in (("Added samples", c.added), ("Removed samples", c.removed)):
        if refs:
            listed = ", ".join(f"<code>{_e(r.sample_id)}</code>" for r in refs[:MAX_LISTED])
            parts.append(
                f"<details><summary>{label} ({len(refs)})</summary><p>{listed}</p></details>"
            )
    if c.warnings:
        parts.append(
            "<ul>" + "".join(f'<li class="warn">{_e(w)}</li>' for w in c.warnings) + "</ul>"
        )
    return "".join(parts)


def render_html(report: Report, comparison: Comparison | None = None) -> str:
    """The whole report as one HTML document (UTF-8, no external resources)."""
    body = "".join(
        [
            _header(report),
            _verdict(report),
            _summary(report),
            _metrics(report),
            _charts(report.metrics),
            _comparison(comparison),
            html_section(report.adversarial),
            _cohorts(report),
            _usage(report),
            _repetitions(report),
            failing_rows_section(report),
            _failures(report),
            f"<footer>Generated by assay {_e(report.run.assay_version)} · {_e(report.schema_version)} · "
            "self-contained: one inline filter script, no network.</footer>",
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        f"style-src 'unsafe-inline'; img-src data:; script-src {script_hash()}\">"
        f"<title>assay report — {_e(report.dataset.name)}</title><style>{_CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )
