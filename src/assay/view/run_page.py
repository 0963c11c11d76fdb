"""One run: verdict, summary, aggregates with intervals, histograms, cohorts, sample table."""

from __future__ import annotations

import json
from typing import Any

from assay.data.dataset import Dataset
from assay.data.outputs import Output
from assay.report.failing import actual_text
from assay.report.html_parts import histogram_svg
from assay.report.judge_sections import judge_html
from assay.report.model import FailingRow, Report, Row
from assay.report.reasons import failing_reason
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
        ("failed", str(s.failed_rows)),
        ("errored", str(s.errored_rows)),
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
            str(m.errored),
            with_interval(m.mean, m.mean_ci),
            with_interval(m.pass_rate, m.pass_rate_ci, percent=True),
            num(m.p50),
            num(m.p95),
        ]
        for m in report.metrics
    ]
    head = [
        "metric",
        "scored",
        "failed",
        "errored",
        "mean [95% CI]",
        "pass rate [95% CI]",
        "p50",
        "p95",
    ]
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
        if m.scored or m.errored  # a tag-scoped metric that never applied to the cohort: no row
    ]
    if not rows:
        return "<p>No cohorts.</p>"
    head = ["cohort", "metric", "executions", "scored", "mean [95% CI]", "pass rate [95% CI]"]
    return table(head, rows, left=2, attrs='class="cohorts"')


def _answer(text: str | None) -> str:
    if text is None:
        return "—"
    return '<em class="meta">(empty answer)</em>' if not text.strip() else e(text[:120])


def _actual(answers: dict[str, Output], row: FailingRow) -> str | None:
    """The answer the row's metric scored, as the report's failing rows show it."""
    output = answers.get(row.sample_id)
    return None if output is None else actual_text(output, row.metric)


FAILING_SHOWN = 50  # failing rows listed under the verdict (the sample table has every row)


def _reason(report: Report, row: FailingRow, dataset: Dataset | None, answer: Output | None) -> str:
    """The row's reason, rebuilt with the dataset's expected text and the stored answer when the
    viewer has them (a report read back from the store keeps no texts)."""
    sample = sample_of(dataset, row.sample_id)
    if row.status != "failed" or row.score is None or row.threshold is None or answer is None:
        return row.reason
    found = next(
        (r for r in report.rows if r.id == row.sample_id and r.repetition == row.repetition), None
    )
    score = None if found is None else found.scores.get(row.metric)
    if score is None or sample is None:
        return row.reason
    expected = sample.expected_output
    return failing_reason(row.metric, row.score, row.threshold, score.details, expected, answer)


def _failing(report: Report, dataset: Dataset | None, answers: dict[str, Output]) -> str:
    """The failing rows under the verdict, each with its metric's reason."""
    rows = report.failing_rows
    if not rows:
        return ""
    cells = [
        [
            e(r.sample_id) + (f" [rep {r.repetition}]" if report.run.repetitions > 1 else ""),
            e(r.metric),
            f'<span class="status-{r.status}">{r.status}</span>',
            "—" if r.score is None else f"{r.score:.3f}",
            e(_reason(report, r, dataset, answers.get(r.sample_id))),
            _answer(r.actual if r.actual is not None else _actual(answers, r)),
        ]
        for r in rows[:FAILING_SHOWN]
    ]
    more = len(rows) - FAILING_SHOWN + report.failing_rows_omitted
    tail = f'<p class="meta">… and {more} more: filter the samples below.</p>' if more > 0 else ""
    head = ["sample", "metric", "status", "score", "why", "answer"]
    title = f"<h2>Failing rows ({report.summary.failed_rows} failed, "
    title += f"{report.summary.errored_rows} errored executions)</h2>"
    return title + table(head, cells, left=6, attrs='class="failing"') + tail


def _search_text(row: Row, dataset: Dataset | None, answers: dict[str, Output]) -> str:
    parts = [row.id, " ".join(row.tags), " ".join(row.errors.values())]
    sample = sample_of(dataset, row.id)
    if sample is not None:
        parts += [
            json.dumps(sample.input, ensure_ascii=False),
            json.dumps(sample.expected_output, ensure_ascii=False, default=str),
        ]
    answer = answers.get(row.id)
    parts.append("" if answer is None else answer.text)
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


def _samples(data_answers: dict[str, Output], dataset: Dataset | None, view: RunView) -> str:
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
    view: RunView, dataset: Dataset | None, note: str | None, answers: dict[str, Output]
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
        + _failing(report, dataset, answers)
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
