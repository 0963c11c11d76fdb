"""The HTML report's failing-rows table: filter by status, metric, tag and text; expand a row.

The filter is a small inline script; the page's Content-Security-Policy allows exactly this
script by its SHA-256 hash and nothing else, so the report stays self-contained.
"""

from __future__ import annotations

import base64
import hashlib
import html

from assay.report.model import FailingRow, Report

MAX_ROWS = 1000

SCRIPT = """
(function () {
  var table = document.getElementById('failing-rows');
  if (!table) { return; }
  var controls = document.querySelectorAll('[data-filter]');
  function value(name) { return document.querySelector('[data-filter=' + name + ']').value; }
  function apply() {
    var status = value('status'), metric = value('metric'), tag = value('tag');
    var text = value('text').toLowerCase(), shown = 0;
    table.querySelectorAll('tbody tr.row').forEach(function (row) {
      var ok = (!status || row.dataset.status === status) &&
        (!metric || row.dataset.metric === metric) &&
        (!tag || (' ' + row.dataset.tags + ' ').indexOf(' ' + tag + ' ') >= 0) &&
        (!text || row.textContent.toLowerCase().indexOf(text) >= 0);
      row.hidden = !ok;
      shown += ok ? 1 : 0;
    });
    document.getElementById('failing-count').textContent = shown;
  }
  controls.forEach(function (c) { c.addEventListener('input', apply); });
  apply();
})();
""".strip()


def script_hash() -> str:
    """The CSP source that allows :data:`SCRIPT` and no other script."""
    digest = hashlib.sha256(SCRIPT.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _options(name: str, values: list[str]) -> str:
    items = "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in values)
    return f'<select data-filter="{name}"><option value="">every {name}</option>{items}</select>'


def _text_cell(value: str | None) -> str:
    if value is None:
        return '<td class="meta">—</td>'
    short = value if len(value) <= 80 else value[:80] + "…"
    if short == value:
        return f'<td class="msg">{_e(value)}</td>'
    return f'<td class="msg"><details><summary>{_e(short)}</summary>{_e(value)}</details></td>'


def _row(row: FailingRow) -> str:
    score = "—" if row.score is None else f"{row.score:.4f}"
    threshold = "—" if row.threshold is None else f"{row.threshold:g}"
    cells = [
        f"<td><code>{_e(row.sample_id)}</code></td>",
        f"<td>{_e(', '.join(row.tags))}</td>",
        f"<td>{_e(row.metric)}</td>",
        f'<td class="status-{row.status}">{row.status}</td>',
        f"<td>{score}</td><td>{threshold}</td>",
        f'<td class="reason">{_e(row.reason)}</td>',
        _text_cell(row.input),
        _text_cell(row.expected),
        '<td class="meta"><em>(empty answer)</em></td>'
        if row.actual == ""
        else _text_cell(row.actual),
    ]
    return (
        f'<tr class="row" data-status="{row.status}" data-metric="{_e(row.metric)}" '
        f'data-tags="{_e(" ".join(row.tags))}">' + "".join(cells) + "</tr>"
    )


def failing_rows_section(report: Report) -> str:
    """The section listing every failed and errored row, with its filters."""
    rows = report.failing_rows[:MAX_ROWS]
    failed = sum(1 for r in report.failing_rows if r.status == "failed")
    errored = len(report.failing_rows) - failed
    executions = len(
        {(r.sample_id, r.repetition) for r in report.failing_rows if r.status == "failed"}
    )
    title = (
        f"<h2>Failed and errored rows ({failed} results failed in {executions} executions, "
        f"{errored} errored)</h2>"
    )
    if not rows:
        return title + '<p class="meta">No row failed or errored.</p>'
    metrics = sorted({r.metric for r in rows})
    tags = sorted({t for r in rows for t in r.tags})
    filters = (
        '<p class="filters">'
        + _options("status", ["failed", "errored"])
        + _options("metric", metrics)
        + _options("tag", tags)
        + '<input data-filter="text" type="search" placeholder="search texts">'
        + ' <span class="meta">showing <span id="failing-count"></span></span></p>'
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "sample", "tags", "metric", "status", "score", "threshold",
            "reason", "input", "expected", "actual",
        )
    )  # fmt: skip
    omitted = len(report.failing_rows) - len(rows) + report.failing_rows_omitted
    tail = f'<p class="meta">… and {omitted} more (see the JSON report).</p>' if omitted else ""
    note = '<p class="meta">Texts are redacted.</p>' if report.redacted else ""
    return (
        title
        + note
        + filters
        + f'<table id="failing-rows"><thead><tr>{head}</tr></thead><tbody>'
        + "".join(_row(r) for r in rows)
        + "</tbody></table>"
        + tail
        + f"<script>{SCRIPT}</script>"
    )
