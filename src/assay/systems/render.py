"""Markdown and HTML for the multi-system report: a column per system, then each pair."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from assay.report.comparison_model import Comparison, StatDelta
from assay.report.html_parts import CSS, esc
from assay.report.markdown import cell
from assay.report.model import Interval, Report
from assay.report.numbers import fmt
from assay.systems.model import PairComparison, SystemsReport

MAX_FLIPS = 50
Cells = list[list[str]]


def _interval(value: float | None, ci: Interval | None) -> str:
    return fmt(value, 3) + (f" [{fmt(ci.low, 3)}, {fmt(ci.high, 3)}]" if ci else "")


def _gate(report: Report) -> str:
    if report.gate is None:
        return "n/a"
    return "passed" if report.gate.get("passed") else "FAILED"


def side_by_side(systems: SystemsReport) -> tuple[list[str], Cells]:
    """Header and rows (plain text) of the table with one column per system."""
    reports = [s.report for s in systems.systems]
    rows: Cells = [
        ["system under test"]
        + [
            f"{r.run.system_under_test.kind}: {r.run.system_under_test.target or ''}"
            for r in reports
        ],
        ["run"] + [r.run.run_id for r in reports],
        ["executions"] + [str(r.summary.total_executions) for r in reports],
        ["pass rate"] + [fmt(r.summary.pass_rate) for r in reports],
        ["macro-F1"] + [fmt(r.summary.macro_f1) for r in reports],
        ["failed executions"] + [str(r.summary.failed_rows) for r in reports],
        ["errored executions"] + [str(r.summary.errored_rows) for r in reports],
        ["gate"] + [_gate(r) for r in reports],
    ]
    names = [m.name for m in reports[0].metrics]
    for name in names:
        aggregates = [next((m for m in r.metrics if m.name == name), None) for r in reports]
        rows.append(
            [f"{name} mean [95% CI]"]
            + [_interval(a.mean, a.mean_ci) if a else "n/a" for a in aggregates]
        )
        rows.append(
            [f"{name} pass rate [95% CI]"]
            + [_interval(a.pass_rate, a.pass_rate_ci) if a else "n/a" for a in aggregates]
        )
    return ["", *(s.name for s in systems.systems)], rows


def _delta(stat: StatDelta) -> str:
    if stat.delta is None:
        return "n/a"
    ci = f" [{stat.interval.low:+.3f}, {stat.interval.high:+.3f}]" if stat.interval else ""
    return f"{stat.delta:+.3f}{ci}"


def pair_rows(pair: PairComparison) -> tuple[list[str], Cells]:
    """Per-metric paired statistics of one pair (current minus reference)."""
    ref, cur = pair.reference, pair.current
    head = [
        "metric",
        "paired",
        f"mean {ref}",
        f"mean {cur}",
        "Δ mean [95% CI]",
        "Δ pass rate [95% CI]",
        "p (Holm)",
        "pass→fail",
        "fail→pass",
        "verdict",
    ]
    rows = [
        [
            m.metric,
            str(m.paired),
            fmt(m.mean.reference, 3),
            fmt(m.mean.current, 3),
            _delta(m.mean),
            _delta(m.pass_rate),
            fmt(m.mean.p_adjusted if m.mean.p_adjusted is not None else m.pass_rate.p_adjusted, 3),
            str(m.pass_to_fail),
            str(m.fail_to_pass),
            m.label(),
        ]
        for m in pair.comparison.metrics
    ]
    return head, rows


def flip_lines(comparison: Comparison) -> list[str]:
    ordered = sorted(comparison.flips, key=lambda f: f.direction != "pass-to-fail")
    return [
        f"{f.sample_id} · {f.metric}: {f.direction.replace('-to-', ' → ')} ({f.before:.3f} → "
        f"{f.after:.3f})"
        for f in ordered[:MAX_FLIPS]
    ]


def _md_table(head: Sequence[str], rows: Cells) -> list[str]:
    out = ["| " + " | ".join(cell(h) for h in head) + " |", "|" + " --- |" * len(head)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out


def render_markdown(systems: SystemsReport) -> str:
    names = ", ".join(f"**{cell(s.name)}**" for s in systems.systems)
    out = [
        f"# assay systems report — {cell(systems.dataset.name)}",
        "",
        f"Systems: {names}.",
        "",
        "## Side by side",
        "",
    ]
    out += _md_table(*side_by_side(systems))
    for pair in systems.comparisons:
        c = pair.comparison
        out += [
            "",
            f"## {cell(pair.current)} vs {cell(pair.reference)}",
            "",
            f"Paired on {c.counts.compared} samples ({c.join_key}); {c.counts.pass_to_fail} "
            "pass→fail, "
            f"{c.counts.fail_to_pass} fail→pass, {c.counts.regressions} regressions beyond noise "
            f"(α = {c.alpha}, Holm-adjusted).",
            "",
        ]
        out += _md_table(*pair_rows(pair))
        flips = flip_lines(c)
        if flips:
            out += ["", "Flips:", ""] + [f"- {cell(line)}" for line in flips]
    return "\n".join(out) + "\n"


def _html_table(
    head: Sequence[str], rows: Cells, css: Callable[[int, int], str] | None = None
) -> str:
    heads = "".join(
        f'<th class="l">{esc(h)}</th>' if i == 0 else f"<th>{esc(h)}</th>"
        for i, h in enumerate(head)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="{"l " if j == 0 else ""}{css(i, j) if css else ""}">{esc(c)}</td>'
            for j, c in enumerate(row)
        )
        + "</tr>"
        for i, row in enumerate(rows)
    )
    return (
        f'<div class="scroll"><table><thead><tr>{heads}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def render_html(systems: SystemsReport) -> str:
    parts = [
        f"<h1>assay systems report — {esc(systems.dataset.name)}</h1>",
        "<h2>Side by side</h2>",
        _html_table(*side_by_side(systems)),
    ]
    for pair in systems.comparisons:
        parts += [
            f"<h2>{esc(pair.current)} vs {esc(pair.reference)}</h2>",
            _html_table(*pair_rows(pair)),
        ]
        flips = flip_lines(pair.comparison)
        if flips:
            items = "".join(
                f'<li class="{"neg" if "pass → fail" in line else "pos"}">{esc(line)}</li>'
                for line in flips
            )
            parts.append(f"<h3>Flips</h3><ul>{items}</ul>")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src '
        "'unsafe-inline'\">"
        "<title>assay systems report — "
        f"{esc(systems.dataset.name)}</title><style>{CSS}</style></head>"
        f"<body><main>{''.join(parts)}</main></body></html>"
    )
