"""The front page: every dataset's runs over time, a trend chart per metric, gate verdicts."""

from __future__ import annotations

from collections.abc import Sequence

from assay.view.data import RunView
from assay.view.layout import compare_link, e, gate_chip, num, page, pct, run_link, table

WIDTH, HEIGHT, PAD = 340, 150, 28


def _x(index: int, count: int) -> float:
    span = WIDTH - 2 * PAD
    return PAD + (span / 2 if count == 1 else span * index / (count - 1))


def _y(value: float) -> float:
    return HEIGHT - PAD - value * (HEIGHT - 2 * PAD)


def trend_svg(metric: str, runs: Sequence[RunView]) -> str:
    """Mean per run (oldest left) with its 95% interval; points coloured by the gate verdict."""
    points, marks = [], []
    for i, view in enumerate(runs):
        aggregate = next((m for m in view.report.metrics if m.name == metric), None)
        if aggregate is None or aggregate.mean is None:
            continue
        x, y = _x(i, len(runs)), _y(aggregate.mean)
        points.append(f"{x:.1f},{y:.1f}")
        if aggregate.mean_ci is not None:
            low, high = _y(aggregate.mean_ci.low), _y(aggregate.mean_ci.high)
            marks.append(
                f'<line class="ci" x1="{x:.1f}" x2="{x:.1f}" y1="{low:.1f}" y2="{high:.1f}"/>'
            )
        verdict = "none" if view.gate is None else "pass" if view.gate.get("passed") else "fail"
        title = f"{view.record.run_id}: mean {num(aggregate.mean)}"
        marks.append(
            f'<circle class="{verdict}" cx="{x:.1f}" cy="{y:.1f}" '
            f'r="4"><title>{e(title)}</title></circle>'
        )
    axis = "".join(
        f'<text x="4" y="{_y(v) + 3:.1f}">{v:.1f}</text>'
        f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{_y(v):.1f}" y2="{_y(v):.1f}" '
        'stroke="currentColor" opacity=".12"/>'
        for v in (0.0, 0.5, 1.0)
    )
    line = f'<polyline points="{" ".join(points)}"/>' if len(points) > 1 else ""
    return (
        f'<figure><figcaption>{e(metric)}</figcaption><svg class="trend" data-metric="{e(metric)}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{e(metric)} mean per run">'
        f"{axis}{line}{''.join(marks)}</svg></figure>"
    )


def _system(view: RunView) -> str:
    """The system under test; named first when the run was one of several systems."""
    target = view.report.run.system_under_test
    name = view.record.config.get("system_name")
    text = f"{target.kind}: {target.target or ''}"
    return e(f"{name} · {text}" if isinstance(name, str) else text)


def _runs_table(runs: Sequence[RunView]) -> str:
    rows = []
    for i, view in enumerate(reversed(runs)):
        record, summary = view.record, view.report.summary
        previous = runs[len(runs) - 2 - i] if i < len(runs) - 1 else None
        rows.append(
            [
                run_link(record.run_id),
                e(record.created_at[:19].replace("T", " ")),
                _system(view),
                e(record.status),
                str(summary.total_executions),
                pct(summary.pass_rate),
                num(summary.macro_f1),
                gate_chip(view.gate),
                compare_link(previous.record.run_id, record.run_id, "vs previous")
                if previous
                else "",
            ]
        )
    head = [
        "run",
        "started (UTC)",
        "system",
        "status",
        "executions",
        "pass rate",
        "macro-F1",
        "gate",
        "",
    ]
    return table(head, rows, left=4, attrs='class="runs"')


def _options(runs: Sequence[RunView], chosen: str) -> str:
    return "".join(
        f'<option value="{e(v.record.run_id)}"{" selected" if v.record.run_id == chosen else ""}>'
        f"{e(v.record.run_id)}</option>"
        for v in reversed(runs)
    )


def _compare_form(runs: Sequence[RunView]) -> str:
    """Two run pickers; the newest run against the one before it by default."""
    reference, current = runs[-2].record.run_id, runs[-1].record.run_id
    return (
        '<form class="filters" action="/compare" method="get">compare '
        f'<select name="a" aria-label="reference run">{_options(runs, reference)}</select> '
        f'(reference) with <select name="b" aria-label="current run">{_options(runs, current)}'
        '</select> <button type="submit">compare</button></form>'
    )


def dataset_section(name: str, runs: Sequence[RunView]) -> str:
    metrics = sorted({m.name for view in runs for m in view.report.metrics})
    charts = "".join(trend_svg(metric, runs) for metric in metrics)
    return (
        f'<section class="dataset" data-dataset="{e(name)}"><h2>{e(name)}</h2>'
        f'<p class="meta">{len(runs)} runs, oldest on the left of each chart; '
        "points: mean with its 95% interval, green = gate passed, red = gate failed, "
        "grey = no gate recorded</p>"
        f'<div class="charts">{charts}</div>{_runs_table(runs)}'
        f"{_compare_form(runs) if len(runs) > 1 else ''}</section>"
    )


def index_page(store: str, datasets: dict[str, list[RunView]], damaged: Sequence[str] = ()) -> str:
    """The runs of every dataset; ``damaged`` lists runs that could not be read, one line each."""
    notes = "".join(f'<p class="warn">{e(line)}</p>' for line in damaged)
    if not datasets and not damaged:
        body = f"<h1>Runs</h1><p>No runs in {e(store)} yet: run <code>assay run</code> first.</p>"
    else:
        body = f'<h1>Runs</h1><p class="meta">store: {e(store)}</p>{notes}' + "".join(
            dataset_section(name, runs) for name, runs in datasets.items()
        )
    return page("runs", body)
