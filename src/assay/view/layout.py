"""Page frame and small formatting helpers shared by the viewer's pages."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote

from assay.report.html_parts import esc as escape_html
from assay.report.model import Interval, Row
from assay.view.static import CSS

e = escape_html


def page(title: str, body: str, script: str = "") -> str:
    """A complete HTML document: inline CSS, optional inline script, nothing external."""
    tail = f"<script>{script}</script>" if script else ""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{e(title)} · assay view</title><style>{CSS}</style></head><body><main>"
        '<nav><strong>assay view</strong><a href="/">runs</a>'
        '<a href="/production">production</a></nav>'
        f"{body}</main>{tail}</body></html>"
    )


def run_link(run_id: str, text: str | None = None) -> str:
    return f'<a href="/run/{quote(run_id, safe="")}">{e(text or run_id)}</a>'


def compare_link(reference: str, current: str, text: str) -> str:
    query = f"a={quote(reference, safe='')}&amp;b={quote(current, safe='')}"
    return f'<a href="/compare?{query}">{e(text)}</a>'


def num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def with_interval(value: float | None, interval: Interval | None, *, percent: bool = False) -> str:
    show = pct if percent else num
    if interval is None:
        return show(value)
    return f'{show(value)} <span class="ci">[{show(interval.low)}, {show(interval.high)}]</span>'


def signed(value: float | None) -> str:
    if value is None:
        return "n/a"
    css = "neg" if value < 0 else "pos" if value > 0 else ""
    return f'<span class="{css}">{value:+.3f}</span>'


def gate_chip(gate: dict[str, Any] | None) -> str:
    if gate is None:
        return '<span class="chip no-change" title="no gate recorded">—</span>'
    if gate.get("passed"):
        return '<span class="chip pass">passed</span>'
    return '<span class="chip fail">failed</span>'


def row_status(row: Row) -> str:
    """passed, failed (scored below a threshold) or errored (something could not be scored)."""
    if row.errors:
        return "errored"
    return "passed" if row.passed else "failed"


def table(
    head: Sequence[str], rows: Iterable[Sequence[str]], *, left: int = 1, attrs: str = ""
) -> str:
    """A table of pre-escaped cells; the first ``left`` columns are text."""
    heads = "".join(
        f'<th class="l">{h}</th>' if i < left else f"<th>{h}</th>" for i, h in enumerate(head)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="l">{c}</td>' if i < left else f"<td>{c}</td>" for i, c in enumerate(r)
        )
        + "</tr>"
        for r in rows
    )
    return (
        f'<div class="scroll"><table {attrs}><thead><tr>{heads}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )
