"""One run: verdict, summary, aggregates with intervals, histograms, cohorts, sample table."""

from __future__ import annotations

import json
from typing import Any

from assay.data.dataset import Dataset
from assay.report.html_parts import histogram_svg
from assay.report.judge_sections import judge_html
from assay.report.model import Report, Row
from assay.view.data import RunView, sample_of
from assay.view.layout import e, gate_chip, num, page, pct, row_status, table, with_interval
from assay.view.static import RUN_SCRIPT

MAX_ROWS = 5000
SEARCH_CHARS = 600


def _gate(gate: dict[str, Any] | None) -> str:
    if gate is None:
        return '<div class="verdict warn">No gate verdict recorded for this run.</div>'
    failures = "".join(f"<li>{e(f.get('message', ''))}</li>" for f in gate.get("failures", []))
    word, css = ("passed", "pass") if gate.get("passed") else ("FAILED", "fail")
    return (
        f'<div class="verdict {css}">Gate {word}{f"<ul>{failures}</ul>" if failures else ""}</div>'
    )


def _cards(report: Report) -> str:
    s = report.summary
    cards = [
        ("executions", str(s.total_executions)),
        ("pass rate", pct(s.pass_rate)),
        ("macro-F1", num(s.macro_f1)),
        ("system errors", str(s.sut_failures)),
        ("metric errors", str(s.metric_failures)),
    ]
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card"><div class="v">{v}</div><div class="k">{k}</div></div>'
            for k, v in cards
        )
        + "</div>"
    )


def _metrics(report: Report) -> str:
    rows = [
        [
            e(m.name),
            f"{m.scored}/{m.attempted}",
            str(m.failed),
            with_interval(m.mean, m.mean_ci),
            with_interval(m.pass_rate, m.pass_rate_ci, percent=True),
            num(m.p50),
            num(m.p95),
        ]
        for m in report.metrics
    ]
    head = ["metric", "scored", "errored", "mean [95% CI]", "pass rate [95% CI]", "p50", "p95"]
    return table(head, rows, attrs='class="metrics"')


def _cohorts(report: Report) -> str:
    rows = [
        [
            e(c.label),
            e(m.name),
            str(c.samples),
            str(m.scored),
            with_interval(m.mean, m.mean_ci),
            with_interval(m.pass_rate, m.pass_rate_ci, percent=True),
        ]
        for c in report.cohorts
        for m in c.metrics
        if m.scored or m.failed  # a tag-scoped metric that never applied to the cohort: no row
    ]
    if not rows:
        return "<p>No cohorts.</p>"
    head = ["cohort", "metric", "executions", "scored", "mean [95% CI]", "pass rate [95% CI]"]
    return table(head, rows, left=2, attrs='class="cohorts"')


def _search_text(row: Row, dataset: Dataset | None, answers: dict[str, str]) -> str:
    parts = [row.id, " ".join(row.tags), " ".join(row.errors.values())]
    sample = sample_of(dataset, row.id)
    if sample is not None:
        parts += [
            json.dumps(sample.input, ensure_ascii=False),
            json.dumps(sample.expected_output, ensure_ascii=False, default=str),
        ]
    parts.append(answers.get(row.id, ""))
    return " ".join(parts).lower()[:SEARCH_CHARS]


def _outcomes(row: Row) -> dict[str, str]:
    outcomes = {name: "passed" if s.passed else "failed" for name, s in row.scores.items()}
    outcomes.update({name: "errored" for name in row.errors})
    return outcomes


