"""The HTML report's baseline-comparison section: deltas with intervals, adjusted p-values and
MDDs per metric and cohort, flips, new failures, added and removed samples."""

from __future__ import annotations

from collections.abc import Sequence

from assay.report.comparison_model import (
    Comparison,
    MetricComparison,
    StatDelta,
    no_regression_line,
)
from assay.report.html_parts import MAX_LISTED, esc, num, p_text, pct, signed, table


def _delta(stat: StatDelta) -> str:
    """The change, with its interval underneath in small print."""
    if stat.interval is None:
        return signed(stat.delta)
    low, high = stat.interval.low, stat.interval.high
    return f'{signed(stat.delta)}<br><span class="ci">[{low:+.3f}, {high:+.3f}]</span>'


def _delta_rows(items: Sequence[MetricComparison], with_scope: bool) -> list[list[str]]:
    rows = []
    for item in items:
        row = [f"<code>{esc(item.metric)}</code>"]
        if with_scope:
            row.insert(0, esc(item.cohort_label or "overall"))
        row += [
            str(item.paired),
            f"{num(item.mean.reference)} → {num(item.mean.current)}",
            _delta(item.mean),
            p_text(item.mean.p_adjusted),
            num(item.mean.mdd),
            f"{pct(item.pass_rate.reference)} → {pct(item.pass_rate.current)}",
            _delta(item.pass_rate),
            p_text(item.pass_rate.p_adjusted),
            num(item.pass_rate.mdd),
            f"{item.pass_to_fail}/{item.fail_to_pass}",
            f'<span class="chip {item.verdict}" title="{esc(item.why())}">'
            f"{esc(item.label())}</span>",
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


def comparison_section(comparison: Comparison | None) -> str:
    """The section, or nothing when no comparison ran."""
    if comparison is None:
        return ""
    c = comparison
    parts = [_intro(c), *_verdict(c)]
    parts.append(table(["metric", *_DELTA_HEAD], _delta_rows(c.metrics, False), cls="deltas"))
    if c.cohorts:
        parts.append(
            f"<details><summary>Per-cohort deltas ({len(c.cohorts)} rows)</summary>"
            + table(
                ["cohort", "metric", *_DELTA_HEAD],
                _delta_rows(c.cohorts, True),
                left=2,
                cls="cohort-deltas",
            )
            + "</details>"
        )
    parts += [_flips(c), _new_failures(c)]
    for label, refs in (("Added samples", c.added), ("Removed samples", c.removed)):
        if refs:
            listed = ", ".join(f"<code>{esc(r.sample_id)}</code>" for r in refs[:MAX_LISTED])
            parts.append(
                f"<details><summary>{label} ({len(refs)})</summary><p>{listed}</p></details>"
            )
    if c.warnings:
        parts.append(
            "<ul>" + "".join(f'<li class="warn">{esc(w)}</li>' for w in c.warnings) + "</ul>"
        )
    return "".join(parts)


def _intro(c: Comparison) -> str:
    ref = c.reference
    return (
        '<h2 id="comparison">Comparison with the baseline</h2>'
        f'<p class="meta">reference run <code>{esc(ref.run_id)}</code> '
        f"(finished {esc(ref.finished_at)}), joined on {esc(c.join_key)}: "
        f"{c.counts.compared} samples compared, {c.counts.added} added, "
        f"{c.counts.removed} removed. Paired tests at α = {c.alpha:g}, Holm-adjusted; "
        f"intervals (under each Δ) are {(1 - c.alpha) * 100:g}% paired-bootstrap "
        f"({c.resamples} resamples); MDD = smallest change detectable with 80% power. "
        f"Macro-F1 Δ {signed(c.macro_f1_delta)}.</p>"
    )


def _verdict(c: Comparison) -> list[str]:
    parts = []
    if not c.comparable:
        parts.append(f'<p class="warn">Not comparable: {esc(c.incomparable_reason or "")}</p>')
    if c.regressions:
        parts.append(
            '<div class="verdict fail">Regressions beyond noise<ul>'
            + "".join(f"<li>{esc(r.message)}</li>" for r in c.regressions)
            + "</ul></div>"
        )
    elif c.comparable:
        line = no_regression_line(c.metrics, c.counts.pass_to_fail)
        css = "warn" if c.counts.pass_to_fail or "too few" in line else "pass"
        parts.append(f'<div class="verdict {css}">{esc(line[0].upper() + line[1:])}.</div>')
    return parts


def _flips(c: Comparison) -> str:
    if not c.flips:
        return ""
    rows = [
        [
            f"<code>{esc(f.sample_id)}</code>",
            f"<code>{esc(f.metric)}</code>",
            f'<span class="chip {"fail" if f.direction == "pass-to-fail" else "pass"}">'
            f"{f.direction}</span>",
            num(f.before),
            num(f.after),
        ]
        for f in c.flips[:MAX_LISTED]
    ]
    return (
        f"<details><summary>Flipped samples ({c.counts.pass_to_fail} pass→fail, "
        f"{c.counts.fail_to_pass} fail→pass)</summary>"
        + table(["sample", "metric", "direction", "before", "after"], rows, left=3)
        + "</details>"
    )


def _new_failures(c: Comparison) -> str:
    if not c.new_failures:
        return ""
    rows = [
        [
            f"<code>{esc(n.sample_id)}</code>",
            esc(", ".join(n.failed_metrics) or "—"),
            esc(", ".join(n.errored) or "—"),
        ]
        for n in c.new_failures[:MAX_LISTED]
    ]
    return (
        f"<details open><summary>New failures ({len(c.new_failures)})</summary>"
        + table(["sample", "failing metrics", "errored"], rows, left=3)
        + "</details>"
    )
