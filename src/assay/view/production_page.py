"""The production page: each monitored metric's pass rate per drift window, oldest first, with
its current verdict (``assay monitor``'s default rule) and the rows that moved it."""

from __future__ import annotations

from collections.abc import Sequence

from assay.production.drift import Drift, DriftRule
from assay.view.index_page import HEIGHT, PAD, WIDTH
from assay.view.layout import e, num, page, table

ALERT_BELOW = DriftRule().threshold


def _x(index: int, count: int) -> float:
    span = WIDTH - 2 * PAD
    return PAD + (span / 2 if count == 1 else span * index / (count - 1))


def _y(value: float) -> float:
    return HEIGHT - PAD - value * (HEIGHT - 2 * PAD)


def window_trend_svg(verdict: Drift) -> str:
    """Pass rate per window (oldest left); a point is red below the alert threshold."""
    rates = verdict.trend
    points = [f"{_x(i, len(rates)):.1f},{_y(r):.1f}" for i, r in enumerate(rates)]
    marks = "".join(
        f'<circle class="{"pass" if r >= ALERT_BELOW else "fail"}" cx="{_x(i, len(rates)):.1f}" '
        f'cy="{_y(r):.1f}" r="4"><title>window {i + 1}: pass rate {num(r)}</title></circle>'
        for i, r in enumerate(rates)
    )
    axis = "".join(
        f'<text x="4" y="{_y(v) + 3:.1f}">{v:.1f}</text>'
        f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{_y(v):.1f}" y2="{_y(v):.1f}" '
        'stroke="currentColor" opacity=".12"/>'
        for v in (0.0, 0.5, 1.0)
    )
    line = f'<polyline points="{" ".join(points)}"/>' if len(points) > 1 else ""
    label = f"{verdict.metric} pass rate per window"
    return (
        f'<figure><figcaption>{e(verdict.metric)}</figcaption><svg class="trend" '
        f'data-metric="{e(verdict.metric)}" width="{WIDTH}" height="{HEIGHT}" role="img" '
        f'aria-label="{e(label)}">{axis}{line}{marks}</svg></figure>'
    )


def production_page(store: str, verdicts: Sequence[Drift], note: str | None = None) -> str:
    """Verdicts first (alerts on top), then the trend charts."""
    ordered = sorted(verdicts, key=lambda d: (d.status != "alert", d.metric))
    rows = [
        (
            e(d.metric),
            f'<span class="status-{"failed" if d.status == "alert" else "passed"}">'
            f"{e(d.status)}</span>",
            num(d.current_pass_rate),
            num(d.stable_pass_rate),
            str(d.current_scored),
            str(d.errored),
            e("; ".join(d.reasons)) or "—",
            e(", ".join(r.trace_id for r in d.rows[:5])) or "—",
        )
        for d in ordered
    ]
    head = ("metric", "verdict", "pass rate", "stable", "scored", "errored", "why", "rows")
    body = (
        f'<h1>Production</h1><p class="count">trace store {e(store)}</p>'
        + (f"<p>{e(note)}</p>" if note else "")
        + (table(head, rows, left=2) if rows else "")
        + "".join(window_trend_svg(d) for d in ordered if d.trend)
    )
    return page("production", body)
