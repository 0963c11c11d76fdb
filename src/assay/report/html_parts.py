"""Pieces every HTML page of assay shares: the stylesheet, escaping, number formats, tables and
the score-histogram SVG (the report, the systems page and the local viewer use them)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from assay.report.model import Bucket

MAX_LISTED = 200  # rows shown per long list (failures, flips); the rest are counted

CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--bg:#fff;--panel:#f5f7fa;--line:#d9dee7;--ok:#1f8a4c;
  --bad:#c0392b;--warn:#b7791f;--bar:#3b6fd8}
@media (prefers-color-scheme: dark){:root{--fg:#e6e9ef;--muted:#9aa3b2;--bg:#14171d;
  --panel:#1d212a;--line:#2f3541;--bar:#6b95ee}}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
  color:var(--fg);background:var(--bg)}
main{max-width:1280px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:28px 0 10px;border-bottom:1px solid var(--line);padding-bottom:4px}
.meta{color:var(--muted);font-size:13px}
.verdict{margin:16px 0;padding:10px 14px;border-radius:6px;font-weight:600}
.verdict.pass{background:rgba(31,138,76,.12);color:var(--ok)}.verdict.fail{background:rgba(192,57,43,.12);color:var(--bad)}
.verdict.warn{background:rgba(183,121,31,.12);color:var(--warn)}
.ci{color:var(--muted);font-size:11px}
.verdict ul{margin:6px 0 0;font-weight:400}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:10px 14px;
  min-width:130px}
.card .v{font-size:20px;font-weight:600}.card .k{color:var(--muted);font-size:12px}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:right;vertical-align:top}
th{background:var(--panel);font-weight:600}
td{white-space:nowrap}td.l{white-space:normal}
.scroll{overflow-x:auto}
td.l,th.l{text-align:left}
#failing-rows td,#failing-rows th{text-align:left}
#failing-rows td.reason{min-width:14em;white-space:normal}
#failing-rows td.msg{min-width:7em}
.msg{white-space:pre-wrap;word-break:break-word}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:14px}
figure{margin:0;background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:8px}
figcaption{font-weight:600;margin-bottom:4px}
svg text{fill:var(--muted);font-size:10px}
.chip{display:inline-block;padding:0 6px;border-radius:9px;font-size:12px;font-weight:600}
.chip.regressed,.chip.fail{background:rgba(192,57,43,.15);color:var(--bad)}
.chip.improved,.chip.pass{background:rgba(31,138,76,.15);color:var(--ok)}
.chip.no-change,.chip.no-detectable-change,.chip.too-few-pairs,.chip.incomparable{background:var(--panel);color:var(--muted)}
.warn{color:var(--warn)}
.neg{color:var(--bad)}.pos{color:var(--ok)}
details{margin:8px 0}summary{cursor:pointer;color:var(--muted)}
footer{margin-top:32px;color:var(--muted);font-size:12px}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
"""


_CONTROL = dict.fromkeys(c for c in range(32) if chr(c) not in "\n\t")


def esc(value: object) -> str:
    """Escape for HTML text and attributes; control characters (never meaningful) dropped."""
    return escape(str(value).translate(_CONTROL), quote=True)


def num(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def signed(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    css = "neg" if value < 0 else "pos" if value > 0 else ""
    return f'<span class="{css}">{value:+.{digits}f}</span>'


def p_text(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "&lt;0.001" if value < 0.001 else f"{value:.3f}"


def table(head: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1, cls: str = "") -> str:
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
            f'<rect class="bar" x="{x + 1:.1f}" y="{top + plot_h - h:.1f}" '
            f'width="{max(w - 2, 1):.1f}" '
            f'height="{h:.1f}" fill="{colour}" opacity="0.85"><title>[{bucket.lower:.1f}, '
            f"{bucket.upper:.1f}{closing}: {bucket.count}</title></rect>"
        )
    threshold_x = left + (0.5 - (buckets[0].lower if buckets else 0.0)) / span * plot_w
    axis = (
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
        'stroke="currentColor" opacity="0.4"/>'
        f'<line x1="{threshold_x:.1f}" y1="{top}" x2="{threshold_x:.1f}" y2="{top + plot_h}" '
        'stroke="currentColor" stroke-dasharray="3 3" opacity="0.5">'
        "<title>pass threshold 0.5</title></line>"
        f'<text x="{left}" y="{height - 6}" text-anchor="middle">0</text>'
        f'<text x="{threshold_x:.1f}" y="{height - 6}" text-anchor="middle">0.5</text>'
        f'<text x="{left + plot_w}" y="{height - 6}" text-anchor="middle">1</text>'
        f'<text x="{left - 4}" y="{top + 8}" text-anchor="end">{peak}</text>'
        f'<text x="{left - 4}" y="{top + plot_h}" text-anchor="end">0</text>'
    )
    total = sum(b.count for b in buckets)
    label = f"Score histogram of {name}: {total} scores in {len(buckets)} buckets"
    return (
        f'<svg class="histogram" data-metric="{esc(name)}" role="img" aria-label="{esc(label)}" '
        f'viewBox="0 0 {width} {height}" width="100%" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{esc(label)}</title>{axis}{''.join(bars)}</svg>"
    )