def _sample_row(row: Row, metrics: list[str], text: str) -> str:
    status = row_status(row)
    cells = [
        f'<td class="l"><button type="button" class="expand">{e(row.id)}</button></td>',
        f'<td class="l">{e(", ".join(row.tags))}</td>',
        f"<td>{row.repetition}</td>",
        f'<td class="l status-{status}">{status}</td>',
    ]
    for name in metrics:
        score = row.scores.get(name)
        if score is not None:
            cells.append(
                f'<td class="{"" if score.passed else "status-failed"}">{score.score:.3f}</td>'
            )
        elif name in row.errors:
            cells.append(f'<td class="status-errored" title="{e(row.errors[name])}">error</td>')
        else:
            cells.append("<td></td>")
    attrs = (
        f'class="row" data-id="{e(row.id)}" data-status="{status}" '
        f"data-outcomes='{e(json.dumps(_outcomes(row)))}' data-tags='{e(json.dumps(row.tags))}' "
        f'data-text="{e(text)}"'
    )
    return f"<tr {attrs}>{''.join(cells)}</tr>"


def _filters(report: Report) -> str:
    metrics = "".join(f'<option value="{e(m.name)}">{e(m.name)}</option>' for m in report.metrics)
    tags = "".join(
        f'<option value="{e(c.name)}">{e(c.label)}</option>' for c in report.cohorts if c.name
    )
    return (
        '<div class="filters"><label>outcome <select id="f-status"><option value="all">all</option>'
        '<option value="failed">failed</option><option value="errored">errored</option>'
        '<option value="passed">passed</option></select></label>'
        '<label>metric <select id="f-metric"><option '
        f'value="">any</option>{metrics}</select></label>'
        f'<label>tag <select id="f-tag"><option value="">any</option>{tags}</select></label>'
        '<input type="search" id="f-text" placeholder="search id, input, expected, answer, errors">'
        '<span id="f-count" class="count"></span></div>'
    )


def _samples(data_answers: dict[str, str], dataset: Dataset | None, view: RunView) -> str:
    report = view.report
    metrics = [m.name for m in report.metrics]
    shown = report.rows[:MAX_ROWS]
    body = "".join(_sample_row(r, metrics, _search_text(r, dataset, data_answers)) for r in shown)
    head = "".join(f"<th>{e(m)}</th>" for m in metrics)
    more = (
        f'<p class="meta">Showing the first {MAX_ROWS} of {len(report.rows)} rows.</p>'
        if len(report.rows) > MAX_ROWS
        else ""
    )
    return (
        _filters(report)
        + f'<div class="scroll"><table id="samples" data-run="{e(view.record.run_id)}"><thead><tr>'
        '<th class="l">sample</th><th class="l">tags</th><th>rep.</th><th '
        f'class="l">outcome</th>{head}'
        f"</tr></thead><tbody>{body}</tbody></table></div>{more}"
    )


def run_page(
    view: RunView, dataset: Dataset | None, note: str | None, answers: dict[str, str]
) -> str:
    report, record = view.report, view.record
    target = report.run.system_under_test
    charts = "".join(
        f'<figure><figcaption>{e(m.name)} <span class="meta">n={m.scored}</span></figcaption>'
        f"{histogram_svg(m.name, m.histogram)}</figure>"
        for m in report.metrics
    )
    body = (
        f"<h1>{e(report.dataset.name)} {gate_chip(view.gate)}</h1>"
        f'<p class="meta">run {e(record.run_id)} · {e(record.status)} · {e(target.kind)}: '
        f"{e(target.target or '')} · started {e(record.created_at)} · "
        f"{report.run.duration_seconds:.1f}s</p>"
        + _gate(view.gate)
        + "".join(f'<p class="warn">{e(w)}</p>' for w in report.warnings)
        + "<h2>Summary</h2>"
        + _cards(report)
        + "<h2>Metrics</h2>"
        + _metrics(report)
        + judge_html(report.judges)
        + f'<h2>Histograms</h2><div class="charts">{charts}</div>'
        + "<h2>Cohorts</h2>"
        + _cohorts(report)
        + "<h2>Samples</h2>"
        + (f'<p class="meta">{e(note)}</p>' if note else "")
        + '<p class="meta">Click a row to see input, expected, actual, retrieved contexts, '
        "trajectory and the judge's reasoning.</p>" + _samples(answers, dataset, view)
    )
    return page(f"run {record.run_id}", body, RUN_SCRIPT)
